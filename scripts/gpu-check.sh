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
# The steps, their estimates and caps: STEPS in cudabench/commands/gpu_check.py.
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
budget="$(setting CUDABENCH_GPU_CHECK_BUDGET)" || exit  # 2 a bad value, 3 no python3
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
# The planner and the bookkeeping (the steps, their estimates and caps, the
# budget, steps.txt, the status, the snapshots) are cudabench's gpu_check
# command. The last run's times: this folder's, else (in a fresh checkout)
# the run of this machine kept in results/archive/gpu-check. The lock (fd 9)
# stays with it.
last="$res"
[ -f "$last/plan.txt" ] || [ -z "${machine:-}" ] || last="$CUDABENCH_ROOT/results/archive/gpu-check/$machine"
command -v python3 >/dev/null || { echo "gpu-check: needs python3, which is not on PATH" >&2; exit 3; }
exec python3 scripts/gpu_check.py --started "$start" --budget "$budget" --results "$res" --dest "$dest" --last "$last"
