#!/usr/bin/env bash
# README command 2: install what is missing, build, run the test suite (CTest).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
bash "$CUDABENCH_ROOT/scripts/setup.sh"
configure_and_build "$CUDABENCH_ROOT/build"
cd "$CUDABENCH_ROOT/build"
ctest --output-on-failure --no-tests=error -j2 "$@"
