# The GPU check's preflight (sourced by scripts/gpu-check-steps.sh): every
# tool and the driver, before anything is built. Each item is one line:
# "ok", "MISSING" (step_preflight returns 3: the run stops before any
# build) or "absent" (optional: the steps that need it are skipped). What
# later steps use goes to preflight.env (NVCC, TOOLKIT, SANITIZER,
# GENERATOR, TORCH_DIR, GPU_CC, GPU_COUNT) and have.env.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "usage: gpu-check-preflight.sh is sourced by scripts/gpu-check-steps.sh, not run (bash scripts/gpu-check.sh runs the check)" 2>/dev/null \
    || { echo "gpu-check-preflight.sh: standard output: cannot write" >&2; exit 3; }
  exit 0
fi

STUCK="a stuck GPU or a driver in a bad state: look at the Xid lines of dmesg"

# The python whose torch gives LibTorch: CUDABENCH_GPU_CHECK_PYTHON, else
# the GPU machine's python3, or in a dry run the project's venv (this
# machine's python3 may have none).
python_with_torch() {
  if [ -n "${CUDABENCH_GPU_CHECK_PYTHON:-}" ]; then echo "$CUDABENCH_GPU_CHECK_PYTHON"
  elif [ "$GC_DRY_RUN" = 1 ]; then project_python 2>/dev/null || echo python3
  else echo python3; fi
}

# The nvcc a build would use: CUDACXX (which must then be one), PATH,
# CUDA_PATH, /usr/local/cuda.
find_nvcc() {
  local c
  if [ -n "${CUDACXX:-}" ]; then
    [ -x "$CUDACXX" ] && echo "$CUDACXX"
    return
  fi
  for c in "$(command -v nvcc 2>/dev/null)" "${CUDA_PATH:+$CUDA_PATH/bin/nvcc}" /usr/local/cuda/bin/nvcc; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
  done
  return 1
}

# Each item, one line: "ok", "MISSING" (the run stops with exit 3 before
# any build) or "absent" (the steps that need it are skipped).
step_preflight() {
  missing=0
  : > "$res/preflight.env"
  : > "$res/have.env"
  preflight_toolkit
  preflight_build_tools
  preflight_torch
  preflight_driver
  [ "$missing" = 0 ] || return 3
}
need() { if [ "$1" = ok ]; then echo "ok       $2"; else echo "MISSING  $2"; missing=1; fi; }
# absent NEED WHY: an optional item is not there.
absent() { echo "absent   $1: $2 (the steps that need it are skipped)"; have "$1" 0 "$2"; }

# first_of PATH...: the first that exists.
first_of() {
  local p
  for p in "$@"; do [ -e "$p" ] && { echo "$p"; return 0; }; done
  return 1
}

# nvcc, the toolkit's headers and libraries beside it, and compute-sanitizer.
# TOOLKIT (nvcc's release) is the driver's to run.
preflight_toolkit() {
  local nvcc root f found
  if ! nvcc="$(find_nvcc)"; then
    need no "nvcc: ${CUDACXX:+CUDACXX=$CUDACXX is not an executable; }not in CUDACXX, PATH, CUDA_PATH or /usr/local/cuda/bin"
    return
  fi
  root="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
  TOOLKIT="$(probe 15 "$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  need ok "nvcc $nvcc ($TOOLKIT)"
  printf 'NVCC=%q\nTOOLKIT=%q\n' "$nvcc" "$TOOLKIT" >> "$res/preflight.env"
  for f in include/cuda_runtime.h include/cublas_v2.h lib/libcudart.so lib/libcublas.so; do
    if found="$(first_of "$root/$f" "$root/${f/lib\//lib64/}" "$root"/targets/*/"$f")"; then
      need ok "$found"
    else
      need no "$root/$f (the CUDA toolkit's headers and libraries)"
    fi
  done
  if found="$(first_of "$(command -v compute-sanitizer 2>/dev/null)" "$root/bin/compute-sanitizer" \
                       "$root/compute-sanitizer/compute-sanitizer")"; then
    need ok "compute-sanitizer $found"
    printf 'SANITIZER=%q\n' "$found" >> "$res/preflight.env"
    have sanitizer 1
  else
    absent sanitizer "compute-sanitizer is not on PATH or in $root"
  fi
}

# CMake, and ninja or else make.
preflight_build_tools() {
  if command -v cmake > /dev/null; then need ok "cmake $(command -v cmake)"; else need no "cmake: not on PATH"; fi
  if command -v ninja > /dev/null; then
    need ok "ninja $(command -v ninja)"
    echo "GENERATOR=Ninja" >> "$res/preflight.env"
  elif command -v make > /dev/null; then
    need ok "make $(command -v make) (no ninja: Unix Makefiles)"
    echo "GENERATOR='Unix Makefiles'" >> "$res/preflight.env"
  else
    need no "ninja or make: neither is on PATH"
  fi
}

# The torch python3 would import, read from its files (torch/version.py),
# not imported: its version, its CUDA (None for a CPU build) and LibTorch's
# CMake folder, which the build is then given.
preflight_torch() {
  local py found dir version cuda
  py="$(python_with_torch)"
  found="$(probe 15 "$py" - 2>/dev/null <<'EOF'
import importlib.util, os, re
spec = importlib.util.find_spec("torch")
d = list(spec.submodule_search_locations)[0]
text = open(os.path.join(d, "version.py")).read()
version = re.search(r"^__version__\s*=\s*'([^']+)'", text, re.M)[1]
cuda = re.search(r"^cuda(?:\s*:[^=]*)?=\s*'?([^'\n]+)'?\s*$", text, re.M)
print(d, version, cuda[1].strip() if cuda else "None", sep="\t")
EOF
)"
  IFS=$'\t' read -r dir version cuda <<< "$found"
  if [ -z "$found" ]; then
    absent torch "$py has no torch module"
  elif [ "$cuda" = None ] && [ "$GC_DRY_RUN" != 1 ]; then
    absent torch "torch $version in $py is built without CUDA"
  elif [ ! -f "$dir/share/cmake/Torch/TorchConfig.cmake" ]; then
    absent torch "torch $version in $py has no LibTorch CMake files ($dir/share/cmake/Torch)"
  else
    need ok "torch $version (CUDA $cuda) in $py"
    printf 'TORCH_DIR=%q\n' "$dir/share/cmake/Torch" >> "$res/preflight.env"
    have torch 1
  fi
}

# The driver, each probe with a deadline (CUDABENCH_PROBE_SECONDS): nvidia-smi
# (its CSV and -q are kept for the summary's tarball), then libcuda itself
# in a child (driver_probe.py), whose MISSING lines name the cause in the
# doctor's words.
preflight_driver() {
  local rc=0 q=index,name,pci.bus_id,driver_version,memory.total,compute_cap,mig.mode.current,clocks.sm,clocks.mem,clocks.max.sm,power.limit,persistence_mode
  if [ "$GC_DRY_RUN" = 1 ]; then
    echo "skipped  the driver (dry run)"
    return
  fi
  nvidia_smi --query-gpu="$q" --format=csv > "$res/nvidia-smi.csv" 2>&1 || rc=$?
  case "$rc" in
    0) need ok "nvidia-smi: $(sed -n '2p' "$res/nvidia-smi.csv")"
       nvidia_smi -q > "$res/nvidia-smi-q.txt" 2>&1
       printf 'GPU_CC=%q\nGPU_COUNT=%q\n' "$(sed -n '2p' "$res/nvidia-smi.csv" | cut -d, -f6 | tr -d ' .')" \
         "$(($(grep -c . "$res/nvidia-smi.csv") - 1))" >> "$res/preflight.env" ;;
    127) need no "a working driver: nvidia-smi is not on PATH" ;;
    124|137) need no "a working driver: nvidia-smi did not answer in $(probe_seconds) s: $STUCK" ;;
    *) need no "a working driver: nvidia-smi says: $(head -c 200 "$res/nvidia-smi.csv" | tr '\n' ' ')" ;;
  esac
  rc=0
  probe $(( $(probe_seconds) + 10 )) python3 scripts/driver_probe.py --seconds "$(probe_seconds)" \
    ${TOOLKIT:+--toolkit "$TOOLKIT"} --nvidia-smi-csv "$res/nvidia-smi.csv" > "$res/driver-probe.txt" 2>&1 || rc=$?
  if grep -q '^MISSING' "$res/driver-probe.txt"; then
    grep '^MISSING' "$res/driver-probe.txt"
    missing=1
  elif [ "$rc" = 0 ]; then
    cat "$res/driver-probe.txt"
  else
    need no "a working driver: the driver probe ended with exit $rc: $(tail -c 300 "$res/driver-probe.txt" | tr '\n' ' ')"
  fi
}

