# shellcheck shell=bash
# The fleet mode's shared pieces (sourced by fleet.sh, task.sh and
# collect.sh, after scripts/lib.sh). Slurm runs a job script from a copy in
# its spool folder, so the job scripts find these through $CUDABENCH_ROOT,
# which the driver exports.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "usage: common.sh is sourced by scripts/fleet/fleet.sh, task.sh and collect.sh, not run" 2>/dev/null || { echo "common.sh: standard output: cannot write" >&2; exit 3; }
  exit 0
fi

# What a build depends on beyond the source, one fact per line: the source
# revision (and a hash of uncommitted changes), the stack (scripts/stacks.py),
# the CPU architecture, the OS, glibc, the C++ compiler, nvcc, LibTorch and
# Google Benchmark. Nodes that print the same text can run the same binary.
fleet_environment() {
  local root="$CUDABENCH_ROOT" cache nvcc torch venv bm
  cache="$(cache_dir 2>/dev/null)" || true
  stack_plan || return
  venv="${STACK[venv]}"
  echo "source $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" \
       "$( (git -C "$root" diff HEAD 2>/dev/null || true) | sha256sum | cut -c1-12)"
  echo "stack ${STACK[stack]}"
  echo "arch $(uname -m)"
  echo "os $( (. /etc/os-release 2>/dev/null && echo "${ID:-?} ${VERSION_ID:-?}") || echo unknown)"
  echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
  echo "c++ $(probe 15 c++ --version 2>/dev/null | head -n1 || echo none)"
  nvcc="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  echo "nvcc $(probe 15 "$nvcc" --version 2>/dev/null | tail -n1 || echo none)"
  if [ -n "${Torch_DIR:-}" ]; then
    torch="Torch_DIR $Torch_DIR"
  else
    torch="$(sed -n "s/^__version__ = '\(.*\)'.*/\1/p" "$venv"/lib/python3*/site-packages/torch/version.py 2>/dev/null | head -n1)"
  fi
  echo "libtorch ${torch:-none}"
  bm="$(sed -n 's/.*set(PACKAGE_VERSION "\([^"]*\)").*/\1/p' "$cache"/benchmark-release/lib*/cmake/benchmark/benchmarkConfigVersion.cmake 2>/dev/null | head -n1)"
  echo "google-benchmark ${bm:-none}"
}

# A short name for that environment: the folder its build goes in.
fleet_fingerprint() {
  fleet_environment | sha256sum | cut -c1-12
}

# The build for this node's environment, made once per environment under
# $CUDABENCH_FLEET_BUILDS (a shared folder: <fingerprint>/ and, once it is
# complete, <fingerprint>.done with the environment's text). The first task
# of an environment builds it under a lock (flock on <fingerprint>.lock);
# the others wait, then use it. Prints the build folder; returns 3 when the
# build fails (its log on stderr).
fleet_build() {
  local builds="${CUDABENCH_FLEET_BUILDS:?}" fp dir
  fp="$(fleet_fingerprint)"
  dir="$builds/$fp"
  if [ ! -f "$dir.done" ] || [ ! -x "$dir/bench" ]; then
    mkdir -p "$builds" || return 3
    (
      flock 9 || exit 3
      if [ ! -f "$dir.done" ] || [ ! -x "$dir/bench" ]; then
        echo "fleet: building for environment $fp in $dir on $(hostname)" >&2
        CUDABENCH_BUILD_TARGET=bench configure_and_build "$dir" -DCUDABENCH_BUILD_TESTS=OFF >&2 || exit 3
        fleet_environment >"$dir.done.tmp" && mv "$dir.done.tmp" "$dir.done"
      fi
    ) 9>"$dir.lock" || return 3
  fi
  echo "$dir"
}

# Where results and builds go unless told.
fleet_default_results() { echo "$CUDABENCH_ROOT/results/fleet"; }
fleet_default_builds() { echo "$CUDABENCH_ROOT/build-fleet"; }
