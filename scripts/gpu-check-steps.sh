#!/usr/bin/env bash
# One step of scripts/gpu-check.sh, which runs each under `timeout`:
#   bash scripts/gpu-check-steps.sh STEP
# It writes into $GC_RES and builds in $GC_BUILD; GC_DRY_RUN=1 is the
# rehearsal without a GPU, GC_QUICK=1 fewer sizes and epochs. What the
# preflight and the build find goes to preflight.env (tools, the GPU) and
# have.env (HAVE_<need>=0|1 and WHY_<need> for the needs of STEPS), which
# later steps read. Exit: 0 ok, 1 a wrong result, 4 skipped (its last
# "skipped: " line says why), anything else a step that could not run.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
script_start "$@"
[ -n "${GC_RES:-}" ] || { echo "gpu-check-steps: GC_RES is unset: scripts/gpu-check.sh runs the steps" >&2; exit 2; }
cd "$CUDABENCH_ROOT"
res="$GC_RES" build="$GC_BUILD"
[ -f "$res/preflight.env" ] && . "$res/preflight.env"
[ -f "$res/have.env" ] && . "$res/have.env"
epochs=10; [ "$GC_QUICK" = 1 ] && epochs=2
headline='(10000000|67108864|134217728)' sizes='(4096|1048576|16777216)' flow_sizes='(4096|1048576|16777216|10000000|134217728)'
[ "$GC_QUICK" = 1 ] && sizes='(1048576)' flow_sizes='(1048576|10000000)'
# The GPU tests, by suite: those that skip without a GPU.
GPU_TESTS='(GpuVectorAdd|DeviceCheckGpu|CudaCheck|L2FlushGpu|BenchCliGpu|TrainerGpu)\.'
# Tests that make an API call fail on purpose (a 2^62-byte cudaMalloc): a
# sanitizer would report it, so sanitized runs leave them out.
DELIBERATE_API_FAILURES='CudaCheck.*'
# The implementations whose rows a step exists for (bench/families/vector_add_gpu.cu,
# bench/families/torch.cpp): a row missing from its results fails the step.
ADD_IMPLS="cuda_v1 cuda_v2 cuda_v3 cuda_v4 cuda_v5 cuda_v6 cuda_v7 cuda_v8 cublas_geam thrust"
[ "${HAVE_torch:-0}" = 1 ] && ADD_IMPLS+=" torch_cuda"
COPY_IMPLS="cuda_kernel cuda_float4 cuda_memcpy"
MNIST_VARIANTS="cuda cuda_graph cuda_bf16 cuda_channels_last cuda_tf32_on cuda_tf32_off"

# worst RC...: 1 if any is 1 (a wrong result), else 3 if any failed, else 5
# if any ran beside other load (samples.py: checked, but not a measurement),
# else 0.
worst() {
  local w=0 rc
  for rc in "$@"; do
    case "$rc" in
      0) ;;
      1) w=1 ;;
      5) [ "$w" != 0 ] || w=5 ;;
      *) [ "$w" = 1 ] || w=3 ;;
    esac
  done
  return $w
}

# have NEED 0|1 WHY: what a step that needs NEED finds (have.env).
have() { printf 'HAVE_%s=%q\nWHY_%s=%q\n' "$1" "$2" "$1" "${3:-}" >> "$res/have.env"; }

# The preflight (step_preflight): the tools, torch's files, the driver.
. "$CUDABENCH_ROOT/scripts/gpu-check-preflight.sh"

# Configure, check that CUDA is on (LibTorch and NCCL decide which later
# steps run), then build what the check runs. A dry run of an existing
# build keeps that build's settings.
step_build() {
  local args=() archs="${CUDABENCH_GPU_CHECK_ARCHS:-}"
  if [ "$GC_DRY_RUN" != 1 ] || [ ! -f "$build/CMakeCache.txt" ]; then
    # LibTorch named, so that CMake need not import torch to find it.
    args=(-G "${GENERATOR:-Ninja}" -DCMAKE_BUILD_TYPE=Release ${NVCC:+"-DCMAKE_CUDA_COMPILER=$NVCC"})
    if [ "${HAVE_torch:-0}" = 1 ]; then args+=("-DTorch_DIR=$TORCH_DIR"); else args+=(-DCUDABENCH_ENABLE_TORCH=OFF); fi
  fi
  if [ "$GC_DRY_RUN" != 1 ]; then
    # The GPU machine's own torch and tools, not a cache from elsewhere.
    args+=(-DCUDABENCH_CACHE_DIR=/nonexistent)
    [ -z "$archs" ] && [ -n "${GPU_CC:-}" ] && archs="${GPU_CC}-real"
  fi
  [ -n "$archs" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
  [ -n "${CUDABENCH_FORCE_VENDORED:-}" ] && args+=(-DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON)
  cmake -S . -B "$build" "${args[@]}" ${CUDABENCH_GPU_CHECK_CMAKE_ARGS:-} > "$res/configure.log" 2>&1 \
    || { tail -30 "$res/configure.log"; return 3; }
  grep -E '^-- cudabench:' "$res/configure.log"
  configure_result "$res/configure.log" || return 3
  cmake --build "$build" --target gpu_check_programs -j "$(nproc)" > "$res/build.log" 2>&1 \
    || { tail -40 "$res/build.log"; return 3; }
}

# What a configure log says: no CUDA stops the run; LibTorch (with the
# preflight's torch: a dry run may reuse a build that has one) and NCCL are
# needs of later steps.
configure_result() {
  local line
  grep -q '^-- cudabench: CUDA [0-9]' "$1" || { echo "the build has no CUDA: $(grep -m1 'cudabench: CUDA' "$1")"; return 3; }
  if [ "${HAVE_torch:-0}" != 1 ]; then
    :  # the preflight's reason stands
  elif grep -q '^-- cudabench: LibTorch [0-9]' "$1"; then
    have torch 1
  else
    line="$(grep -m1 'cudabench: LibTorch' "$1" | sed 's/^-- cudabench: //')"
    echo "absent   LibTorch: ${line:-not configured} (the training steps are skipped)"
    have torch 0 "the build has no LibTorch: ${line:-not configured}"
  fi
  if grep -q '^-- cudabench: data-parallel training ON (c10d: Gloo, NCCL' "$1"; then
    have nccl 1
  else
    line="$(grep -m1 'cudabench: data-parallel' "$1" | sed 's/^-- cudabench: //')"
    have nccl 0 "the build has no NCCL: ${line:-no LibTorch}"
  fi
}

# The GPU tests alone (the rest ran in CI), one at a time on the GPU; a
# failed test is a wrong result, one past its timeout is not, and on a GPU
# machine one that skipped itself proved nothing.
step_tests() {
  (cd "$build" && ctest -R "$GPU_TESTS" --no-tests=error --output-on-failure -j 1 --timeout 100) > "$res/ctest.log" 2>&1
  local rc=$?
  cp "$build/Testing/Temporary/LastTest.log" "$res/ctest-full.log" 2>/dev/null
  grep -E 'tests passed|tests failed|No tests' "$res/ctest.log"
  if [ "$rc" != 0 ]; then
    grep -qE '^\s*[0-9]+ - .* \(Failed\)$' "$res/ctest.log" && return 1
    return 3
  fi
  if [ "$GC_DRY_RUN" != 1 ] && grep -qE '\(Skipped\)$' "$res/ctest.log"; then
    echo "GPU tests skipped themselves on a GPU machine (their reasons: ctest-full.log):"
    grep -E '\(Skipped\)$' "$res/ctest.log"
    return 3
  fi
}

# Every compute-sanitizer run: a finding exits 86, and only the program
# itself is followed, not a child it starts (bench's driver check ran in one,
# and the sanitizer lost bench: "terminated before first instrumented API call").
SANITIZER_ARGS=(--error-exitcode 86 --print-limit 20 --target-processes application-only)

# sanitized TOOL LABEL PROGRAM ARGS...: one compute-sanitizer run, appended
# to sanitizer.txt under "== TOOL: LABEL (exit N)", its headline lines here.
# Returns the run's exit code; sets refused to the line saying the tool
# cannot check this device, where it printed one.
sanitized() {
  local tool="$1" label="$2" out rc=0; shift 2
  out="$(mktemp)" || return 3
  "$SANITIZER" --tool "$tool" "${SANITIZER_ARGS[@]}" "$@" > "$out" 2>&1 || rc=$?
  { echo "== $tool: $label (exit $rc)"; cat "$out"; } >> "$res/sanitizer.txt"
  echo "== $tool: $label (exit $rc)"
  grep -E '^========= (ERROR SUMMARY|Error:)' "$out"
  refused="$(sed -n 's/^========= \(.*[Dd]evice not supported.*\)/\1/p' "$out" | head -n 1)"
  rm -f "$out"
  return "$rc"
}

# proven TOOL TEST WHAT: a tool is trusted here only once it has caught the
# error planted in the canary SanitizerCanary.TEST (tests/kernels/test_vector_add_gpu.cpp)
# with a finding (86). A tool that misses it, cannot check this device or
# cannot run it skips the step (4) with a "skipped: " line: its passes
# would prove nothing, and its findings would mean nothing.
proven() {
  local tool="$1" test="SanitizerCanary.$2" refused rc=0 why
  sanitized "$tool" "canary $test, its $3 to be caught" "$build/test_vector_add_gpu" \
    --gtest_also_run_disabled_tests --gtest_filter="$test" || rc=$?
  if [ -n "$refused" ]; then why="$refused (exit $rc on its canary)"
  elif [ "$rc" = 86 ]; then return 0
  elif [ "$rc" = 0 ]; then why="it missed the canary's $3 (exit 0)"
  else why="its canary ended with exit $rc, not a finding (sanitizer.txt)"; fi
  echo "skipped: compute-sanitizer $tool does not work here: $why"
  return 4
}

# counted TOOL LABEL PROGRAM ARGS...: a run that counts, its tool proven:
# a finding (86) or the program's own wrong result (1) is a wrong result,
# any other failure could not run (3); into rcs.
counted() {
  local refused rc=0
  sanitized "$@" || rc=$?
  [ -z "$refused" ] || unsupported="$refused"
  case "$rc" in 0) ;; 1|86) rc=1 ;; *) rc=3 ;; esac
  rcs+=("$rc")
}

# The verdict on the runs in rcs: a wrong result wherever one was found;
# else skipped where a tool refused the device after all; else the worst.
sanitizer_result() {
  local w=0
  worst "${rcs[@]}" || w=$?
  [ "$w" = 1 ] && return 1
  if [ -n "$unsupported" ]; then echo "skipped: compute-sanitizer does not work here: $unsupported"; return 4; fi
  return "$w"
}

# Right after the tests: memcheck on the GPU tests and on one small run of
# each kernel family. 2^24 rotates over two buffer sets; the warm-up runs
# the read flush.
step_memcheck() {
  local rcs=() unsupported="" min=--benchmark_min_time=0.001
  probe 60 "$SANITIZER" --version > "$res/compute-sanitizer-version.txt" 2>&1
  proven memcheck DISABLED_OutOfBoundsWrite "out-of-bounds write" || return 4
  counted memcheck "test_vector_add_gpu" "$build/test_vector_add_gpu" --gtest_filter="-$DELIBERATE_API_FAILURES"
  counted memcheck "raw kernels, cuBLAS, Thrust, the device copies, host copies, the flow" "$build/bench" "$min" \
    --benchmark_filter='^(VectorAdd/(cuda|cublas|thrust)[^/]*/n:16777216/|Copy/cuda_[a-z0-9]+/n:16777216/|Transfer/.*/bytes:16384/|VectorAddFlow/pinned/n:65536/)'
  [ "${HAVE_torch:-0}" = 1 ] && counted memcheck "torch add" "$build/bench" "$min" \
    --benchmark_filter='^VectorAdd/torch_cuda/n:16777216/'
  sanitizer_result
}

# Right after memcheck: initcheck on the GPU tests, then racecheck on the
# kernel tests (cuda_v8 stages its tiles in shared memory), each once it
# has caught its canary.
step_sanitize() {
  local rcs=() unsupported=""
  proven initcheck DISABLED_UninitialisedRead "read of uninitialised memory" || return 4
  proven racecheck DISABLED_SharedMemoryRace "race on shared memory" || return 4
  counted initcheck "test_vector_add_gpu" "$build/test_vector_add_gpu" --gtest_filter="-$DELIBERATE_API_FAILURES"
  counted racecheck "the kernel tests" "$build/test_vector_add_gpu" --gtest_filter='*GpuVectorAdd.*'
  sanitizer_result
}

# The report and the doctor on a machine the preflight found healthy: an
# error verdict is a set-up problem (3); each message names its scenario
# and finds no cause here (exit 1), and exit 0 would be a false alarm.
step_env() {
  "$build/bench" --env > "$res/env.txt" 2>&1
  "$build/bench" --env=json --env-out "$res/env.json" || return 3
  sed -n '1,3p' "$res/env.txt"
  if ! "$build/bench" --env --check > /dev/null 2>&1; then
    echo "bench --env --check found an error verdict:"
    grep -A3 'ERROR' "$res/env.txt" | head -n 20
    return 3
  fi
  local msg rc out
  for msg in "Error 804: forward compatibility was attempted on non supported HW" \
             "Error 802: system not yet initialized" \
             "RuntimeError: CUDA error: no kernel image is available for execution on the device" \
             "Failed to initialize NVML: Driver/library version mismatch"; do
    out="$("$build/bench" --explain "$msg" 2>&1)"
    rc=$?
    printf '%s\nexit %s\n' "$out" "$rc" >> "$res/explain.txt"
    [ "$rc" = 0 ] || { echo "bench --explain '$msg' exited $rc on this machine (0 expected)"; return 3; }
    case "$out" in
      *"None of these causes shows on this machine"*) ;;
      *) echo "bench --explain '$msg' found a cause on this healthy machine (a false alarm)"; return 1 ;;
    esac
  done
}

# bench_json NAME ARGS...: a bench run writing NAME.json and NAME.txt.
bench_json() {
  local name="$1"; shift
  "$build/bench" "$@" --benchmark_out="$res/$name.json" --benchmark_out_format=json > "$res/$name.txt" 2>&1
}

# expect NAME PATTERN...: every pattern has a row in NAME.json that passed.
expect() {
  local name="$1"; shift
  python3 scripts/expect_rows.py "$res/$name.json" "$@"
}

# What the headline and bench steps run (a filter) and the rows they
# expect (patterns), one function each: `gpu-check-steps.sh rows STEP`
# prints both, and the gpu_check test lists a fake GPU's rows with them.
# The headline rows come first, in a run of their own, so that a later stop
# keeps them: VectorAdd and the device copies at 1e7 and at two DRAM-bound
# sizes, 2^26 and 2^27 (13x and 26x an H200's L2 in an add's 12 bytes an
# element), the 40 MB pinned copy.
# Then the other sizes, the flows and the host copies.
headline_filter() {
  echo "^(VectorAdd/(${ADD_IMPLS// /|})/n:$headline/|Copy/(${COPY_IMPLS// /|})/n:$headline/|Transfer/h2d_pinned/bytes:40000000/|Launch/empty_kernel/)"
}
headline_rows() {
  rows VectorAdd "$ADD_IMPLS" n "$headline"
  rows Copy "$COPY_IMPLS" n "$headline"
  echo '^Transfer/h2d_pinned/bytes:40000000/'
  rows Launch empty_kernel launches '(1|64)'
}
bench_filter() {
  echo "^(VectorAdd/(${ADD_IMPLS// /|})/n:$sizes/|Copy/(${COPY_IMPLS// /|})/n:$sizes/|VectorAddFlow/(pinned|pageable)/n:$flow_sizes/|Transfer/.*/bytes:(16384|4194304|536870912)/|Transfer/(h2d_pageable|d2h_pinned|d2h_pageable)/bytes:40000000/)"
}
bench_rows() {
  rows VectorAdd "$ADD_IMPLS" n "$sizes"
  rows Copy "$COPY_IMPLS" n "$sizes"
  rows VectorAddFlow "pinned pageable" n "$flow_sizes"
  rows Transfer "h2d_pinned h2d_pageable d2h_pinned d2h_pageable" bytes '(16384|4194304|536870912)'
  rows Transfer "h2d_pageable d2h_pinned d2h_pageable" bytes '(40000000)'
}
# measured NAME STEP PROCESSES: the step's rows on every GPU, one sample
# each from PROCESSES bench processes (samples.py, as the default run takes
# them: the machine's reference is made of such samples), each row it
# expects there, passed, with no impossible figure.
measured() {
  local a=0 b=0
  # A job of its own: the step's timeout (TERM) is passed on and waited
  # for (lib.sh, up to 15 s), so samples.py writes what finished, partial.
  stop_jobs_on_signal
  run_job python3 scripts/samples.py run --bench "$build/bench" --processes "$3" --filter "$("$2_filter")" \
    --out "$res/$1.json" -- --devices all > "$res/$1.txt" 2>&1 || a=$?
  expect "$1" $("$2_rows" | per_gpu) || b=$?
  worst "$a" "$b"
}
step_headline() { measured vector_add_headline headline 2; }
step_bench() { measured vector_add bench 2; }

# rows FAMILY IMPLS ARG "(v1|v2)": the name patterns of those rows.
rows() {
  local impl v
  for impl in $2; do
    for v in $(tr -d '()' <<< "$4" | tr '|' ' '); do echo "^$1/$impl/$3:$v/"; done
  done
}

# The patterns on standard input, one per GPU of a run on all of them
# where there are several (their names end in /dev:D).
per_gpu() {
  local p d n
  n="$(gpus)"
  while read -r p; do
    if [ "$n" -le 1 ]; then echo "$p"; else for ((d = 0; d < n; d++)); do echo "${p}dev:$d/"; done; fi
  done
}

# The GPUs the check runs on: those CUDA_VISIBLE_DEVICES lists, else the
# preflight's count.
gpus() {
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .; else echo "${GPU_COUNT:-1}"; fi
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
      esac && mv "$out.tmp.$$" "$out" || { rm -f "$out.tmp.$$"; echo "cannot unpack $f" >&2; return 3; }
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

# The same model and loop in Python (scripts/train_mnist.py under the
# preflight's python, whose torch gave LibTorch), eager and compiled
# (torch.compile, mode reduce-overhead: CUDA graphs), 3 epochs each: the
# goals are build/train's median epoch against these, in one run.
step_train-py() {
  local a=0 b=4 py
  py="$(python_with_torch)"
  probe 60 "$py" -c "import numpy" > /dev/null 2>&1 || { echo "skipped: $py has no numpy (train_mnist.py reads with it)"; return 4; }
  "$py" scripts/train_mnist.py --device cuda --epochs 3 --json "$res/train_py_cuda.json" > "$res/train_py_cuda.txt" 2>&1 || a=$?
  if probe 60 "$py" -c "import triton" > /dev/null 2>&1; then
    b=0
    "$py" scripts/train_mnist.py --device cuda --epochs 3 --compile --json "$res/train_py_compiled.json" \
      > "$res/train_py_compiled.txt" 2>&1 || b=$?
  else
    echo "skipped: the compiled run: $py has no triton (torch.compile's GPU code)"
  fi
  tail -n 1 "$res/train_py_cuda.txt" "$res/train_py_compiled.txt" 2> /dev/null
  [ "$b" != 4 ] || { worst "$a" || return $?; return 4; }  # the eager run's failure, else the skip
  worst "$a" "$b"
}

# The training-step benchmarks on the GPU; the CPU row at batch 64 is a
# control, never a stand-in for the GPU rows.
step_mnist() {
  local a=0 b=0
  bench_json mnist --benchmark_repetitions=2 \
    --benchmark_filter='^MnistTrain/cuda[a-z0-9_]*/batch:(64|1024)/|^MnistEval/cuda/|^MnistTrain/cpu/batch:64/' || a=$?
  expect mnist $(rows MnistTrain "$MNIST_VARIANTS" batch '(64|1024)') '^MnistEval/cuda/' || b=$?
  worst "$a" "$b"
}

# Above 8x L2 a VectorAdd is one launch after an L2 flush: read and memset
# flushes in alternating processes, the process as the unit.
step_flush-ab() {
  local filter='^VectorAdd/(cuda_v4|cublas_geam)/n:134217728/' i=0 rcs=() mode rc
  for mode in read memset memset read; do
    i=$((i + 1)); rc=0
    bench_json "flush_${mode}_$i" --l2-flush "$mode" --benchmark_repetitions=2 --benchmark_filter="$filter" || rc=$?
    rcs+=("$rc")
    rc=0
    expect "flush_${mode}_$i" '^VectorAdd/cuda_v4/n:134217728/' '^VectorAdd/cublas_geam/n:134217728/' || rc=$?
    rcs+=("$rc")
  done
  worst "${rcs[@]}"
}

# Data-parallel train: over NCCL at one rank, the throughput (no replica
# check); the replica check, which needs two ranks to compare anything
# (check_sync); then the scaling series when there is more than one GPU.
step_ddp() {
  local a=0 b=0 c=0 n ranks=1 k
  local one=(env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "$build/train" --device cuda --backend nccl --quiet)
  MASTER_PORT=29517 "${one[@]}" --epochs 2 --json "$res/train_ddp_nccl1.json" > "$res/train_ddp_nccl1.txt" 2>&1 || a=$?
  n="$(gpus)"
  check_sync "$n" || b=$?
  for k in 2 4 8 16; do [ "$k" -le "$n" ] && ranks="$ranks,$k"; done
  if [ "$ranks" = 1 ]; then
    echo "one GPU: no scaling series"
  else
    python3 scripts/ddp_scaling.py --device cuda --ranks "$ranks" --repetitions 3 --epochs 2 --train "$build/train" \
      --out "$res/ddp-scaling" > "$res/ddp_scaling.txt" 2>&1 || c=$?
  fi
  worst "$a" "$b" "$c"
}

# check_sync GPUS: train --check-sync on two ranks, one process each, into
# train_ddp_check.json (rank 0's) and train_ddp_check_rank<R>.txt: over
# NCCL, a GPU each, where there are two GPUs; on one, both ranks on GPU 0
# over Gloo with CUDA tensors (NCCL refuses two ranks on one device).
check_sync() {
  local backend=nccl device=cuda r rc=0 w pids=()
  if [ "$1" -lt 2 ]; then backend=gloo device=cuda:0; fi
  echo "replica check: 2 ranks over $backend on $device"
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 "$build/train" --device "$device" \
      --backend "$backend" --epochs 1 --limit 4096 --check-sync --quiet --json "$res/train_ddp_check.json" \
      > "$res/train_ddp_check_rank$r.txt" 2>&1 &
    pids+=("$!")
  done
  for r in 0 1; do
    wait "${pids[$r]}" || { w=$?; [ "$rc" = 1 ] || rc=$w; }
  done
  return "$rc"
}

# Faults the tests of the check inject: CUDABENCH_TEST_GPU_CHECK_FAULT=STEP:hang
# (a step that overruns its limit), STEP:fail (one that exits 7) or
# STEP:loaded (one whose rows ran beside other load, exit 5).
case "${CUDABENCH_TEST_GPU_CHECK_FAULT:-}" in
  "${1:-}:hang") echo "injected: hangs"; sleep 3600 ;;
  "${1:-}:fail") echo "injected: fails"; exit 7 ;;
  "${1:-}:loaded") echo "injected: Inconclusive: 1 of 1 rows ran beside other load"; exit 5 ;;
esac
# The steps that read the dataset get its folder, and only they.
case "${1:-}" in
  train|train-py|mnist|ddp|tests) CUDABENCH_DATA_DIR="$(dataset)" || exit 3; export CUDABENCH_DATA_DIR ;;
esac
case "${1:-}" in
  preflight|build|tests|memcheck|env|headline|bench|flush-ab|train|train-py|mnist|ddp|sanitize) "step_$1" ;;
  rows) case "${2:-}" in headline|bench) "${2}_filter"; "${2}_rows" | per_gpu ;; *) echo "gpu-check-steps: rows headline|bench" >&2; exit 2 ;; esac ;;
  *) echo "gpu-check-steps: ${1:-}: no such step" >&2; exit 2 ;;
esac
