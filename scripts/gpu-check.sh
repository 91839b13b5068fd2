#!/usr/bin/env bash
# The GPU check: one command for a GPU machine lent for minutes, with no
# package registry (its own CMake, ninja, nvcc and a python3 with a CUDA
# torch are enough). One call must return every number it can, so:
#
#   - the steps run in order of value (STEPS below), each under `timeout`
#     for at most its cap and the time left, and a step whose estimate no
#     longer fits the budget is skipped and says so;
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
# timed out; 4 a step was skipped. The worst of the steps wins (1, 3, 4, 0).
set -uo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"

# name      estimate  cap  needs a GPU     (seconds; estimates on an H200)
STEPS=(
  "preflight        5   60  no"
  "build          200  320  no"
  "env             10   60  gpu"
  "bench           70  150  gpu"
  "train           25   90  gpu"
  "mnist           35   90  gpu"
  "flush-ab        20   60  gpu"
  "ddp             25   90  gpu"
  "tests           25  120  no"
  "sanitize        45  120  gpu"
)

usage() { sed -n '/^# Options:/,/^# CUDABENCH_FORCE/p' "$0" | sed 's/^# \{0,1\}//' >&2; }
bad_usage() { echo "gpu-check: $1" >&2; exit 2; }

# A folder named on the command line, as an absolute path (the run works
# from the repository's root).
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
export GC_DRY_RUN=0 GC_BUILD=build-gpu
res="" dest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) GC_DRY_RUN=1 ;;
    --results|--build-dir)
      [ -n "${2:-}" ] || bad_usage "$1: expected a folder"
      if [ "$1" = --results ]; then res="$(absolute "$2")"; else GC_BUILD="$(absolute "$2")"; fi
      shift ;;
    -h|--help) usage; exit 0 ;;
    -*) bad_usage "$1: unknown option (see --help)" ;;
    *) [ -z "$dest" ] || bad_usage "$1: one output folder only (already $dest)"; dest="$(absolute "$1")" ;;
  esac
  shift
done
cd "$CUDABENCH_ROOT"
budget="${CUDABENCH_GPU_CHECK_BUDGET:-540}"
[[ "$budget" =~ ^[0-9]+$ ]] || bad_usage "CUDABENCH_GPU_CHECK_BUDGET=$budget: expected whole seconds"
if [ -z "$res" ]; then
  machine="$(machine_label)" || exit 2
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
# Start clean: last run's files must not pass for this run's.
if [ -n "$(ls -A "$res" 2>/dev/null)" ]; then rm -rf "$res.previous" && mv "$res" "$res.previous"; fi
mkdir -p "$res/logs" "$dest" || bad_usage "$dest: cannot make it"
rm -f "$dest/summary.txt" "$dest/gpu-check.tar.gz"
export GC_RES="$res" GC_QUICK="${CUDABENCH_GPU_CHECK_QUICK:-0}" PYTHONUNBUFFERED=1
start=$(date +%s)
status=0

elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "gpu-check [$(elapsed) s]: $*" >&2; }
# The run's status: the worst so far (1 wrong, 3 broke, 4 skipped, 0 ok).
worsen() {
  local rank=(0 4 3 1) i j
  for i in 0 1 2 3; do [ "${rank[$i]}" = "$status" ] && break; done
  for j in 0 1 2 3; do [ "${rank[$j]}" = "$1" ] && break; done
  [ "$j" -le "$i" ] || status="$1"
}
# steps.txt: name, result, seconds, detail; one line per step.
record() {
  printf '%-10s %-9s %4d s  %s\n' "$1" "$2" "$3" "${4:-}" >> "$GC_RES/steps.txt"
  log "$1: $2${4:+ ($4)}"
}
# The two files in $dest, each written whole.
snapshot() {
  python3 scripts/gpu_summary.py "$GC_RES" > "$dest/summary.txt.tmp" 2> "$GC_RES/logs/summary.err" \
    || echo "(summary failed: see logs/summary.err)" >> "$dest/summary.txt.tmp"
  mv -f "$dest/summary.txt.tmp" "$dest/summary.txt"
  # Never the tarball or the summary themselves: the output folder may be
  # the results folder, so the archive is made beside it, then moved in.
  local tmp="$GC_RES.tar.gz.tmp" rc=0
  tar czf "$tmp" --exclude='gpu-check.tar.gz*' --exclude='summary.txt*' \
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

# run_step NAME ESTIMATE CAP NEEDS: the step in its own process group,
# under timeout; its output in logs/NAME.log.
run_step() {
  local name="$1" est="$2" cap="$3" needs="$4" t0 left rc=0
  t0=$(elapsed); left=$(( budget - t0 ))
  if [ "$needs" = gpu ] && [ "$GC_DRY_RUN" = 1 ]; then
    record "$name" skipped 0 "dry run: no GPU"; worsen 4; return
  fi
  if [ "$est" -gt "$left" ]; then
    record "$name" skipped 0 "needs ~${est} s, ${left} s of the ${budget} s budget left"; worsen 4; return
  fi
  [ "$cap" -le "$left" ] || cap="$left"
  current="$name"
  # -k 15: longer than the 5 s ddp_scaling.py gives its ranks after TERM.
  run_job timeout -k 15 "$cap" bash scripts/gpu-check-steps.sh "$name" > "$GC_RES/logs/$name.log" 2>&1 || rc=$?
  current=""
  local took=$(( $(elapsed) - t0 ))
  case "$rc" in
    0) record "$name" ok "$took" ;;
    1) record "$name" WRONG "$took" "a check found a wrong result"; worsen 1 ;;
    124|137) record "$name" timed-out "$took" "stopped at its ${cap} s limit"; worsen 3 ;;
    *) record "$name" failed "$took" "exit $rc"; worsen 3 ;;
  esac
  # What went wrong, here too: the missing items, else the log's end.
  [ "$rc" = 0 ] || { grep '^MISSING' "$GC_RES/logs/$name.log" || tail -n 6 "$GC_RES/logs/$name.log"; } | sed 's/^/    | /' >&2
}

log "results in $GC_RES, budget ${budget} s$([ "$GC_DRY_RUN" = 1 ] && echo ', dry run: GPU steps skipped')"
stopped=""
for row in "${STEPS[@]}"; do
  read -r name est cap needs <<< "$row"
  if [ -n "$stopped" ]; then
    record "$name" skipped 0 "not run: $stopped"; worsen 4; continue
  fi
  run_step "$name" "$est" "$cap" "$needs"
  # Nothing after a failed preflight or build can mean anything.
  case "$name" in
    preflight|build) grep -q "^$name  *ok " "$GC_RES/steps.txt" || stopped="$name did not pass" ;;
  esac
  snapshot
done
log "done in $(elapsed) s, exit $status"
cat "$dest/summary.txt"
exit "$status"
