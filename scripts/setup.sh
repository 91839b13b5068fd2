#!/usr/bin/env bash
# Installs what a command needs, idempotently, and says nothing when all of
# it is already there.
#   scripts/setup.sh           what building and running bench and train needs
#                              (scripts/run-bench.sh)
#   scripts/setup.sh --tests   that plus what only the tests need
#                              (scripts/test.sh)
# 1. Debian packages. Always: compilers and build tools, nlohmann_json, CLI11,
#    zlib, Fashion-MNIST, Gloo's headers (data-parallel train: the PyPI torch
#    ships c10d's ProcessGroupGloo.hpp but not the Gloo headers it includes).
#    --tests adds GoogleTest, clang with libFuzzer and its OpenMP (the
#    sanitizer build, the fuzz targets), Slurm and munge (the fleet test).
# 2. Google Benchmark 1.7.1 built as Release from Debian's own source package
#    (Debian's binary is a debug build), in $CUDABENCH_CACHE/benchmark-release.
# 3. The project's venv, $CUDABENCH_CACHE/venv: torch==2.11.0 (LibTorch, a
#    CUDA 13.0 build) and the tools of scripts/requirements.txt; --tests adds
#    scripts/requirements-test.txt (pytest, atheris, lizard).
# Heavy downloads stay in $CUDABENCH_CACHE (default ~/.cache/cudabench).
# Environment: CUDABENCH_CACHE; Torch_DIR (your own LibTorch: no torch is
# installed); CUDABENCH_NO_TORCH=1 (skip torch entirely).
# Exit codes: 0 ready; 2 an unknown argument; 3 something could not be
# installed (never 1, which the project keeps for a wrong result); 128+N on
# signal N.
set -euo pipefail
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "setup: unknown argument '$1' (--tests)" >&2; exit 2 ;;
esac
# Any failure (apt's 100, a missing command's 127, a step the OOM killer
# ended, 137) is 3; only a signal to setup itself is 128+N.
signalled=""
failed_setup() {
  local rc=$?; [ -z "${work:-}" ] || rm -rf "$work"
  if [ -n "$signalled" ]; then exit "$signalled"; fi
  [ "$rc" -eq 0 ] || exit 3
}
trap failed_setup EXIT
trap 'signalled=130; exit 130' INT
trap 'signalled=143; exit 143' TERM
trap 'signalled=129; exit 129' HUP
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${CUDABENCH_CACHE:-$HOME/.cache/cudabench}"
mkdir -p "$CACHE"
say() { echo "setup: $*" >&2; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# ---- 1. Debian packages ----
pkgs=(build-essential cmake ninja-build ccache git pkg-config nlohmann-json3-dev libcli11-dev
      zlib1g-dev dataset-fashion-mnist dpkg-dev libgloo-dev)
[ "$tests" = 0 ] || pkgs+=(libgtest-dev clang libfuzzer-14-dev libomp-14-dev slurmctld slurmd slurm-client munge)
python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
apt_updated=0
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  apt_updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- 2. Release Google Benchmark from Debian's source ----
BM="$CACHE/benchmark-release"
if [ ! -f "$BM/lib/cmake/benchmark/benchmarkConfig.cmake" ] && [ ! -f "$BM/lib64/cmake/benchmark/benchmarkConfig.cmake" ]; then
  say "building Google Benchmark (Release) from Debian's source package into $BM"
  if ! apt-get source --print-uris -qq benchmark >/dev/null 2>&1; then
    # No deb-src entry yet: add one for the same archive and release.
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$codename" \
      | $SUDO tee /etc/apt/sources.list.d/cudabench-deb-src.sources >/dev/null
    apt_updated=0
  fi
  [ "$apt_updated" -eq 1 ] || $SUDO apt-get update -qq
  work="$(mktemp -d)"
  (cd "$work" && apt-get source -qq benchmark >/dev/null 2>&1)
  src="$(find "$work" -maxdepth 1 -type d -name 'benchmark-*' | head -n1)"
  [ -n "$src" ] || { say "apt-get source benchmark gave no source tree"; exit 3; }
  version="${src##*/benchmark-}"
  # Debian builds with CMAKE_BUILD_TYPE=None, so NDEBUG is never defined and
  # the library calls itself a debug build. Release fixes the cause.
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGIT_VERSION="$version" -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_WERROR=OFF \
    -DCMAKE_INSTALL_PREFIX="$BM.partial" >/dev/null
  cmake --build "$work/build" >/dev/null
  rm -rf "$BM.partial"
  cmake --install "$work/build" >/dev/null
  mv "$BM.partial" "$BM"
  rm -rf "$work"
  work=""
fi

# ---- 3. The project's virtual environment ----
VENV="${CUDABENCH_VENV:-$CACHE/venv}"
want_torch=1
{ [ -n "${Torch_DIR:-}" ] || [ "${CUDABENCH_NO_TORCH:-0}" = 1 ]; } && want_torch=0
check='import scipy, matplotlib, numpy'
[ "$tests" = 0 ] || check="$check, pytest, atheris, lizard"
[ "$want_torch" = 1 ] && check="$check; import torch; assert torch.__version__.startswith('2.11.0'), torch.__version__"
if ! "$VENV/bin/python" -c "$check" >/dev/null 2>&1; then
  say "preparing $VENV (pip cache in ~/.cache/pip)"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  req=("-r" "$here/requirements.txt")
  [ "$tests" = 0 ] || req+=("-r" "$here/requirements-test.txt")
  [ "$want_torch" = 1 ] && req+=("torch==2.11.0")
  "$VENV/bin/python" -m pip install -q "${req[@]}"
fi
