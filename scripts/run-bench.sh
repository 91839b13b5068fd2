#!/usr/bin/env bash
# README command 1: install what is missing, build, run the default benchmarks.
# Prints the console table and writes results/<machine>/<toolkit>/latest.json.
# Extra arguments go to bench after the defaults (so they win), e.g.
#   scripts/run-bench.sh --benchmark_filter=Transfer --benchmark_repetitions=5
# Environment: CUDABENCH_FILTER (default below), CUDABENCH_MIN_TIME (0.1 s),
# CUDABENCH_MACHINE (the results folder's machine name).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
machine="$(machine_label)" || exit 2  # checked before anything is installed
bash "$CUDABENCH_ROOT/scripts/setup.sh"
build="$CUDABENCH_ROOT/build"
# Only the two programs: the tests are scripts/test.sh's.
CUDABENCH_BUILD_TARGET=programs configure_and_build "$build" >/dev/null
out_dir="$CUDABENCH_ROOT/results/$machine/$(toolkit_label "$build")"
mkdir -p "$out_dir"
filter="${CUDABENCH_FILTER:-^(VectorAdd/|VectorAddFlow/|Copy/|Transfer/|MnistTrain/(cpu|cuda)/batch:64/|MnistEval/(cpu|cuda)/)}"
stop_jobs_on_signal  # a signal stops bench at once (it leaves no partial file)
run_job "$build/bench" --benchmark_filter="$filter" \
  --benchmark_min_time="${CUDABENCH_MIN_TIME:-0.1}" \
  --benchmark_out="$out_dir/latest.json" --benchmark_out_format=json "$@"
echo "results: $out_dir/latest.json" >&2
