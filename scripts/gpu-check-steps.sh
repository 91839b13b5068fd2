#!/usr/bin/env bash
# One step of scripts/gpu-check.sh, which runs each under `timeout`:
#   bash scripts/gpu-check-steps.sh STEP
# It writes into $GC_RES and builds in $GC_BUILD; GC_DRY_RUN=1 is the
# rehearsal without a GPU, GC_QUICK=1 fewer sizes and epochs. Exit: 0 ok,
# 1 a wrong result, anything else a step that could not run.
set -uo pipefail
. "$CUDABENCH_ROOT/scripts/lib.sh"
cd "$CUDABENCH_ROOT"
res="$GC_RES" build="$GC_BUILD"
epochs=10; [ "$GC_QUICK" = 1 ] && epochs=2
sizes='(4096|1048576|16777216|10000000|134217728)' other_sizes='(4096|1048576|16777216)'
[ "$GC_QUICK" = 1 ] && sizes='(1048576|10000000|134217728)' other_sizes='(1048576)'
# The GPU tests, by suite: those that skip without a GPU.
GPU_TESTS='(GpuVectorAdd|CudaCheck|L2Flush|BenchCliGpu|TrainerGpu)\.'

# A python with torch: the GPU machine's python3; the project's venv in a
# dry run (this machine's python3 may have none).
python_with_torch() {
  if [ "$GC_DRY_RUN" = 1 ]; then project_python 2>/dev/null || echo python3; else echo python3; fi
}

# worst RC...: 1 if any is 1 (a wrong result), else 3 if any failed, else 0.
worst() {
  local w=0 rc
  for rc in "$@"; do
    if [ "$rc" = 1 ]; then w=1; elif [ "$rc" != 0 ] && [ "$w" = 0 ]; then w=3; fi
  done
  return $w
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

# Each item the check needs, one line each ("ok" or "MISSING"); exit 3
# when any is missing. What later steps use goes to preflight.env.
step_preflight() {
  missing=0
  : > "$res/preflight.env"
  preflight_toolkit
  local f
  for f in cmake ninja; do
    if command -v "$f" > /dev/null; then need ok "$f $(command -v "$f")"; else need no "$f: not on PATH"; fi
  done
  preflight_torch
  preflight_driver
  [ "$missing" = 0 ] || return 3
}
need() { if [ "$1" = ok ]; then echo "ok       $2"; else echo "MISSING  $2"; missing=1; fi; }

# first_of PATH...: the first that exists.
first_of() {
  local p
  for p in "$@"; do [ -e "$p" ] && { echo "$p"; return 0; }; done
  return 1
}

# nvcc, the toolkit's headers and libraries beside it, and compute-sanitizer.
preflight_toolkit() {
  local nvcc root f found
  if ! nvcc="$(find_nvcc)"; then
    need no "nvcc: ${CUDACXX:+CUDACXX=$CUDACXX is not an executable; }not in CUDACXX, PATH, CUDA_PATH or /usr/local/cuda/bin"
    return
  fi
  root="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
  need ok "nvcc $nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
  echo "NVCC=$nvcc" >> "$res/preflight.env"
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
    echo "SANITIZER=$found" >> "$res/preflight.env"
  elif [ "$GC_DRY_RUN" = 1 ]; then
    echo "skipped  compute-sanitizer (dry run)"
  else
    need no "compute-sanitizer: not on PATH or in $root"
  fi
}

preflight_torch() {
  local py torch
  py="$(python_with_torch)"
  torch="$("$py" -c 'import torch; print(torch.__version__, torch.version.cuda or "none")' 2>/dev/null)"
  if [ -z "$torch" ]; then
    need no "torch: $py cannot import it"
  elif [ "${torch#* }" = none ] && [ "$GC_DRY_RUN" != 1 ]; then
    need no "torch ${torch% *} in $py is built without CUDA"
  else
    need ok "torch ${torch% *} (CUDA ${torch#* }) in $py"
  fi
}

# nvidia-smi answers (its CSV and -q are kept for the summary's tarball).
preflight_driver() {
  if [ "$GC_DRY_RUN" = 1 ]; then
    echo "skipped  the driver (dry run)"
  elif ! command -v nvidia-smi > /dev/null; then
    need no "a working driver: nvidia-smi is not on PATH"
  elif nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem,clocks.max.sm,power.limit,persistence_mode \
         --format=csv > "$res/nvidia-smi.csv" 2>&1; then
    need ok "driver $(sed -n '2p' "$res/nvidia-smi.csv")"
    nvidia-smi -q > "$res/nvidia-smi-q.txt" 2>&1
  else
    need no "a working driver: nvidia-smi says: $(head -c 200 "$res/nvidia-smi.csv" | tr '\n' ' ')"
  fi
}

# Configure, check that CUDA, LibTorch (and on a GPU machine NCCL) are on,
# then build. A dry run of an existing build keeps that build's settings.
step_build() {
  local args=() archs="${CUDABENCH_GPU_CHECK_ARCHS:-}" cc
  [ -f "$res/preflight.env" ] && . "$res/preflight.env"
  if [ "$GC_DRY_RUN" != 1 ] || [ ! -f "$build/CMakeCache.txt" ]; then
    args=(-G Ninja -DCMAKE_BUILD_TYPE=Release ${NVCC:+-DCMAKE_CUDA_COMPILER=$NVCC})
  fi
  if [ "$GC_DRY_RUN" != 1 ]; then
    # The GPU machine's own torch and tools, not a cache from elsewhere.
    args+=(-DCUDABENCH_CACHE_DIR=/nonexistent)
    cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
    [ -z "$archs" ] && [ -n "$cc" ] && archs="${cc}-real"
  fi
  [ -n "$archs" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
  [ -n "${CUDABENCH_FORCE_VENDORED:-}" ] && args+=(-DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON)
  cmake -S . -B "$build" "${args[@]}" ${CUDABENCH_GPU_CHECK_CMAKE_ARGS:-} > "$res/configure.log" 2>&1 \
    || { tail -30 "$res/configure.log"; return 3; }
  grep -E '^-- cudabench:' "$res/configure.log"
  configure_result "$res/configure.log" || return 3
  cmake --build "$build" -j "$(nproc)" > "$res/build.log" 2>&1 || { tail -40 "$res/build.log"; return 3; }
}

# What a configure log says is off that the check needs on.
configure_result() {
  local bad=0
  grep -q '^-- cudabench: CUDA [0-9]' "$1" || { echo "the build has no CUDA: $(grep -m1 'cudabench: CUDA' "$1")"; bad=1; }
  grep -q '^-- cudabench: LibTorch [0-9]' "$1" || { echo "the build has no LibTorch: $(grep -m1 'cudabench: LibTorch' "$1")"; bad=1; }
  if [ "$GC_DRY_RUN" != 1 ] && ! grep -q '^-- cudabench: data-parallel training ON (c10d: Gloo, NCCL' "$1"; then
    echo "the build has no NCCL: $(grep -m1 'cudabench: data-parallel' "$1")"; bad=1
  fi
  return $bad
}

step_env() {
  "$build/bench" --env > "$res/env.txt" 2>&1
  "$build/bench" --env=json --env-out "$res/env.json" || return 3
  sed -n '1,3p' "$res/env.txt"
  "$build/bench" --env --check > /dev/null 2>&1 || { echo "bench --env --check found an error verdict"; return 1; }
  # The doctor on a healthy machine: each message names its scenario and
  # finds no cause here (exit 1); exit 0 would be a false alarm.
  local msg rc
  for msg in "Error 804: forward compatibility was attempted on non supported HW" \
             "Error 802: system not yet initialized" \
             "RuntimeError: CUDA error: no kernel image is available for execution on the device" \
             "Failed to initialize NVML: Driver/library version mismatch"; do
    "$build/bench" --explain "$msg" >> "$res/explain.txt" 2>&1
    rc=$?
    echo "exit $rc" >> "$res/explain.txt"
    [ "$rc" = 1 ] || { echo "bench --explain '$msg' exited $rc on this machine (1 expected: no cause here)"; return 1; }
  done
}

# bench_json NAME ARGS...: a bench run writing NAME.json and NAME.txt.
bench_json() {
  local name="$1"; shift
  "$build/bench" "$@" --benchmark_out="$res/$name.json" --benchmark_out_format=json > "$res/$name.txt" 2>&1
}

# Two runs, the headline rows first, so that a run stopped in the second
# keeps them: VectorAdd at 1e7 and 2^27 and the 40 MB pinned copy, then the
# other sizes, the flows and the copies.
step_bench() {
  local a=0 b=0 impl='(cuda|cublas|thrust|torch_cuda)[^/]*'
  bench_json vector_add_headline --devices all --benchmark_repetitions=3 \
    --benchmark_filter="^(VectorAdd/$impl/n:(10000000|134217728)/|Transfer/h2d_pinned/bytes:40000000/)" || a=$?
  bench_json vector_add --devices all --benchmark_repetitions=3 \
    --benchmark_filter="^(VectorAdd/$impl/n:$other_sizes/|VectorAddFlow/(pinned|pageable)/n:$sizes/|Transfer/.*/bytes:(16384|4194304|536870912)/|Transfer/(h2d_pageable|d2h_pinned|d2h_pageable)/bytes:40000000/)" || b=$?
  worst "$a" "$b"
}

# Fashion-MNIST as plain IDX files (the GPU image may lack zlib's headers),
# each unpacked to a temp file and renamed, so a killed run leaves no half
# file; prints the folder.
dataset() {
  local src data="${TMPDIR:-/tmp}/cudabench-fashion-mnist" f out
  for src in .deps/fashion-mnist /usr/share/datasets/fashion-mnist; do
    [ -d "$src" ] || continue
    mkdir -p "$data" || return 3
    for f in "$src"/*; do
      out="$data/$(basename "$f" .gz)"
      [ -f "$out" ] && continue
      case "$f" in
        *.gz) gzip -dc "$f" > "$out.tmp.$$" ;;
        *) cp "$f" "$out.tmp.$$" ;;
      esac && mv "$out.tmp.$$" "$out" || { rm -f "$out.tmp.$$"; echo "cannot unpack $f"; return 3; }
    done
    echo "$data"
    return 0
  done
  echo "no Fashion-MNIST in .deps/ (run scripts/vendor-deps.sh) or /usr/share/datasets" >&2
  return 3
}

step_train() {
  local a=0 b=0
  "$build/train" --device cuda --epochs "$epochs" --quiet --json "$res/train_cuda.json" > "$res/train_cuda.txt" 2>&1 || a=$?
  "$build/train" --device cuda --cuda-graph --epochs "$epochs" --quiet --json "$res/train_cuda_graph.json" \
    > "$res/train_cuda_graph.txt" 2>&1 || b=$?
  worst "$a" "$b"
}

step_mnist() {
  bench_json mnist --benchmark_repetitions=3 \
    --benchmark_filter='^MnistTrain/cuda[a-z0-9_]*/batch:(64|256|1024)/|^MnistEval/cuda/|^MnistTrain/cpu/batch:64/'
}

# Above 8x L2 a VectorAdd is one launch after an L2 flush: read and memset
# flushes in alternating processes, the process as the unit.
step_flush-ab() {
  local filter='^VectorAdd/(cuda_v4|cublas_geam)/n:134217728/' i=0 rcs=() mode rc
  for mode in read memset memset read; do
    i=$((i + 1)); rc=0
    bench_json "flush_${mode}_$i" --l2-flush "$mode" --benchmark_repetitions=3 --benchmark_filter="$filter" || rc=$?
    rcs+=("$rc")
  done
  worst "${rcs[@]}"
}

# Data-parallel train over NCCL: the throughput without the replica check,
# the check itself on a short run, then the scaling series when there is
# more than one GPU.
step_ddp() {
  local a=0 b=0 c=0 n ranks=1 k
  local one=(env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "$build/train" --device cuda --backend nccl --quiet)
  MASTER_PORT=29517 "${one[@]}" --epochs 2 --json "$res/train_ddp_nccl1.json" > "$res/train_ddp_nccl1.txt" 2>&1 || a=$?
  MASTER_PORT=29518 "${one[@]}" --epochs 1 --limit 4096 --check-sync --json "$res/train_ddp_nccl1_check.json" \
    > "$res/train_ddp_nccl1_check.txt" 2>&1 || b=$?
  n="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)"
  [ -z "${CUDA_VISIBLE_DEVICES:-}" ] || n="$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)"
  for k in 2 4 8 16; do [ "$k" -le "$n" ] && ranks="$ranks,$k"; done
  if [ "$ranks" = 1 ]; then
    echo "one GPU: no scaling series"
  else
    python3 scripts/ddp_scaling.py --device cuda --ranks "$ranks" --repetitions 3 --epochs 2 --train "$build/train" \
      --out "$res/ddp-scaling" > "$res/ddp_scaling.txt" 2>&1 || c=$?
  fi
  worst "$a" "$b" "$c"
}

# The GPU tests alone (the rest ran in CI), one at a time on the GPU; a
# failed test is a wrong result, one past its timeout is not.
step_tests() {
  (cd "$build" && ctest -R "$GPU_TESTS" --no-tests=error --output-on-failure -j 1 --timeout 100) > "$res/ctest.log" 2>&1
  local rc=$?
  grep -E 'tests passed|tests failed|No tests' "$res/ctest.log"
  [ "$rc" = 0 ] && return 0
  grep -qE '^\s*[0-9]+ - .* \(Failed\)$' "$res/ctest.log" && return 1
  return 3
}

# compute-sanitizer on one small run of each kernel family. A finding is
# its own exit code (86), a wrong result (1); anything else (a tool that
# could not run, a program that failed under it) is 3.
step_sanitize() {
  [ -f "$res/preflight.env" ] && . "$res/preflight.env"
  [ -n "${SANITIZER:-}" ] || { echo "compute-sanitizer not found"; return 3; }
  local rcs=() san=("$SANITIZER" --error-exitcode 86 --print-limit 20)
  "$SANITIZER" --version > "$res/compute-sanitizer-version.txt" 2>&1
  # A finding (86) is a wrong result (1); a program's own failure is not.
  sanitized() {
    local rc=0; echo "== $1"; shift; "${san[@]}" "$@" 2>&1 || rc=$?
    case "$rc" in 0) ;; 86) rc=1 ;; *) rc=3 ;; esac
    rcs+=("$rc")
  }
  {
    sanitized "memcheck: test_vector_add_gpu" --tool memcheck "$build/test_vector_add_gpu"
    sanitized "racecheck: test_vector_add_gpu" --tool racecheck "$build/test_vector_add_gpu"
    # 2^24 rotates over two buffer sets (smaller sizes over hundreds); the
    # warm-up runs the read flush.
    sanitized "memcheck: raw kernels, cuBLAS, Thrust, copies, the flow" --tool memcheck "$build/bench" \
      --benchmark_min_time=0.001 \
      --benchmark_filter='^(VectorAdd/(cuda|cublas|thrust)[^/]*/n:16777216/|Transfer/.*/bytes:16384/|VectorAddFlow/pinned/n:65536/)'
    sanitized "memcheck: torch add" --tool memcheck "$build/bench" --benchmark_min_time=0.001 \
      --benchmark_filter='^VectorAdd/torch_cuda/n:16777216/'
  } > "$res/sanitizer.txt"
  grep -E '^== |ERROR SUMMARY' "$res/sanitizer.txt"
  worst "${rcs[@]}"
}

# Faults the tests of the check inject: CUDABENCH_TEST_GPU_CHECK_FAULT=STEP:hang
# (a step that overruns its limit) or STEP:fail (one that exits 7).
case "${CUDABENCH_TEST_GPU_CHECK_FAULT:-}" in
  "${1:-}:hang") echo "injected: hangs"; sleep 3600 ;;
  "${1:-}:fail") echo "injected: fails"; exit 7 ;;
esac
# The steps that read the dataset get its folder, and only they.
case "${1:-}" in
  train|mnist|ddp|tests) CUDABENCH_DATA_DIR="$(dataset)" || exit 3; export CUDABENCH_DATA_DIR ;;
esac
case "${1:-}" in
  preflight|build|env|bench|train|mnist|flush-ab|ddp|tests|sanitize) "step_$1" ;;
  *) echo "gpu-check-steps: ${1:-}: no such step" >&2; exit 2 ;;
esac
