#!/usr/bin/env bash
# Regression tracking: run a fixed subset with repetitions and compare it
# against the committed baseline for this kind of machine,
# results/baselines/<machine>.json (compare.py: medians, Mann-Whitney U).
#
#   scripts/regress.sh                    # exit 1 when something is slower, with significance
#   scripts/regress.sh --report-only      # print the verdicts, never fail on speed (what CI does:
#                                         # a shared 2-core VM is too noisy for a hard gate)
#   scripts/regress.sh --update-baseline  # run, and store the result as the new baseline
#
# Writes build/regress/latest.json and build/regress/report.md (Markdown for
# a CI job summary). CUDABENCH_REGRESS_REPS sets repetitions (default 5),
# CUDABENCH_MACHINE the baseline's name. Exit 2: no baseline for this machine
# (except with --report-only) or unreadable results.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
mode=gate
case "${1:-}" in
  "") ;;
  --report-only) mode=report ;;
  --update-baseline) mode=update ;;
  *) echo "regress: unknown argument '$1' (--report-only, --update-baseline)" >&2; exit 2 ;;
esac
build="$CUDABENCH_ROOT/build"
py="${CUDABENCH_VENV:-${CUDABENCH_CACHE:-$HOME/.cache/cudabench}/venv}/bin/python"
[ -x "$build/bench" ] || { bash "$CUDABENCH_ROOT/scripts/setup.sh"; configure_and_build "$build" >/dev/null; }

machine="$(machine_label)"
baseline="$CUDABENCH_ROOT/results/baselines/$machine.json"
out="$build/regress"
mkdir -p "$out"
# The fixed subset: CPU always; GPU where one is usable.
filter='^(VectorAdd/cpu_(scalar|omp_simd)/n:(65536|1048576|10000000)/|MnistTrain/cpu/batch:64/'
if "$build/bench" --env --require-gpu >/dev/null 2>&1; then
  filter="$filter|VectorAdd/(cuda_v[1-4]|cublas_geam)/n:(10000000|134217728)/|Transfer/h2d_pinned/bytes:40000000/|MnistTrain/cuda(_graph)?/batch:64/"
fi
filter="$filter)"
echo "regress: running the fixed subset ($machine, ${CUDABENCH_REGRESS_REPS:-5} repetitions)" >&2
"$build/bench" --benchmark_filter="$filter" --benchmark_repetitions="${CUDABENCH_REGRESS_REPS:-5}" \
  --benchmark_min_time="${CUDABENCH_MIN_TIME:-0.05}" --benchmark_report_aggregates_only=false \
  --benchmark_out="$out/latest.json" --benchmark_out_format=json --benchmark_format=json >/dev/null

if [ "$mode" = update ]; then
  mkdir -p "$(dirname "$baseline")"
  cp "$out/latest.json" "$baseline.tmp.$$" && mv "$baseline.tmp.$$" "$baseline"
  echo "regress: baseline stored: ${baseline#$CUDABENCH_ROOT/}" >&2
  exit 0
fi
if [ ! -f "$baseline" ]; then
  echo "regress: no baseline for '$machine' (results/baselines/: $(ls "$CUDABENCH_ROOT/results/baselines" 2>/dev/null | tr '\n' ' '))" >&2
  echo "regress: make one with scripts/regress.sh --update-baseline" >&2
  [ "$mode" = report ] && exit 0 || exit 2
fi
args=("$baseline" "$out/latest.json" --labels "baseline,this run" --markdown "$out/report.md")
[ "$mode" = report ] && args+=(--report-only)
"$py" "$CUDABENCH_ROOT/scripts/compare.py" "${args[@]}"
