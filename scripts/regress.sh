#!/usr/bin/env bash
# The revision gate: this commit against its parent, measured in one run,
# interleaved, with the process as the unit of sampling (scripts/ab.py).
#
#   scripts/regress.sh                  # exit 1 when a benchmark is slower beyond the bar
#   scripts/regress.sh --report-only    # the same, never failing on speed
#   scripts/regress.sh --base v1.2      # against another revision
#   scripts/regress.sh --calibrate      # measure this machine's noise floors (A/A, ~3 min)
#   scripts/regress.sh --rows REGEX --seconds 300 --fail-undecided
#                                       # other rows, another budget, and "could not tell" fails (exit 5)
#   scripts/regress.sh --help           # this
#
# B is build/ (this tree's bench, built first if needed); A is the base revision
# (default: HEAD^ when the tree is clean, HEAD when tracked files have
# changes, i.e. the work in progress against the last commit), checked out
# in a worktree, .ab/src, and built there like build/ is configured (bench
# only; incremental, and ccache makes a revision built before cheap). No
# parent (a shallow clone, the first commit): nothing to compare, exit 0. When no file that goes into bench differs
# between the two, both sides run build/bench: an A/A run, which checks the
# gate itself. The rows: those the benchmark families ask the gate to take
# (bench --rows=gate; bench/family.h).
#
# The gate is sequential (scripts/ab.py run): interleaved processes, looked
# at after 6 a side and then as they grow by a third, until each row's
# interval for the change lies beyond the bar (slower, faster) or within it
# (same), or 40 + 40 processes or 150 s are spent (undecided: said so).
# The bar is 5%, or the row's noise floor at 40 vs 40 processes measured
# for this kind of machine (results/baselines/<machine>.floors.json, made by
# --calibrate or scripts/ab-calibration.sh) when that is higher; the
# interval's level is 1 - 0.01 / the number of looks. Without floors for
# this machine the run is report-only, and says so.
#
# Writes build/regress/ (a.json, b.json, report.md for a CI job summary) and,
# for a clean tree, keeps one JSON per commit in
# $CUDABENCH_HISTORY/<machine>/ (default ~/.cache/cudabench/history), drawn
# as a page into build/regress/history/ (history.py page).
# Exit codes: ab.py's (0 no regression, 1 slower or a failed check in this
# tree's build, 2 bad input, 3 the run failed without a result, 5
# inconclusive: rows ran beside other load); 3 also when a build fails.
# Progress: the builds' steps and the gate's processes, with estimates.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
cd "$CUDABENCH_ROOT"
mode=gate base="" filter="" seconds=150 gate=()
while [ $# -gt 0 ]; do
  arg="$1"
  if [[ "$arg" == --*=* ]]; then set -- "${arg%%=*}" "${arg#*=}" "${@:2}"; arg="$1"; fi
  case "$arg" in
    -h|--help) usage_from_header; exit 0 ;;
    --report-only) mode=report; shift ;;
    --calibrate) mode=calibrate; shift ;;
    --fail-undecided) gate+=(--fail-undecided); shift ;;
    --base|--rows|--seconds)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "regress: $arg needs a value" >&2; exit 2; }
      case "$arg" in --base) base="$2" ;; --rows) filter="$2" ;; --seconds) seconds="$2"; gate+=(--seconds "$2") ;; esac
      shift 2 ;;
    *) echo "regress: unknown argument '$1' (--report-only, --base REV, --rows REGEX, --seconds S, --fail-undecided, --calibrate, --help)" >&2; exit 2 ;;
  esac
done
py="$(project_python)"
machine="$(machine_label)" || exit $?
floors="results/baselines/$machine.floors.json"
out=build/regress
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || {
  echo "regress: cannot write $CUDABENCH_ROOT/$out (a read-only checkout?): the gate builds and keeps its runs there; run it in a clone you can write" >&2
  exit 2; }
# One run per checkout: a second would wipe the first's processes and
# configure .ab/src beside it. flock's lock ends with the processes that
# hold it, so a run that was stopped leaves none behind.
exec 9<>"$out/.lock"
if ! flock -n 9; then
  echo "regress: another run holds $out in this checkout ($(head -c 200 "$out/.lock")): wait for it, or stop it" >&2
  exit 2
fi
echo "pid $$, started $(date '+%F %T')" >"$out/.lock"
# A signal stops every child's whole group (ab.py and its bench runs) at once.
stop_jobs_on_signal
# B, this tree: built (a no-op when it is up to date), so a stale binary is
# never measured and filed under HEAD. A build that breaks is exit 3.
bash scripts/setup.sh  # in the foreground: sudo may ask for a password
rc=0
CUDABENCH_BUILD_TARGET=bench run_job configure_and_build build > >(build_progress "regress: building this tree") || rc=$?
wait $! 2>/dev/null || true  # the progress lines are out before the next
[ "$rc" = 0 ] || { echo "regress: building this tree failed" >&2; exit 3; }
[ -n "$filter" ] || filter="$(family_rows gate)" || exit 3

if [ "$mode" = calibrate ]; then
  rc=0
  run_job "$py" scripts/ab.py calibrate --bench build/bench --processes 20 --filter "$filter" --min-time 0.05 \
    --floors-out "$floors" --out "$out/calibrate" || rc=$?
  exit "$rc"
fi
if [ "$mode" = gate ] && [ ! -f "$floors" ]; then
  echo "regress: no noise floors for '$machine' ($floors): report only; calibrate with scripts/regress.sh --calibrate" >&2
  mode=report
fi

# ---- the base revision ----
# Whatever goes into the bench executable.
inputs=(CMakeLists.txt CMakePresets.json cmake common kernels data env doctor models bench)
clean=1
git diff --quiet HEAD -- . 2>/dev/null || clean=0
picked=0
if [ -z "$base" ]; then
  picked=1
  if [ "$clean" = 1 ]; then base="HEAD^"; else base="HEAD"; fi
fi
if ! base_sha="$(git rev-parse --verify -q "$base^{commit}" 2>/dev/null)"; then
  if [ "$picked" = 1 ]; then
    echo "regress: no parent revision here (a shallow clone, or the first commit): nothing to compare with; skipped" >&2
    exit 0
  fi
  echo "regress: --base '$base': no such revision here" >&2
  exit 2
fi
this="$(git rev-parse HEAD | cut -c1-7)"; [ "$clean" = 1 ] || this="$this+changes"
if git diff --quiet "$base_sha" -- "${inputs[@]}"; then
  echo "regress: nothing that goes into bench differs from ${base_sha:0:7}: an A/A run of build/bench" >&2
  a_bench=build/bench
else
  # One worktree, moved from revision to revision, so its build is incremental.
  # (Checked to be a worktree of its own: inside this clone, a plain folder
  # would make git act on this tree.)
  wt=.ab/src
  if [ ! -f "$wt/.git" ] || [ "$(git -C "$wt" rev-parse --show-toplevel 2>/dev/null)" != "$(pwd -P)/$wt" ]; then
    rm -rf "$wt"
    git worktree prune
    git worktree add --detach -q "$wt" "$base_sha"
  fi
  git -C "$wt" checkout -q --force --detach "$base_sha"
  # The base is configured like this tree's build (architectures, LibTorch,
  # CUDA on or off), so the two differ in their code only.
  same=()
  for v in CMAKE_CUDA_ARCHITECTURES CMAKE_CUDA_COMPILER Torch_DIR CUDABENCH_ENABLE_CUDA CUDABENCH_ENABLE_TORCH \
           CUDABENCH_VENV_DIR CUDABENCH_CACHE_DIR; do
    val="$(sed -n "s/^$v:[A-Z]*=//p" build/CMakeCache.txt | head -n1)"
    case "$val" in ""|*-NOTFOUND) ;; *) same+=("-D$v=$val") ;; esac
  done
  echo "regress: building ${base_sha:0:7} in $wt/build (bench only)" >&2
  rc=0
  CUDABENCH_BUILD_TARGET=bench run_job configure_and_build_source "$CUDABENCH_ROOT/$wt" "$wt/build" \
    -DCUDABENCH_BUILD_TESTS=OFF -DCUDABENCH_DEPS_DIR="$CUDABENCH_ROOT/.deps" "${same[@]}" \
    > >(build_progress "regress: building ${base_sha:0:7}") || rc=$?
  wait $! 2>/dev/null || true
  [ "$rc" = 0 ] || { echo "regress: building ${base_sha:0:7} failed (see: cmake --build $wt/build --target bench)" >&2; exit 3; }
  a_bench="$wt/build/bench"
fi

labels="$(ab_labels "${base_sha:0:7}" "$this")"
[ "${base_sha:0:7}" != "$this" ] ||
  echo "regress: the base, $base, is this commit: an A/A run of ${base_sha:0:7}, its sides labelled (A) and (B)" >&2
args=(run --a "$a_bench" --b build/bench --labels "$labels" --filter "$filter" --min-time 0.05
      --alpha 0.01 --out "$out" "${gate[@]}")
[ -f "$floors" ] && args+=(--floors "$floors")
[ "$mode" = report ] && args+=(--report-only)
history="${CUDABENCH_HISTORY:-$(cache_dir)/history}/$machine"
[ "$clean" = 1 ] && args+=(--history "$history" --rev-a "$base_sha" --rev-b "$(git rev-parse HEAD)")
echo "regress: ${base_sha:0:7} (A) against $this (B) on $machine: interleaved processes until each row is decided (at most 40 + 40, $seconds s)" >&2
rc=0
run_job "$py" scripts/ab.py "${args[@]}" || rc=$?
if [ "$clean" = 1 ] && [ -d "$history" ]; then
  run_job "$py" scripts/history.py page "$(dirname "$history")" --out "$out/history" >/dev/null \
    || echo "regress: the history page failed (see scripts/history.py page $(dirname "$history"))" >&2
fi
exit "$rc"
