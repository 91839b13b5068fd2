#!/usr/bin/env bash
# README command 1: install what is missing, build, run the default benchmarks.
# The default run takes its samples from CUDABENCH_PROCESSES bench processes
# (default 4; scripts/samples.py: one sample per process for each row, a
# process beside other load run again or flagged; a row whose median is
# still wide gets more while they can narrow it, up to 12 or 45 s), prints a table and writes
# results/<label>/<toolkit>/latest.json; then, when results/reference/ holds a
# reference for this hardware, says how this run compares with it. Exit 5
# (inconclusive) when rows had too few processes without other load: the
# run ends with one "Inconclusive: ..." line naming the busiest programs.
#   scripts/run-bench.sh [-h|--help] [--label NAME] [bench flags...]
# --label NAME names the machine (default its hardware: the GPU's model, or
# its CPU kind, docs/comparing-machines.md); extra arguments go to bench after the
# defaults (so they win), e.g. --benchmark_filter=Transfer.
# Environment: CUDABENCH_FILTER (instead of the families' default rows), CUDABENCH_MIN_TIME
# (0.02 s per row and process), CUDABENCH_PROCESSES, CUDABENCH_MACHINE (the
# same as --label).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage_from_header; exit 0 ;;
    --label) [ $# -ge 2 ] || { echo "run-bench.sh: --label needs a name" >&2; exit 2; }
             export CUDABENCH_MACHINE="$2"; shift 2 ;;
    --label=*) export CUDABENCH_MACHINE="${1#--label=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
machine="$(machine_label)" || exit $?  # checked before anything is installed
processes="$(setting CUDABENCH_PROCESSES)" || exit  # 2 a bad value, 3 no python3
bash "$CUDABENCH_ROOT/scripts/setup.sh"
build="$CUDABENCH_ROOT/build"
# Only the two programs: the tests are scripts/test.sh's. The build stays
# locked (shared) while this run uses it: a second run-bench.sh in this
# checkout waits, saying so, then builds and runs in its turn.
KEEP_BUILD_SHARED=1 CUDABENCH_BUILD_TARGET=programs configure_and_build "$build" >/dev/null
out_dir="$CUDABENCH_ROOT/results/$machine/$(toolkit_label "$build")"
mkdir -p "$out_dir"
# The rows each benchmark family asks the default run to take (bench
# --rows=default: the headline sizes, the seed's flow, the copies, the
# training step; docs/comparing-machines.md).
filter="${CUDABENCH_FILTER:-}"
[ -n "$filter" ] || filter="$(family_rows default "$build")" || exit 3
py="$(project_python)"
stop_jobs_on_signal  # a signal stops the processes at once (no partial file is left)
rc=0
run_job "$py" "$CUDABENCH_ROOT/scripts/samples.py" run --bench "$build/bench" --processes "$processes" \
  --filter "$filter" --min-time "${CUDABENCH_MIN_TIME:-0.02}" --label "$machine" --load-line top \
  --out "$out_dir/latest.json" -- "${args[@]}" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 5 ] || exit "$rc"  # 5: written, but rows ran beside other load (inconclusive)
echo "results: $out_dir/latest.json" >&2
# How this machine compares with the reference for its hardware, if one is committed.
crc=0
run_job "$py" "$CUDABENCH_ROOT/scripts/compare.py" "$out_dir/latest.json" --reference --if-any --report-only \
  --load-line end || crc=$?
[ "$crc" = 0 ] || [ "$crc" = 5 ] || exit "$crc"
exit $(( rc > crc ? rc : crc ))
