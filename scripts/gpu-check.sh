#!/usr/bin/env bash
# The GPU check: one command for a GPU machine that is lent for minutes and
# may have no package registry (its own CMake, ninja, nvcc and a python3
# with PyTorch are enough). Its first run must produce every number and
# every diagnostic in one go.
#
# Here, once:   scripts/setup.sh && scripts/vendor-deps.sh   (fills .deps/)
# There:        bash scripts/gpu-check.sh [OUT_DIR]          (carry .deps along)
#
# Steps, in order of value; after each one the output folder (OUT_DIR, else
# $OUT, else the results folder itself) gets a fresh gpu-check.tar.gz of
# everything so far and summary.txt, each written whole, so a run stopped at
# any point leaves what it measured in two files:
#   machine    nvidia-smi (and -q), compute-sanitizer's version
#   build      Release, for this GPU's architecture only (a shorter build)
#   env        the environment report (text, JSON, --check: no error verdict
#              on a healthy GPU machine), and bench --explain on real
#              messages (exit 1 on a healthy machine: no cause here)
#   tests      the whole CTest suite, GPU tests included
#   bench      vector add (every implementation, 5 sizes), copies, the seed's
#              flow, on every GPU (--devices all), 3 repetitions
#   train      10-epoch MNIST training on the GPU, eager and with a CUDA graph
#   ddp        data-parallel train over NCCL: one rank with the replica check
#              (the all-reduce time at world size 1), then ddp_scaling.py
#              over 1 .. all GPUs (1 2 4 8 ...), 3 interleaved runs each
#   mnist      the training-step benchmarks (every variant, batches 64-1024)
#   flush-ab   the L2 flush A/B: read vs memset at 2^20, 1e7 and 2^27 in
#              interleaved processes (read memset memset read)
#   sanitize   compute-sanitizer memcheck and racecheck over the GPU tests,
#              memcheck over a short bench run
#   python     the Python reference loop (C++/Python throughput ratio)
# Results go to results/gpu-check/<machine>/; summary.txt puts each headline
# number beside its goal (scripts/gpu_summary.py).
#
# Environment:
#   CUDABENCH_GPU_CHECK_BUDGET   seconds; a step that would start later is
#                                skipped and says so (default 540)
#   CUDABENCH_GPU_CHECK_QUICK=1  fewer sizes, 2 epochs
#   CUDABENCH_GPU_CHECK_ARCHS    CUDA architectures to build (default: the
#                                GPU's own, e.g. 90-real)
#   CUDABENCH_GPU_CHECK_CMAKE_ARGS, CUDABENCH_FORCE_VENDORED=1 (build from
#                                .deps/ only, to rehearse off the GPU machine)
# Exit: 0 every step ran and passed; 1 a test, a benchmark check or a
# sanitizer found a wrong result; 3 the build or a step broke.
set -uo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
cd "$CUDABENCH_ROOT"
start=$(date +%s)
budget="${CUDABENCH_GPU_CHECK_BUDGET:-540}"
quick="${CUDABENCH_GPU_CHECK_QUICK:-0}"
machine="$(machine_label)" || exit 2
res="results/gpu-check/$machine"
dest="${1:-${OUT:-$res}}"
mkdir -p "$res" "$dest"
rm -f "$res"/steps.txt
status=0
export PYTHONUNBUFFERED=1

elapsed() { echo $(( $(date +%s) - start )); }
log() { echo "gpu-check [$(elapsed) s]: $*" >&2; }
# One line per step in steps.txt: name, result, seconds.
record() { printf '%-10s %-8s %4d s  %s\n' "$1" "$2" "$3" "${4:-}" >> "$res/steps.txt"; }
wrong() { status=1; }                           # a wrong result
broke() { [ "$status" = 1 ] || status=3; }      # a step that could not run
# The two files in $dest, each written whole.
snapshot() {
  python3 scripts/gpu_summary.py "$res" > "$dest/summary.txt.tmp" 2> "$res/summary.err" \
    || echo "(summary failed: see summary.err)" >> "$dest/summary.txt.tmp"
  mv "$dest/summary.txt.tmp" "$dest/summary.txt"
  [ "$dest" = "$res" ] && return
  tar czf "$dest/gpu-check.tar.gz.tmp" -C "$(dirname "$res")" "$(basename "$res")" && \
    mv "$dest/gpu-check.tar.gz.tmp" "$dest/gpu-check.tar.gz"
}
trap 'snapshot; exit 130' INT TERM
# run_step NAME ESTIMATE_S COMMAND...: skipped when it would end past the budget.
run_step() {
  local name="$1" est="$2"; shift 2
  local t0; t0=$(elapsed)
  if [ $(( t0 + est )) -gt "$budget" ]; then
    log "$name: skipped (would end past the ${budget} s budget)"
    record "$name" skipped 0 "budget"
    snapshot
    return 0
  fi
  log "$name"
  local rc=0
  "$@" || rc=$?
  local took=$(( $(elapsed) - t0 ))
  case "$rc" in
    0) record "$name" ok "$took" ;;
    1) record "$name" WRONG "$took" "a check failed"; wrong ;;
    *) record "$name" BROKE "$took" "exit $rc"; broke ;;
  esac
  snapshot
  return 0
}

epochs=10; [ "$quick" = 1 ] && epochs=2
sizes='(4096|1048576|16777216|10000000|134217728)'
[ "$quick" = 1 ] && sizes='(1048576|10000000|134217728)'

# The dataset, unpacked to plain IDX files (the GPU image may lack zlib's
# headers, and the reader needs zlib only for .gz).
for src in .deps/fashion-mnist /usr/share/datasets/fashion-mnist; do
  if [ -d "$src" ]; then
    data="${TMPDIR:-/tmp}/cudabench-fashion-mnist"
    mkdir -p "$data"
    for f in "$src"/*; do
      case "$f" in
        *.gz) [ -f "$data/$(basename "$f" .gz)" ] || gzip -dc "$f" > "$data/$(basename "$f" .gz)" ;;
        *) cp -n "$f" "$data/" ;;
      esac
    done
    export CUDABENCH_DATA_DIR="$data"
    break
  fi
done

step_machine() {
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem,clocks.max.sm,power.limit,persistence_mode --format=csv \
    > "$res/nvidia-smi.csv" 2>&1 || echo "no nvidia-smi" > "$res/nvidia-smi.csv"
  nvidia-smi -q > "$res/nvidia-smi-q.txt" 2>&1 || true
  { compute-sanitizer --version 2>&1 || echo "no compute-sanitizer"; } > "$res/compute-sanitizer-version.txt"
  cat "$res/nvidia-smi.csv" >&2
}

step_build() {
  local archs="${CUDABENCH_GPU_CHECK_ARCHS:-}"
  if [ -z "$archs" ]; then
    local cc
    cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')"
    [ -n "$cc" ] && archs="${cc}-real"
  fi
  local extra=()
  [ -n "$archs" ] && extra+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
  [ -n "${CUDABENCH_FORCE_VENDORED:-}" ] && extra+=(-DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON)
  if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDABENCH_CACHE_DIR=/nonexistent \
           "${extra[@]}" ${CUDABENCH_GPU_CHECK_CMAKE_ARGS:-} && cmake --build build-gpu -j "$(nproc)"; } > "$res/build.log" 2>&1; then
    tail -40 "$res/build.log" >&2
    return 3
  fi
  grep -E '^-- cudabench:' "$res/build.log" >&2
}

step_env() {
  build-gpu/bench --env > "$res/env.txt" 2>&1
  build-gpu/bench --env=json --env-out "$res/env.json" || return 3
  sed -n '1,3p' "$res/env.txt" >&2
  build-gpu/bench --env --check > /dev/null 2>&1 || { log "bench --env --check found an error verdict"; return 1; }
  # The doctor on a healthy machine: each message names its scenario and
  # finds no cause here (exit 1); exit 0 would be a false alarm.
  local msg rc
  for msg in "Error 804: forward compatibility was attempted on non supported HW" \
             "Error 802: system not yet initialized" \
             "RuntimeError: CUDA error: no kernel image is available for execution on the device" \
             "Failed to initialize NVML: Driver/library version mismatch"; do
    build-gpu/bench --explain "$msg" >> "$res/explain.txt" 2>&1
    rc=$?
    echo "exit $rc" >> "$res/explain.txt"
    [ "$rc" = 1 ] || { log "bench --explain '$msg' exited $rc on this machine (1 expected: no cause here)"; return 1; }
  done
}

step_tests() {
  (cd build-gpu && ctest --output-on-failure -j 8 --timeout 300) > "$res/ctest.log" 2>&1
  local rc=$?
  grep -E 'tests passed|tests failed' "$res/ctest.log" >&2
  [ "$rc" = 0 ] || return 1
}

# bench_json NAME ARGS...: a bench run writing NAME.json and NAME.txt.
bench_json() {
  local name="$1"; shift
  build-gpu/bench "$@" --benchmark_out="$res/$name.json" --benchmark_out_format=json > "$res/$name.txt" 2>&1
}

step_bench() {
  bench_json vector_add --devices all --benchmark_repetitions=3 \
    --benchmark_filter="^(VectorAdd|VectorAddFlow)/(cuda|cublas|thrust|torch_cuda|pinned|pageable)[^/]*/n:$sizes/|^Transfer/.*/bytes:(16384|4194304|40000000|536870912)/"
}

# worst RC...: 1 if any is 1 (a wrong result), else 3 if any failed, else 0.
worst() {
  local w=0 rc
  for rc in "$@"; do
    if [ "$rc" = 1 ]; then w=1; elif [ "$rc" != 0 ] && [ "$w" = 0 ]; then w=3; fi
  done
  return $w
}

step_train() {
  local a=0 b=0
  build-gpu/train --device cuda --epochs "$epochs" --quiet --json "$res/train_cuda.json" > "$res/train_cuda.txt" 2>&1 || a=$?
  build-gpu/train --device cuda --cuda-graph --epochs "$epochs" --quiet --json "$res/train_cuda_graph.json" \
    > "$res/train_cuda_graph.txt" 2>&1 || b=$?
  worst "$a" "$b"
}

step_ddp() {
  local a=0 b=0 n ranks=1
  RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
    build-gpu/train --device cuda --backend nccl --epochs 2 --check-sync --quiet --json "$res/train_ddp_nccl1.json" \
    > "$res/train_ddp_nccl1.txt" 2>&1 || a=$?
  tail -3 "$res/train_ddp_nccl1.txt" >&2
  n="$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)"
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then  # what train will see, not what nvidia-smi lists
    n="$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)"
  fi
  for k in 2 4 8 16; do [ "$k" -le "$n" ] && ranks="$ranks,$k"; done
  python3 scripts/ddp_scaling.py --device cuda --ranks "$ranks" --repetitions 3 --epochs 2 --train build-gpu/train \
    --out "$res/ddp-scaling" > "$res/ddp_scaling.txt" 2>&1 || b=$?
  worst "$a" "$b"
}

step_mnist() {
  bench_json mnist --benchmark_repetitions=3 \
    --benchmark_filter='^MnistTrain/cuda[a-z0-9_]*/batch:(64|256|1024)/|^MnistEval/cuda/|^MnistTrain/cpu/batch:64/'
}

# Read and memset flushes in alternating processes, the process as the unit.
step_flush_ab() {
  local filter='^VectorAdd/(cuda_v4|cublas_geam)/n:(1048576|10000000|134217728)/'
  local i=0 rcs=()
  for mode in read memset memset read; do
    i=$((i + 1))
    local rc=0
    bench_json "flush_${mode}_$i" --l2-flush "$mode" --benchmark_repetitions=3 --benchmark_filter="$filter" || rc=$?
    rcs+=("$rc")
  done
  worst "${rcs[@]}"
}

step_sanitize() {
  local rc=0
  if ! command -v compute-sanitizer > /dev/null 2>&1; then
    echo "compute-sanitizer not found" > "$res/sanitizer.txt"
    return 3
  fi
  local san=(compute-sanitizer --error-exitcode 1 --print-limit 20)
  {
    # --error-exitcode 1: a finding is exit 1 (a wrong result); a tool that
    # could not run gives its own code.
    echo "== memcheck: test_vector_add_gpu"
    "${san[@]}" --tool memcheck build-gpu/test_vector_add_gpu 2>&1 || rc=$?
    echo "== racecheck: test_vector_add_gpu"
    "${san[@]}" --tool racecheck build-gpu/test_vector_add_gpu 2>&1 || rc=$?
    echo "== memcheck: bench, every GPU implementation at 2^16 and 1e7, small copies"
    "${san[@]}" --tool memcheck build-gpu/bench --benchmark_min_time=0.001 \
      --benchmark_filter='^(VectorAdd/(cuda|cublas|thrust)[^/]*/n:(65536|10000000)/|Transfer/.*/bytes:16384/|VectorAddFlow/pinned/n:65536/)' 2>&1 || rc=$?
  } > "$res/sanitizer.txt"
  grep -E 'ERROR SUMMARY' "$res/sanitizer.txt" >&2
  return $rc
}

step_python() {
  python3 scripts/train_mnist.py --device cuda --epochs "$(( epochs < 3 ? epochs : 3 ))" --json "$res/train_py_cuda.json" \
    > "$res/train_py_cuda.txt" 2>&1 || return 3
}

step_plots() {
  python3 scripts/report.py "$res/vector_add.json" --out "$res/plots" --title "GPU check on $machine" > /dev/null 2>&1 || return 3
}

run_step machine 10 step_machine
run_step build 240 step_build
if ! grep -q '^build *ok' "$res/steps.txt"; then
  log "the build failed: see $res/build.log"
  exit 3
fi
run_step env 15 step_env
run_step tests 100 step_tests
run_step bench 90 step_bench
run_step train 40 step_train
run_step ddp 45 step_ddp
run_step mnist 60 step_mnist
run_step flush-ab 45 step_flush_ab
run_step sanitize 60 step_sanitize
run_step python 30 step_python
run_step plots 20 step_plots
log "done in $(elapsed) s"
cat "$dest/summary.txt"
exit $status
