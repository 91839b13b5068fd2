# Shared helpers for the scripts (sourced, not run).

# Configure quietly (the log is shown only when it fails), then build.
# Usage: configure_and_build <build-dir> [cmake args...]
configure_and_build() {
  local dir="$1"; shift
  local log
  log="$(mktemp)"
  if ! cmake -S "$CUDABENCH_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; return 1
  fi
  grep -E '^-- cudabench:' "$log" >&2 || true
  rm -f "$log"
  cmake --build "$dir"
}

# A name for this kind of machine: the GPU's, or the CPU's with its core count.
# CUDABENCH_MACHINE overrides.
machine_label() {
  if [ -n "${CUDABENCH_MACHINE:-}" ]; then echo "$CUDABENCH_MACHINE"; return; fi
  local name=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
  fi
  if [ -z "$name" ]; then
    name="cpu-$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)-$(nproc)c"
  fi
  echo "$name" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+|-+$//g'
}

# The toolkit a build used, as its own environment report names it:
# cuda-13.0.88, or cpu-only for a build without CUDA.
toolkit_label() {
  local v
  v="$("$1/bench" --env=json 2>/dev/null | sed -n 's/.*"cuda_toolkit_version": *"\([^"]*\)".*/\1/p' | head -n1)"
  if [ -n "$v" ]; then echo "cuda-$v"; else echo "cpu-only"; fi
}
