#!/usr/bin/env bash
# Calibrate the revision gate on this kind of machine, and measure it:
#
#   scripts/ab-calibration.sh [-h|--help] [--calibrate] [--trials N] [--bench PATH] [--only aa|slow|quota|omp ...]
#
#  1. (--calibrate, or when results/baselines/<machine>.floors.json is
#     missing) scripts/regress.sh --calibrate: an A/A run of 20 + 20
#     processes of the gate's rows, the noise floors, stored with the baselines
#     (of build/bench; --bench is for the trials).
#  2. aa: N trials (default 20) of the gate's own run (scripts/regress.sh's
#     settings: the sequential gate, alpha 0.01, the floors), the same build
#     on both sides. Any "slower" or "faster" is a false alarm.
#  3. slow: N trials against a real 10% slowdown: side B is bench built from
#     HEAD with scripts/slowdown-10pct.patch (every tenth CPU vector add and
#     training step does its work twice), in the worktree .ab/power. Each
#     gate row is 10% slower; "slower" is a catch.
#  4. quota (only when asked): side B under a cgroup quota of 85% of the
#     cores (scripts/cpu-quota.sh 0.85): a bursty slowdown of the
#     two-thread rows only.
#  5. omp (only when asked): the cpu_omp_simd rows, OMP_NUM_THREADS=2 (A)
#     against 1 (B).
# Results: results/ab-calibration/<machine>/<step>/trials.{md,json}, each
# with every trial's verdicts. Takes about 2 minutes a trial; run it on a
# quiet machine.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
calibrate=0 trials=20 bench="$CUDABENCH_ROOT/build/bench"
usage="(--calibrate, --trials N, --bench PATH, --only aa|slow|quota|omp)"
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
        --only) case "$2" in aa|slow|quota|omp) only="$only $2" ;;
                  *) echo "ab-calibration: --only '$2': one of aa, slow, quota, omp" >&2; exit 2 ;; esac ;;
      esac
      shift 2 ;;
    *) echo "ab-calibration: unknown argument '$1' $usage" >&2; exit 2 ;;
  esac
done
py="$(project_python)"
ab="$CUDABENCH_ROOT/scripts/ab.py"
machine="$(machine_label)" || exit $?
floors="$CUDABENCH_ROOT/results/baselines/$machine.floors.json"
out="$CUDABENCH_ROOT/results/ab-calibration/$machine"
mkdir -p "$out"
stop_jobs_on_signal  # a signal stops the running ab.py and its bench runs at once
if [ "$calibrate" = 1 ] || [ ! -f "$floors" ]; then
  run_job bash "$CUDABENCH_ROOT/scripts/regress.sh" --calibrate
fi
filter="$(family_rows gate "$(dirname "$bench")")" || exit 3  # after regress.sh built build/bench
# The default steps are aa and slow; quota and omp when named.
step() { if [ -z "$only" ]; then [ "$1" = aa ] || [ "$1" = slow ]; else [[ " $only " == *" $1 "* ]]; fi; }
gate=(--filter "$filter" --min-time 0.05 --alpha 0.01)
[ -f "$floors" ] && gate+=(--floors "$floors")
if step aa; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" "${gate[@]}" --out "$out/aa"
fi
if step slow; then
  wt=.ab/power
  cd "$CUDABENCH_ROOT"
  if [ ! -f "$wt/.git" ] || [ "$(git -C "$wt" rev-parse --show-toplevel 2>/dev/null)" != "$(pwd -P)/$wt" ]; then
    rm -rf "$wt"
    git worktree prune
    git worktree add --detach -q "$wt" HEAD
  fi
  git -C "$wt" checkout -q --force --detach HEAD
  git -C "$wt" apply "$CUDABENCH_ROOT/scripts/slowdown-10pct.patch"
  echo "ab-calibration: building HEAD with scripts/slowdown-10pct.patch in $wt/build (bench only)" >&2
  CUDABENCH_BUILD_TARGET=bench run_job configure_and_build_source "$CUDABENCH_ROOT/$wt" "$wt/build" \
    -DCUDABENCH_BUILD_TESTS=OFF -DCUDABENCH_DEPS_DIR="$CUDABENCH_ROOT/.deps" >/dev/null \
    || { echo "ab-calibration: building the slowed bench failed" >&2; exit 3; }
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$wt/build/bench" "${gate[@]}" --out "$out/slow"
fi
if step quota; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --b-wrap "$CUDABENCH_ROOT/scripts/cpu-quota.sh 0.85" \
    "${gate[@]}" --out "$out/quota"
fi
if step omp; then
  run_job "$py" "$ab" trials "$trials" --a "$bench" --b "$bench" --a-env OMP_NUM_THREADS=2 --b-env OMP_NUM_THREADS=1 \
    --filter 'VectorAdd/cpu_omp_simd/n:(1048576|4194304)/' --min-time 0.05 --alpha 0.01 --out "$out/omp"
fi
