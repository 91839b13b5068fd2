#!/usr/bin/env bash
# The stack matrix: build bench and train once per stack, run the same
# benchmarks with each, interleaved in rounds, and compare them side by side,
# naming every CUDA in play: the driver's, the kernels' toolkit, LibTorch's.
#
#   scripts/matrix.sh                             # the chosen stack and the other LibTorch CUDA major's
#   scripts/matrix.sh --stack 13.0:2.11.0 --stack 13.0:2.10.0
#   scripts/matrix.sh --stack 13.2:2.11.0 --stack 13.0:2.11.0    # kernels from PyPI's CUDA 13.2
#   scripts/matrix.sh -- --benchmark_filter=VectorAdd/cuda_v4
#
# A stack is CUDA:TORCH: the kernels' CUDA (the system nvcc's major.minor,
# or one NVIDIA's PyPI wheels carry: 13.0 and later) and a LibTorch of the
# table in scripts/stacks.py (docs/stacks.md). The default: the stack
# scripts/setup.sh chose, and the newest one of the other LibTorch CUDA major.
# Each stack gets its venv and toolkit from scripts/setup.sh (CUDABENCH_STACK)
# and its build in $CUDABENCH_CACHE/stacks/<stack>/build-<clone>, so that no
# stack rebuilds another. CUDABENCH_MATRIX_ROUNDS rounds (default 5), merged
# into results/matrix/<machine>/<gpu|cpu>/<stack>.json with the stack's
# environment report beside it (.env.txt); then the stacks' table
# (stacks.md), compare.py's side by side (compare.md), report.py's plots.
# The CPU rows run everywhere (CPU kernels, torch_cpu, MnistTrain/cpu); with
# a GPU also the CUDA kernels, cuBLAS, Thrust, torch_cuda, MnistTrain/cuda.
# Exit codes: 0 done; 1 a wrong result; 2 bad arguments or a stack this
# machine cannot have; 3 set-up or a build failed.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
cd "$CUDABENCH_ROOT"

stacks=()
bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --stack) [ $# -ge 2 ] || { echo "matrix: --stack needs CUDA:TORCH" >&2; exit 2; }
             stacks+=("$2"); shift 2 ;;
    --stack=*) stacks+=("${1#*=}"); shift ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) usage_from_header; exit 0 ;;
    *) echo "matrix: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
rounds="$(setting CUDABENCH_MATRIX_ROUNDS)" || exit  # 2 a bad value, 3 no python3
if [ "${#stacks[@]}" -eq 0 ]; then  # the default pair
  bash scripts/setup.sh
  chosen="$(python3 scripts/stacks.py matrix)" || exit $(( $? == 2 ? 2 : 3 ))
  mapfile -t stacks <<<"$chosen"
fi
# Each one this machine can have, and once, before anything is installed.
names=()
for s in "${stacks[@]}"; do
  stack_plan --stack "$s" || exit
  case " ${names[*]} " in *" ${STACK[stack]} "*) echo "matrix: --stack $s: ${STACK[stack]} twice" >&2; exit 2 ;; esac
  names+=("${STACK[stack]}")
done

machine="$(machine_label)" || exit $?
cpu_rows='VectorAdd/(cpu_scalar|cpu_omp_simd|torch_cpu)/n:(1048576|10000000)/|MnistTrain/cpu/batch:64/'
gpu_rows='VectorAdd/(cuda_v[1-4]|cublas_geam|thrust|torch_cuda)/n:(1048576|10000000|134217728)/|Transfer/h2d_pinned/bytes:40000000/|MnistTrain/cuda/batch:64/'
if nvidia_smi -L >/dev/null 2>&1; then
  device=gpu; filter="^($cpu_rows|$gpu_rows)"
else
  device=cpu; filter="^($cpu_rows)"
fi
out="results/matrix/$machine/$device"
mkdir -p "$out"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stop_jobs_on_signal  # a signal stops the running build or bench at once

# ---- one build per stack ----
clone="$(printf %s "$CUDABENCH_ROOT" | cksum | cut -d' ' -f1)"
dirs=()
for s in "${stacks[@]}"; do
  CUDABENCH_STACK="$s" bash scripts/setup.sh  # in the foreground: sudo may ask for a password
  stack_plan --stack "$s" || exit
  [ -n "${py:-}" ] || py="${STACK[venv]}/bin/python"  # compare.py and report.py: the first stack's
  name="${STACK[stack]}"
  dir="$(cache_dir)/stacks/$name/build-$clone"
  echo "matrix: $s: ${STACK[why]}; building in $dir" >&2
  CUDABENCH_BUILD_TARGET=programs run_job configure_and_build "$dir" -DCUDABENCH_BUILD_TESTS=OFF >"$tmp/build.log" \
    || { rc=$?; tail -n 40 "$tmp/build.log" >&2; exit "$rc"; }
  cudart="$(sed -n 's/^CUDA_cudart_LIBRARY:FILEPATH=//p' "$dir/CMakeCache.txt")"
  case "$(readlink -f "$cudart")" in
    ""|"$(readlink -f "${STACK[toolkit_root]}")"/*) ;;
    *) echo "matrix: $dir linked libcudart from $cudart, not from ${STACK[toolkit_root]}; refusing to mix toolkits" >&2; exit 3 ;;
  esac
  probe 60 "$dir/bench" --env > "$out/$name.env.txt.tmp" && mv "$out/$name.env.txt.tmp" "$out/$name.env.txt"
  dirs+=("$dir")
done

# ---- interleaved rounds: every stack once per round, in turn, so that slow
# drift of a shared machine falls on all of them alike ----
start_progress matrix "bench runs"
for r in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    say_progress $(( (r - 1) * ${#names[@]} + i )) $(( rounds * ${#names[@]} )) "round $r/$rounds, ${names[$i]} next"
    run_job "${dirs[$i]}/bench" --benchmark_filter="$filter" --benchmark_min_time="${CUDABENCH_MIN_TIME:-0.1}" \
      --benchmark_out="$tmp/${names[$i]}.$r.json" --benchmark_out_format=json "${bench_args[@]}" \
      >/dev/null 2>>"$tmp/${names[$i]}.log" || { rc=$?; cat "$tmp/${names[$i]}.log" >&2; exit "$rc"; }
  done
done
say_progress $(( rounds * ${#names[@]} )) $(( rounds * ${#names[@]} )) "the rounds"
stop_progress
files=()
for name in "${names[@]}"; do
  "$py" scripts/matrix.py merge "$out/$name.json" $(seq -f "$tmp/$name.%g.json" 1 "$rounds")
  files+=("$out/$name.json")
done

"$py" scripts/matrix.py summary "${files[@]}" --markdown "$out/stacks.md"
labels="$("$py" scripts/matrix.py labels "${files[@]}")"
echo
if [ "${#files[@]}" -ge 2 ]; then
  "$py" scripts/compare.py "${files[@]}" --labels "$labels" --report-only --markdown "$out/compare.md"
fi
driver="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["context"].get("cuda_driver", "?"))' "${files[0]}")"
"$py" scripts/report.py "${files[@]}" --labels "$labels" --out "$out" --title "Stack matrix on $machine ($device), driver: $driver"
