#!/usr/bin/env bash
# Calibrate the revision gate on this kind of machine, and check it:
#
#   scripts/ab-calibration.sh [--calibrate] [--trials N] [--bench PATH]
#
#  1. (--calibrate, or when results/baselines/<machine>.floors.json is
#     missing) an A/A run of 20 + 20 processes of the CI subset: the noise
#     floors, stored with the baselines.
#  2. A/A: N trials (default 20) of the gate's own run (ab.py's defaults:
#     15 vs 15 processes), the same build on both sides. Any "slower" is a
#     false alarm.
#  3. Power, a CPU quota: N trials with side B under a cgroup quota of 90%
#     of the cores (scripts/cpu-quota.sh 0.9): the multi-threaded rows run
#     ~10% slower, the single-threaded ones not at all.
#  4. Power, threads: N trials of the cpu_omp_simd rows, OMP_NUM_THREADS=2
#     (A) against 1 (B).
# Results: results/ab-calibration/<machine>/{aa,quota,omp}/trials.{md,json}.
# Takes about 20 minutes per 10 trials here; run it on a quiet machine.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
calibrate=0 trials=20 bench="$CUDABENCH_ROOT/build/bench"
while [ $# -gt 0 ]; do
  case "$1" in
    --calibrate) calibrate=1; shift ;;
    --trials) trials="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    *) echo "ab-calibration: unknown argument '$1' (--calibrate, --trials N, --bench PATH)" >&2; exit 2 ;;
  esac
done
py="${CUDABENCH_VENV:-${CUDABENCH_CACHE:-$HOME/.cache/cudabench}/venv}/bin/python"
ab="$CUDABENCH_ROOT/scripts/ab.py"
machine="$(machine_label)"
floors="$CUDABENCH_ROOT/results/baselines/$machine.floors.json"
out="$CUDABENCH_ROOT/results/ab-calibration/$machine"
filter="$(ci_subset_filter)"
mkdir -p "$out"
if [ "$calibrate" = 1 ] || [ ! -f "$floors" ]; then
  "$py" "$ab" calibrate --bench "$bench" --processes 20 --filter "$filter" --min-time 0.05 \
    --floors-out "$floors" --out "$out/calibrate"
fi
"$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --filter "$filter" --min-time 0.05 \
  --floors "$floors" --out "$out/aa"
"$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --b-wrap "$CUDABENCH_ROOT/scripts/cpu-quota.sh 0.9" \
  --filter "$filter" --min-time 0.05 --floors "$floors" --out "$out/quota"
"$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --a-env OMP_NUM_THREADS=2 --b-env OMP_NUM_THREADS=1 \
  --filter 'VectorAdd/cpu_omp_simd/n:(1048576|4194304)/' --min-time 0.05 --floors "$floors" --out "$out/omp"
