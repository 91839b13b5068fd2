#!/usr/bin/env bash
# Installs what a command needs, idempotently, and says nothing when all of
# it is already there.
#   scripts/setup.sh           what building and running bench and train needs
#                              (scripts/run-bench.sh)
#   scripts/setup.sh --tests   that plus what only the tests need
#                              (scripts/test.sh)
#   scripts/setup.sh --plan    print the stack this machine gets; install nothing
#   scripts/setup.sh --help    this
# 1. Debian packages. Always: compilers and build tools, nlohmann_json, CLI11,
#    zlib, RE2 (bench's filter), Fashion-MNIST, Gloo's headers (data-parallel train: the PyPI torch
#    ships c10d's ProcessGroupGloo.hpp but not the Gloo headers it includes).
#    --tests adds GoogleTest, clang with libFuzzer and its OpenMP (the
#    sanitizer build, the fuzz targets), Slurm and munge (the fleet test).
# 2. Google Benchmark 1.7.1 built as Release from Debian's own source package
#    (Debian's binary is a debug build), in $CUDABENCH_CACHE/benchmark-release.
# 3. The stack (scripts/stacks.py chooses it to fit the driver): a venv per
#    stack, $CUDABENCH_CACHE/stacks/<stack>/venv, with its torch (LibTorch)
#    and, when the system's nvcc does not fit, the PyPI toolkit of LibTorch's
#    CUDA; plus the tools of scripts/requirements.txt, and with --tests
#    scripts/requirements-test.txt (pytest, atheris, lizard, cuobjdump, actionlint, zizmor, PyYAML, markdown-it-py).
#    $CUDABENCH_CACHE/venv links to the chosen stack's venv.
# Heavy downloads stay in $CUDABENCH_CACHE (default ~/.cache/cudabench).
# Environment: CUDABENCH_CACHE; CUDABENCH_TORCH (pin the LibTorch);
# CUDABENCH_STACK=CUDA:TORCH (install that stack, leaving the chosen one be);
# Torch_DIR (your own LibTorch: no torch is installed); CUDABENCH_NO_TORCH=1
# (skip torch entirely); CUDABENCH_VENV (your own venv).
# Exit codes: 0 ready; 2 an unknown argument, or a driver too old for every
# stack (one line naming the oldest driver that works); 3 something could not
# be installed (never 1, which the project keeps for a wrong result); 128+N on
# signal N.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CUDABENCH_ROOT="$(cd "$here/.." && pwd)"
. "$here/lib.sh"
script_start "$@"
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  --plan) tests=plan ;;
  *) echo "setup: unknown argument '$1' (--tests, --plan, --help)" >&2; exit 2 ;;
esac
# Any failure (apt's 100, a missing command's 127, a step the OOM killer
# ended, 137) is 3; only a signal to setup itself is 128+N, and a plan
# refused (stacks.py said why) 2.
exit_as=""
failed_setup() {
  local rc=$?; [ -z "${work:-}" ] || rm -rf "$work"
  if [ -n "$exit_as" ]; then exit "$exit_as"; fi
  [ "$rc" -eq 0 ] || exit 3
}
trap failed_setup EXIT
stopped() { exit_as="$(exit_status_of "$1")"; exit "$exit_as"; }
on_ending_signals stopped
CACHE="$(cache_dir)" || { exit_as=2; exit 2; }
say() { echo "setup: $*" >&2; }

# The stack for this machine (scripts/stacks.py: the table and the rule),
# read into STACK by lib.sh's stack_plan, as every build reads it.
read_plan() {
  stack_plan || { [ $? -ne 2 ] || exit_as=2; exit 3; }
}
if [ "$tests" = plan ]; then
  read_plan
  say "${STACK[why]}"
  printf 'stack: %s\nvenv: %s\ntoolkit: %s (%s %s)\n' "${STACK[stack]}" "${STACK[venv]}" \
    "${STACK[toolkit_root]}" "${STACK[toolkit]}" "${STACK[toolkit_version]}"
  exit 0
fi
read_plan  # before anything is installed: a refusal costs nothing
mkdir -p "$CACHE"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# ---- 1. Debian packages ----
pkgs=(build-essential cmake ninja-build ccache git pkg-config nlohmann-json3-dev libcli11-dev
      zlib1g-dev libre2-dev dataset-fashion-mnist dpkg-dev libgloo-dev)
[ "$tests" = 0 ] || pkgs+=(libgtest-dev clang libfuzzer-14-dev libomp-14-dev slurmctld slurmd slurm-client munge)
probe 60 python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
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

# ---- 3. The stack: its venv, and a PyPI toolkit when the plan wants one ----
# NVIDIA's PyPI toolkit comes as one wheel per part (nvidia/cu13/... or
# nvidia/cuda_nvcc, cuda_runtime ...); nvcc and CMake want one root, so the
# parts are hard-linked into <toolkit>/root, with the unversioned library
# names the wheels leave out (without them find_library silently takes
# another toolkit's library from the system paths).
install_pypi_toolkit() {
  local tk="${STACK[toolkit_root]%/root}" site part f
  say "installing ${STACK[toolkit_pip]} into $tk"
  [ -x "$tk/venv/bin/python" ] || python3 -m venv "$tk/venv"
  "$tk/venv/bin/python" -m pip install -q "${STACK[toolkit_pip]}"
  site="$("$tk/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  work="$tk/root.partial"
  rm -rf "$work" && mkdir -p "$work"
  for part in "$site"/nvidia/*/; do
    [ -d "$part/include" ] || [ -d "$part/lib" ] || [ -d "$part/bin" ] || continue
    cp -alf "$part". "$work/"
  done
  for f in "$work"/lib/lib*.so.[0-9]*; do
    [ -e "${f%%.so.*}.so" ] || ln -s "$(basename "$f")" "${f%%.so.*}.so"
  done
  [ -x "$work/bin/nvcc" ] || { say "${STACK[toolkit_pip]} gave no nvcc"; exit 3; }
  rm -rf "$tk/root"
  mv "$work" "$tk/root"
  work=""
}
VENV="${STACK[venv]}"
check='import scipy, matplotlib, numpy, re2'
[ "$tests" = 0 ] || check="$check, pytest, atheris, lizard, nvidia, os; assert any(os.access(os.path.join(p, 'cu13/bin/cuobjdump'), os.X_OK) for p in nvidia.__path__)"
[ -z "${STACK[torch]}" ] || check="$check; import torch; assert torch.__version__.startswith('${STACK[torch]}') and torch.version.cuda == '${STACK[torch_cuda]}', torch.__version__"
said=0
if ! probe 300 "$VENV/bin/python" -c "$check" >/dev/null 2>&1; then
  say "${STACK[why]}"
  said=1
  say "preparing $VENV (pip cache in ~/.cache/pip)"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  req=("-r" "$here/requirements.txt")
  [ "$tests" = 0 ] || req+=("-r" "$here/requirements-test.txt")
  [ -z "${STACK[torch]}" ] || req+=("torch==${STACK[torch]}")
  "$VENV/bin/python" -m pip install -q "${req[@]}"
  if ! err="$(probe 300 "$VENV/bin/python" -c "$check" 2>&1)"; then
    say "$VENV still fails its check after pip install: $(echo "$err" | tail -n1)"
    exit 3
  fi
fi
if [ -n "${STACK[toolkit_pip]}" ] && [ ! -x "${STACK[toolkit_root]}/bin/nvcc" ]; then
  [ "$said" = 1 ] || say "${STACK[why]}"
  said=1
  install_pypi_toolkit
fi
# $CACHE/venv names the chosen stack's venv for what reads the default (a
# plain cmake, compare.py, the fleet). Before stacks it was a venv itself.
if [ -z "${CUDABENCH_VENV:-}${CUDABENCH_STACK:-}" ] && [ "$(readlink "$CACHE/venv" 2>/dev/null)" != "stacks/${STACK[stack]}/venv" ]; then
  rm -rf "$CACHE/venv.old"  # a run stopped before its rm
  [ -L "$CACHE/venv" ] || [ ! -d "$CACHE/venv" ] || mv -T "$CACHE/venv" "$CACHE/venv.old"
  ln -sfn "stacks/${STACK[stack]}/venv" "$CACHE/venv.new"
  mv -T "$CACHE/venv.new" "$CACHE/venv"
  rm -rf "$CACHE/venv.old"
  [ "$said" = 1 ] || say "${STACK[why]}"
fi
