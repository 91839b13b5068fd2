#!/usr/bin/env bash
# The GPU check: one command for a GPU machine, which may have no package
# registry (its own CMake, ninja, nvcc and a python3 with PyTorch are enough).
#
# Here, once:   scripts/setup.sh && scripts/vendor-deps.sh   (fills .deps/)
# There:        bash scripts/gpu-check.sh [OUT_DIR]          (carry .deps along)
#
# It builds (Release, LibTorch from python3's torch), prints the environment
# report, runs the whole test suite (GPU tests included), the vector-add, copy
# and training benchmarks, a 10-epoch GPU training run eager and with a CUDA
# graph, and the Python loop for the C++/Python ratio. Everything goes to
# results/gpu-check/<machine>/ (and, when $OUT is set, a tarball of it plus
# summary.txt into $OUT). The summary table is printed last.
# CUDABENCH_GPU_CHECK_QUICK=1 runs fewer sizes and epochs.
set -uo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
cd "$CUDABENCH_ROOT"
machine="$(machine_label)"
out="${1:-results/gpu-check/$machine}"
mkdir -p "$out"
status=0
step() { echo "== $*" >&2; }
note_fail() { echo "gpu-check: FAILED: $*" | tee -a "$out/summary.txt" >&2; status=1; }
: > "$out/summary.txt"
quick="${CUDABENCH_GPU_CHECK_QUICK:-0}"
epochs=10; [ "$quick" = 1 ] && epochs=2
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

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv \
  > "$out/nvidia-smi.csv" 2>&1 || echo "no nvidia-smi" > "$out/nvidia-smi.csv"
cat "$out/nvidia-smi.csv" >&2

step "build"
t0=$(date +%s)
extra=()
[ -n "${CUDABENCH_FORCE_VENDORED:-}" ] && extra+=(-DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON)
if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDABENCH_CACHE_DIR=/nonexistent \
         "${extra[@]}" ${CUDABENCH_GPU_CHECK_CMAKE_ARGS:-} && cmake --build build-gpu -j "$(nproc)"; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  note_fail "build (see build.log)"
  exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$out/summary.txt" >&2
grep -E '^-- cudabench:' "$out/build.log" >&2

step "environment report"
build-gpu/bench --env > "$out/env.txt" 2>&1
build-gpu/bench --env=json --env-out "$out/env.json"
build-gpu/bench --env --check >/dev/null 2>&1 || note_fail "bench --env --check found an error verdict"
sed -n '1,3p' "$out/env.txt" >&2

step "tests"
(cd build-gpu && ctest --output-on-failure -j 4) > "$out/ctest.log" 2>&1 || note_fail "tests (see ctest.log)"
grep -E 'tests passed|tests failed' "$out/ctest.log" | tee -a "$out/summary.txt" >&2
grep -cE '\(Skipped\)' "$out/ctest.log" | sed 's/^/skipped tests: /' | tee -a "$out/summary.txt" >&2

step "vector add and copies"
sizes='(4096|65536|1048576|4194304|10000000|16777216|67108864|134217728)'
[ "$quick" = 1 ] && sizes='(1048576|10000000|134217728)'
build-gpu/bench --benchmark_filter="^(VectorAdd|VectorAddFlow)/.*/n:$sizes/|^Transfer/.*/bytes:(4194304|40000000|536870912)/" \
  --benchmark_repetitions=3 --benchmark_min_time=0.05 --benchmark_out="$out/vector_add.json" \
  --benchmark_out_format=json > "$out/vector_add.txt" 2>&1 || note_fail "vector add / copy benchmarks"

step "training benchmarks"
build-gpu/bench --benchmark_filter='^MnistTrain/cuda[a-z0-9_]*/batch:(64|256|1024)/|^MnistEval/cuda/|^MnistTrain/cpu/batch:64/' \
  --benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_out="$out/mnist.json" \
  --benchmark_out_format=json > "$out/mnist.txt" 2>&1 || note_fail "training benchmarks"

step "training runs ($epochs epochs)"
build-gpu/train --device cuda --epochs "$epochs" --quiet --json "$out/train_cuda.json" > "$out/train_cuda.txt" 2>&1 || note_fail "train --device cuda"
build-gpu/train --device cuda --cuda-graph --epochs "$epochs" --quiet --json "$out/train_cuda_graph.json" > "$out/train_cuda_graph.txt" 2>&1 || note_fail "train --device cuda --cuda-graph"
python3 scripts/train_mnist.py --device cuda --epochs "$(( epochs < 3 ? epochs : 3 ))" --json "$out/train_py_cuda.json" > "$out/train_py_cuda.txt" 2>&1 || note_fail "train_mnist.py --device cuda"

step "report"
python3 scripts/report.py "$out/vector_add.json" --out "$out/plots" --title "GPU check on $machine" > /dev/null 2>&1 || true
python3 scripts/gpu_summary.py "$out" | tee -a "$out/summary.txt"
if [ -n "${OUT:-}" ] && [ "$out" != "$OUT" ]; then
  tar czf "$OUT/gpu-check.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
  cp "$out/summary.txt" "$OUT/summary.txt"
fi
exit $status
