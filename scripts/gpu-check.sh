#!/usr/bin/env bash
# The GPU check: one command for a GPU machine lent for minutes, with no
# package registry (its own CMake, ninja, nvcc and a python3 with a CUDA
# torch are enough). One call must return every number it can, so:
#
#   - the steps run in order of value (STEPS below), each under `timeout`
#     for at most its cap and the time left; a step whose estimate with
#     its margin no longer fits the time left, or whose tools are absent,
#     is skipped and says why (never started to be cut off), and the rest
#     go on;
#   - the preflight probes the driver (with a deadline) before anything is
#     built, and stops the run naming the cause in the doctor's words;
#   - after every step the output folder gets summary.txt and
#     gpu-check.tar.gz of everything so far, each written whole;
#   - the run starts clean: old results are moved to <results>.previous.
#
# Here, first:  scripts/setup.sh && scripts/vendor-deps.sh   (.deps/, REVISION)
# There:        bash scripts/gpu-check.sh [OUT_DIR]          (carry .deps along)
# Rehearsal:    bash scripts/gpu-check.sh --dry-run --build-dir build [OUT_DIR]
#               the same machinery on a machine without a GPU: the GPU steps
#               are reported skipped (exit 4 when all else is well)
#
# Options: --dry-run; --results DIR (default results/gpu-check/<machine>);
# --build-dir DIR (default build-gpu; a dry run reuses an existing build's
# settings). OUT_DIR defaults to $OUT, else the results folder.
# Environment: CUDABENCH_GPU_CHECK_BUDGET (seconds, default 540),
# CUDABENCH_GPU_CHECK_QUICK=1 (fewer sizes, 2 epochs), _ARCHS, _CMAKE_ARGS,
# CUDABENCH_FORCE_VENDORED=1 (docs/building.md#settings).
#
# Exit: 0 every step ran and passed; 1 a check, test or sanitizer found a
# wrong result; 2 bad usage; 3 the preflight, the build or a step failed or
# timed out; 5 a measuring step's rows ran beside other load (checked, but
# not a measurement); 4 a step was skipped. The worst of the steps wins
# (1, 3, 5, 4, 0).
# CUDABENCH_PROBE_SECONDS (default 15) bounds each probe of the driver and
# each nvidia-smi call.
set -uo pipefail
start=$(date +%s)  # the budget counts from here: machine_label may wait on nvidia-smi
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"

# The steps in the order a first run must prove things: the build, a
# correctness pass (the GPU tests, then memcheck of one small run of each
# kernel family), the headline numbers, then the rest. A step runs only
# where what it needs is there: gpu (not in a dry run), torch (python3's
# CUDA torch, so LibTorch is built), nccl (the build has it), sanitizer
# (compute-sanitizer). Estimates are seconds measured on an H200 (the two
# runs of 2026-12-04; docs/gpu-check.md says how each was made), and sum within
# the budget with a reserve; a results folder with an earlier run's
# steps.txt gives its own times instead (plan_steps below).
# name      estimate  cap  needs
STEPS=(
  "preflight        5   90  -"
  "build           65  330  -"
  "tests           45  150  -"
  "memcheck        15  150  gpu,sanitizer"
  "sanitize        20   90  gpu,sanitizer"
  "env             10   60  gpu"
  "headline       100  200  gpu"
  "bench           80  180  gpu"
  "train           25   90  gpu,torch"
  "train-py        45  120  gpu,torch"
  "mnist           20   90  gpu,torch"
  "ddp             15   90  gpu,torch,nccl"
  "flush-ab        45   90  gpu"
)
# Kept at the end of the budget: a step's 15 s kill grace and the last snapshot.
KEPT=20

bad_usage() { echo "gpu-check: $1" >&2; exit 2; }

# A folder named on the command line, as an absolute path (the run works
# from the repository's root).
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
export GC_DRY_RUN=0 GC_BUILD=build-gpu GC_QUICK="${CUDABENCH_GPU_CHECK_QUICK:-0}"
res="" dest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) GC_DRY_RUN=1 ;;
    --results|--build-dir)
      [ -n "${2:-}" ] || bad_usage "$1: expected a folder"
      if [ "$1" = --results ]; then res="$(absolute "$2")"; else GC_BUILD="$(absolute "$2")"; fi
      shift ;;
    -h|--help) usage_from_header; exit 0 ;;
    -*) bad_usage "$1: unknown option (see --help)" ;;
    *) [ -z "$dest" ] || bad_usage "$1: one output folder only (already $dest)"; dest="$(absolute "$1")" ;;
  esac
  shift
done
cd "$CUDABENCH_ROOT"
budget="$(setting CUDABENCH_GPU_CHECK_BUDGET)" || exit 2  # common/settings.json
if [ -z "$res" ]; then
  machine="$(machine_label)" || exit $?
  res="$CUDABENCH_ROOT/results/gpu-check/$machine"
fi
dest="${dest:-${OUT:-$res}}"
for d in "$res" "$dest"; do
  [ ! -e "$d" ] || [ -d "$d" ] || bad_usage "$d: not a folder"
done
mkdir -p "$(dirname "$res")" || bad_usage "$res: cannot make its folder"
# One run per results folder; the lock ends with this process.
exec 9>"$res.lock" || bad_usage "$res.lock: cannot write it"
flock -n 9 || bad_usage "$res: another gpu-check is using it"
# Each step's estimate and cap: this folder's last run's time where the
# step passed there, its cap where it timed out there, else STEPS'; a run
# of the other kind (dry or not) does not count. One line a step: name,
# estimate, cap, needs, where the estimate came from.
plan_steps() {
  local last="$1" row name est cap needs t result from same=0
  grep -qx "# dry run $GC_DRY_RUN, quick $GC_QUICK" "$last/plan.txt" 2>/dev/null && same=1
  for row in "${STEPS[@]}"; do
    read -r name est cap needs <<< "$row"
    from=STEPS
    if [ "$same" = 1 ] && read -r _ result t _ < <(grep "^$name " "$last/steps.txt") && [[ "$t" =~ ^[0-9]{1,5}$ ]]; then
      case "$result" in
        ok) est="$t"; from="last run: $t s" ;;
        timed-out) est="$cap"; from="last run: timed out at $t s" ;;
      esac
      [ "$cap" -ge $(( est * 3 / 2 )) ] || cap=$(( est * 3 / 2 ))
    fi
    printf '%-10s %4d %4d %-20s %s\n' "$name" "$est" "$cap" "$needs" "$from"
  done
}
# The last run's times: this folder's, else (in a fresh checkout) the run of
# this machine kept in results/archive/gpu-check.
last="$res"
[ -f "$last/plan.txt" ] || [ -z "${machine:-}" ] || last="$CUDABENCH_ROOT/results/archive/gpu-check/$machine"
plan="$(plan_steps "$last")"
[ "$(grep -c . <<< "$plan")" = "${#STEPS[@]}" ] || { echo "gpu-check: cannot plan the steps from $res" >&2; exit 3; }
# Start clean: last run's files must not pass for this run's.
if [ -n "$(ls -A "$res" 2>/dev/null)" ]; then rm -rf "$res.previous" && mv "$res" "$res.previous"; fi
mkdir -p "$res/logs" "$dest" || bad_usage "$dest: cannot make it"
rm -f "$dest/summary.txt" "$dest/gpu-check.tar.gz"
printf '# dry run %s, quick %s\n# budget %s s, %s s kept for the end\n%s\n' \
  "$GC_DRY_RUN" "$GC_QUICK" "$budget" "$KEPT" "$plan" > "$res/plan.txt"
export GC_RES="$res" PYTHONUNBUFFERED=1
status=0

elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "gpu-check [$(elapsed) s]: $*" >&2; }
# The run's status: the worst so far (1 wrong, 3 broke, 5 loaded, 4 skipped, 0 ok).
worsen() {
  local rank=(0 4 5 3 1) i j
  for i in 0 1 2 3 4; do [ "${rank[$i]}" = "$status" ] && break; done
  for j in 0 1 2 3 4; do [ "${rank[$j]}" = "$1" ] && break; done
  [ "$j" -le "$i" ] || status="$1"
}
# steps.txt: name, result, seconds, detail; one line per step.
record() {
  printf '%-10s %-9s %4d s  %s\n' "$1" "$2" "$3" "${4:-}" >> "$GC_RES/steps.txt"
  log "$1: $2${4:+ ($4)}"
}
# The two files in $dest, each written whole, each within 20 s (a
# stuck disk or interpreter must not hold the run past its 600 s call).
snapshot() {
  timeout -k 5 20 python3 scripts/gpu_summary.py "$GC_RES" > "$dest/summary.txt.tmp" 2> "$GC_RES/logs/summary.err" \
    || echo "(summary failed, exit $?: see logs/summary.err; 124: its 20 s deadline)" >> "$dest/summary.txt.tmp"
  mv -f "$dest/summary.txt.tmp" "$dest/summary.txt"
  # Never the tarball or the summary themselves: the output folder may be
  # the results folder, so the archive is made beside it, then moved in.
  local tmp="$GC_RES.tar.gz.tmp" rc=0
  timeout -k 5 20 tar czf "$tmp" --exclude='gpu-check.tar.gz*' --exclude='summary.txt*' \
      -C "$(dirname "$GC_RES")" "$(basename "$GC_RES")" || rc=$?
  if [ "$rc" -le 1 ]; then mv -f "$tmp" "$dest/gpu-check.tar.gz"; else rm -f "$tmp"; fi
}
# A signal stops the running step's whole group (lib.sh), then this
# records the step as stopped and snapshots, and the run ends.
stopped_by() {
  record "${current:-?}" stopped "$(elapsed)" "by SIG$1"
  snapshot
}
stop_jobs_on_signal stopped_by

# Why a step cannot run here, from its needs ("" when it can): HAVE_<need>
# and WHY_<need> are what the preflight and the build found (have.env).
unmet() {
  local need have why
  [ -f "$GC_RES/have.env" ] && . "$GC_RES/have.env"
  for need in ${1//,/ }; do
    case "$need" in
      -|gpu) ;;
      *) have="HAVE_$need" why="WHY_$need"
         [ "${!have:-0}" = 1 ] || { echo "needs $need: ${!why:-not found}"; return; } ;;
    esac
  done
  # The GPU last: a dry run says what else a step would lack.
  case ",$1," in *,gpu,*) [ "$GC_DRY_RUN" != 1 ] || echo "dry run: no GPU" ;; esac
}

# run_step NAME ESTIMATE CAP NEEDS: the step in its own process group,
# under timeout; its output in logs/NAME.log. A step starts only when its
# estimate and a margin (25%, and 5 s) fit in the time left, so none
# is started only to be cut off at the end of the budget; one that still
# overruns (it hangs) is stopped at its cap or the time left. A step that
# exits 4 skipped itself, its last "skipped: " line says why.
run_step() {
  local name="$1" est="$2" cap="$3" why t0 left need rc=0
  t0=$(elapsed); left=$(( budget - t0 - KEPT )); need=$(( est * 5 / 4 + 5 ))
  why="$(unmet "$4")"
  if [ -z "$why" ] && [ "$need" -gt "$left" ]; then
    why="needs ~${need} s (${est} s estimated + 25% + 5 s), ${left} s of the ${budget} s budget left (${KEPT} s kept for the end)"
  fi
  if [ -n "$why" ]; then record "$name" skipped 0 "$why"; worsen 4; return; fi
  [ "$cap" -le "$left" ] || cap="$left"
  current="$name"
  # -k 15: longer than the 5 s ddp_scaling.py gives its ranks after TERM.
  run_job timeout -k 15 "$cap" "${ENDS_WITH_US[@]}" bash scripts/gpu-check-steps.sh "$name" > "$GC_RES/logs/$name.log" 2>&1 || rc=$?
  current=""
  local took=$(( $(elapsed) - t0 ))
  case "$rc" in
    0) record "$name" ok "$took" ;;
    1) record "$name" WRONG "$took" "a check found a wrong result"; worsen 1 ;;
    4) record "$name" skipped "$took" "$(sed -n 's/^skipped: //p' "$GC_RES/logs/$name.log" | tail -n1)"; worsen 4 ;;
    5) record "$name" loaded "$took" "checked, but its rows ran beside other load: not a measurement"; worsen 5 ;;
    124|137) if [ "$took" -ge "$cap" ]; then record "$name" timed-out "$took" "stopped at its ${cap} s limit"
             else record "$name" failed "$took" "killed (exit $rc) before its ${cap} s limit: out of memory?"; fi
             worsen 3 ;;
    *) record "$name" failed "$took" "exit $rc"; worsen 3 ;;
  esac
  # What went wrong, here too: the missing items, else the log's end.
  case "$rc" in 0|4) ;; *) { grep '^MISSING' "$GC_RES/logs/$name.log" || tail -n 6 "$GC_RES/logs/$name.log"; } | sed 's/^/    | /' >&2 ;; esac
}

log "results in $GC_RES, budget ${budget} s$([ "$GC_DRY_RUN" = 1 ] && echo ', dry run: GPU steps skipped')"
stopped=""
while read -r -u 3 name est cap needs _; do
  if [ -n "$stopped" ]; then
    record "$name" skipped 0 "not run: $stopped"; worsen 4
  else
    run_step "$name" "$est" "$cap" "$needs"
  fi
  # Nothing after a failed preflight or build can mean anything.
  case "$name" in
    preflight|build) grep -q "^$name  *ok " "$GC_RES/steps.txt" || stopped="${stopped:-$name did not pass}" ;;
  esac
  # Once the build has it, the driver checked for every step's processes.
  if [ "$name" = build ] && [ -z "$stopped" ]; then
    if check_driver_once "$GC_BUILD"; then log "the driver checked once for every step"
    else log "the driver check did not finish: each process checks it again"; fi
  fi
  snapshot
done 3<<< "$plan"
log "done in $(elapsed) s, exit $status"
cat "$dest/summary.txt"
exit "$status"
