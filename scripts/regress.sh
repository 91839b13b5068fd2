#!/usr/bin/env bash
# The revision gate: this commit against its parent, measured in one run,
# interleaved, with the process as the unit of sampling (scripts/ab.py).
#
#   scripts/regress.sh                  # exit 1 when a benchmark is slower beyond the bar
#   scripts/regress.sh --report-only    # the same, never failing on speed
#   scripts/regress.sh --base v1.2      # against another revision
#   scripts/regress.sh --calibrate      # measure this machine's noise floors (A/A, ~3 min)
#
# B is build/ (this tree, built first if needed); A is the base revision
# (default: HEAD^ when the tree is clean, HEAD when tracked files have
# changes, i.e. the work in progress against the last commit), checked out
# in a worktree under .ab/ and built there (bench only; ccache makes a
# revision built before cheap). When no file that goes into bench differs
# between the two, both sides run build/bench: an A/A run, which checks the
# gate itself. The CI subset (lib.sh: ci_subset_filter), 15 + 15 processes.
#
# The bar: a change counts when it is beyond 5% and beyond the noise floor
# measured for this kind of machine (results/baselines/<machine>.floors.json,
# made by --calibrate or scripts/ab-calibration.sh), with Mann-Whitney
# p < 0.05 over the process medians. Without floors for this machine the
# run is report-only, and says so.
#
# Writes build/regress/ (a.json, b.json, report.md for a CI job summary) and,
# for a clean tree, keeps one JSON per commit in
# $CUDABENCH_HISTORY/<machine>/ (default ~/.cache/cudabench/history), drawn
# as trends into build/regress/history/ (report.py --history).
# Exit codes: ab.py's (0 no regression, 1 slower or a wrong result, 2 bad
# input, 3 the run failed without a result).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
cd "$CUDABENCH_ROOT"
mode=gate base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --report-only) mode=report; shift ;;
    --calibrate) mode=calibrate; shift ;;
    --base) [ $# -ge 2 ] || { echo "regress: --base needs a revision" >&2; exit 2; }; base="$2"; shift 2 ;;
    --base=*) base="${1#*=}"; shift ;;
    *) echo "regress: unknown argument '$1' (--report-only, --base REV, --calibrate)" >&2; exit 2 ;;
  esac
done
py="${CUDABENCH_VENV:-${CUDABENCH_CACHE:-$HOME/.cache/cudabench}/venv}/bin/python"
[ -x build/bench ] || { bash scripts/setup.sh; configure_and_build build >/dev/null; }
machine="$(machine_label)"
floors="results/baselines/$machine.floors.json"
filter="$(ci_subset_filter)"
out=build/regress
mkdir -p "$out"

if [ "$mode" = calibrate ]; then
  exec "$py" scripts/ab.py calibrate --bench build/bench --processes 20 --filter "$filter" --min-time 0.05 \
    --floors-out "$floors" --out "$out/calibrate"
fi

# ---- the two sides ----
# Whatever goes into the bench executable.
inputs=(CMakeLists.txt CMakePresets.json cmake bench kernels env models data)
clean=1
git diff --quiet HEAD -- . 2>/dev/null || clean=0
if [ -z "$base" ]; then
  if [ "$clean" = 1 ]; then base="HEAD^"; else base="HEAD"; fi
fi
if ! base_sha="$(git rev-parse --verify -q "$base^{commit}")"; then
  echo "regress: no revision '$base' here (a shallow clone? fetch more history, or give --base)" >&2
  [ "$mode" = report ] && exit 0 || exit 2
fi
this="$(git rev-parse --short HEAD)"; [ "$clean" = 1 ] || this="$this+changes"
if git diff --quiet "$base_sha" -- "${inputs[@]}"; then
  echo "regress: nothing that goes into bench differs from ${base_sha:0:7}: an A/A run of build/bench" >&2
  a_bench=build/bench
else
  wt=".ab/src-${base_sha:0:12}"
  if [ ! -d "$wt" ]; then
    git worktree prune
    git worktree add --detach -q "$wt" "$base_sha"
  fi
  echo "regress: building ${base_sha:0:7} in $wt/build (bench only)" >&2
  CUDABENCH_BUILD_TARGET=bench configure_and_build_source "$CUDABENCH_ROOT/$wt" "$wt/build" \
    -DCUDABENCH_BUILD_TESTS=OFF >/dev/null
  a_bench="$wt/build/bench"
fi

args=(run --a "$a_bench" --b build/bench --labels "${base_sha:0:7},$this" --filter "$filter" --min-time 0.05
      --out "$out")
if [ -f "$floors" ]; then
  args+=(--floors "$floors")
else
  echo "regress: no noise floors for '$machine' ($floors): report only; calibrate with scripts/regress.sh --calibrate" >&2
  mode=report
fi
[ "$mode" = report ] && args+=(--report-only)
history="${CUDABENCH_HISTORY:-${CUDABENCH_CACHE:-$HOME/.cache/cudabench}/history}/$machine"
[ "$clean" = 1 ] && args+=(--history "$history" --rev-a "$base_sha" --rev-b "$(git rev-parse HEAD)")
echo "regress: ${base_sha:0:7} (A) against $this (B) on $machine, 15 + 15 processes, interleaved" >&2
rc=0
"$py" scripts/ab.py "${args[@]}" || rc=$?
if [ "$clean" = 1 ] && [ -d "$history" ]; then
  "$py" scripts/report.py --history "$history" --out "$out/history" --title "cudabench history on $machine" \
    >/dev/null || echo "regress: the history plot failed (see report.py --history $history)" >&2
fi
exit "$rc"
