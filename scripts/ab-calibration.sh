#!/usr/bin/env bash
# Calibrate the revision gate on this kind of machine, and check it:
#
#   scripts/ab-calibration.sh [-h|--help] [--calibrate] [--trials N] [--bench PATH] [--only aa|quota|omp ...]
#
#  1. (--calibrate, or when results/baselines/<machine>.floors.json is
#     missing) scripts/regress.sh --calibrate: an A/A run of 20 + 20
#     processes of the CI subset, the noise floors, stored with the baselines
#     (of build/bench; --bench is for the trials).
#  2. A/A: N trials (default 20) of the gate's own run (ab.py's defaults:
#     15 vs 15 processes), the same build on both sides. Any "slower" is a
#     false alarm.
#  3. Power, a CPU quota: N trials with side B under a cgroup quota of 85%
#     of the cores (scripts/cpu-quota.sh 0.85). The two-thread rows keep
#     about 1.9 of the 2 cores busy, so 90% of the cores (1.8) took only
#     ~4% of their time (below the 5% threshold: "same" is right there);
#     85% (1.7 cores) is 90% of what they use: a ~10% slowdown. The
#     single-threaded rows are barely touched.
#  4. Power, threads: N trials of the cpu_omp_simd rows, OMP_NUM_THREADS=2
#     (A) against 1 (B).
# Results: results/ab-calibration/<machine>/{aa,quota,omp}/trials.{md,json}.
# Takes about 20 minutes per 10 trials here; run it on a quiet machine.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
calibrate=0 trials=20 bench="$CUDABENCH_ROOT/build/bench"
usage="(--calibrate, --trials N, --bench PATH, --only aa|quota|omp)"
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage_from_header; exit 0 ;;
    --calibrate) calibrate=1; shift ;;
    --trials|--bench|--only)
      [ $# -ge 2 ] || { echo "ab-calibration: $1 needs a value $usage" >&2; exit 2; }
      case "$1" in
        --trials) trials="$2" ;;
        --bench) bench="$2" ;;
        --only) case "$2" in aa|quota|omp) only="$only $2" ;;
                  *) echo "ab-calibration: --only '$2': one of aa, quota, omp" >&2; exit 2 ;; esac ;;
      esac
      shift 2 ;;
    *) echo "ab-calibration: unknown argument '$1' $usage" >&2; exit 2 ;;
  esac
done
py="$(project_python)"
ab="$CUDABENCH_ROOT/scripts/ab.py"
machine="$(machine_label)" || exit 2
floors="$CUDABENCH_ROOT/results/baselines/$machine.floors.json"
out="$CUDABENCH_ROOT/results/ab-calibration/$machine"
filter="$(ci_subset_filter)"
mkdir -p "$out"
stop_jobs_on_signal  # a signal stops the running ab.py and its bench runs at once
if [ "$calibrate" = 1 ] || [ ! -f "$floors" ]; then
  run_job bash "$CUDABENCH_ROOT/scripts/regress.sh" --calibrate
fi
step() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
if step aa; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --filter "$filter" --min-time 0.05 \
    --floors "$floors" --out "$out/aa"
fi
if step quota; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --b-wrap "$CUDABENCH_ROOT/scripts/cpu-quota.sh 0.85" \
    --filter "$filter" --min-time 0.05 --floors "$floors" --out "$out/quota"
fi
if step omp; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --a-env OMP_NUM_THREADS=2 --b-env OMP_NUM_THREADS=1 \
    --filter 'VectorAdd/cpu_omp_simd/n:(1048576|4194304)/' --min-time 0.05 --floors "$floors" --out "$out/omp"
fi
