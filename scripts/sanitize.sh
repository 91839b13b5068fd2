#!/usr/bin/env bash
#   scripts/sanitize.sh [-h|--help] [ctest arguments...]
# The CPU tests under AddressSanitizer and UBSan: the sanitize preset
# (clang, no CUDA, no LibTorch) built in build-san, then its CTest suite,
# where any sanitizer report fails the test that made it.
# Exit codes: 0 clean; 1 a test failed or a sanitizer reported; 3 the
# build failed.
set -euo pipefail
CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CUDABENCH_ROOT
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
build_sanitize >/dev/null || { echo "sanitize: the sanitize build failed" >&2; exit 3; }
cd "$CUDABENCH_ROOT"
ctest --preset sanitize -j2 "$@" || exit 1
