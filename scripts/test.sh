#!/usr/bin/env bash
# README command 2: install what is missing, build, run the test suite (CTest).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
bash "$CUDABENCH_ROOT/scripts/setup.sh"
configure_and_build "$CUDABENCH_ROOT/build"
# A short benchmark run against the committed baseline, report-only: these
# machines are too noisy for a hard speed gate (the gate itself is tested on
# fixtures in tests/test_compare.py). CUDABENCH_SKIP_REGRESS=1 skips it.
if [ "${CUDABENCH_SKIP_REGRESS:-0}" != 1 ]; then
  CUDABENCH_REGRESS_REPS="${CUDABENCH_REGRESS_REPS:-3}" bash "$CUDABENCH_ROOT/scripts/regress.sh" --report-only
fi
cd "$CUDABENCH_ROOT/build"
ctest --output-on-failure --no-tests=error -j2 "$@"
