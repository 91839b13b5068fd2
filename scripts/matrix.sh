#!/usr/bin/env bash
# The toolkit matrix: build bench once per CUDA toolkit install, run the same
# benchmarks with each, and compare them side by side.
#
#   scripts/matrix.sh                       # every toolkit with nvcc found, plus a pip one
#   scripts/matrix.sh --toolkit /opt/cuda-12.9 --toolkit /usr/local/cuda-13.0
#   scripts/matrix.sh -- --benchmark_filter=VectorAdd/cuda_v4
#
# Toolkits: those the environment report's discovery finds with a compiler
# (bench --env=json), plus CUDA $CUDABENCH_MATRIX_PIP (default 13.2.2) from
# NVIDIA's PyPI wheels (the cuda-toolkit meta-package with nvcc, cudart,
# cublas, cccl, crt, nvvm), installed into .toolkits/cuda-<version> in this
# clone the way a user's pip environment holds its own toolkit (downloads stay
# in ~/.cache/pip). CUDABENCH_MATRIX_PIP=none skips it. --toolkit ROOT names
# the toolkits instead (repeatable).
#
# The builds run in interleaved rounds (CUDABENCH_MATRIX_ROUNDS, default 5:
# each build once per round, in turn), merged into one file per toolkit with
# the rounds as repetitions. Each toolkit gets build-matrix/<name> (scripts/matrix_toolkits.py names it:
# cuda-<version>, or cuda-<version>-pip / -conda; no LibTorch, no tests: the
# kernels and libraries are what differ). Results go to
# results/matrix/<machine>/<gpu or cpu>/<name>.json with the build's
# environment report beside it (.env.txt), then compare.py prints the
# side-by-side table and report.py writes plots and report.md there.
# Without a GPU the CPU benchmarks run; with one, the GPU ones.
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
cd "$CUDABENCH_ROOT"

roots=()
bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --toolkit|--toolkit=*)
      if [ "$1" = --toolkit ]; then
        [ $# -ge 2 ] || { echo "matrix: --toolkit needs a folder" >&2; exit 2; }
        dir="$2"; shift 2
      else
        dir="${1#*=}"; shift
      fi
      [ -d "$dir" ] || { echo "matrix: --toolkit $dir: no such folder" >&2; exit 2; }
      roots+=("$(cd "$dir" && pwd -P)") ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "matrix: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bash scripts/setup.sh
py="$(project_python)"

# ---- a toolkit from PyPI wheels ----
pip_root=""
pipver="${CUDABENCH_MATRIX_PIP:-13.2.2}"
if [ "${#roots[@]}" -eq 0 ] && [ "$pipver" != none ]; then
  tk=".toolkits/cuda-$pipver"
  if ! ls "$tk"/lib/python3*/site-packages/nvidia/cu*/bin/nvcc >/dev/null 2>&1; then
    echo "matrix: installing CUDA $pipver from PyPI wheels into $tk" >&2
    rm -rf "$tk"
    python3 -m venv "$tk"
    "$tk/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$tk/bin/python" -m pip install -q "cuda-toolkit[nvcc,cudart,cublas,cccl,crt,culibos,nvvm]==$pipver"
  fi
  pip_root="$(cd "$(dirname "$(ls "$tk"/lib/python3*/site-packages/nvidia/cu*/bin/nvcc | head -n1)")/.." && pwd -P)"
  # The wheels carry only versioned libraries (libcudart.so.13); the linker
  # and CMake's find_library need the unversioned development names, or they
  # silently take another toolkit's library from the system paths.
  for f in "$pip_root"/lib/lib*.so.[0-9]*; do
    base="${f%%.so.*}.so"
    [ -e "$base" ] || ln -s "$(basename "$f")" "$base"
  done
fi

# ---- discovery: the environment report of the default build ----
# Named roots are added to the discovery, so the report describes them too.
configure_and_build build >/dev/null
extra="$(IFS=:; echo "${roots[*]:-}")${pip_root:+:$pip_root}"
mapfile -t plan < <(CUDABENCH_EXTRA_TOOLKITS="$extra" build/bench --env=json \
  | "$py" "$CUDABENCH_ROOT/scripts/matrix_toolkits.py" --plan "${roots[@]}")
[ "${#plan[@]}" -gt 0 ] || exit 2  # matrix_toolkits.py said why

machine="$(machine_label)"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device="gpu"; else device="cpu"; fi
out="results/matrix/$machine/$device"
mkdir -p "$out"
if [ "$device" = gpu ]; then
  filter='^(VectorAdd/(cuda_v[1-4]|cublas_geam|thrust)/n:(1048576|10000000|134217728)/|Transfer/h2d_pinned/bytes:40000000/)'
else
  filter='^VectorAdd/cpu_(scalar|omp_simd)/n:(1048576|10000000)/'
fi

names=()
for entry in "${plan[@]}"; do
  root="${entry%%$'\t'*}"
  name="${entry#*$'\t'}"
  dir="build-matrix/$name"
  echo "matrix: $name at $root -> $dir" >&2
  configure_and_build "$dir" -DCUDABENCH_ENABLE_TORCH=OFF -DCUDABENCH_BUILD_TESTS=OFF \
    -DCMAKE_CUDA_COMPILER="$root/bin/nvcc" -DCUDAToolkit_ROOT="$root" >/dev/null
  cudart="$(sed -n 's/^CUDA_cudart_LIBRARY:FILEPATH=//p' "$dir/CMakeCache.txt")"
  case "$(readlink -f "$cudart")" in
    "$(readlink -f "$root")"/*) ;;
    *) echo "matrix: $dir linked libcudart from $cudart, not from $root; refusing to mix toolkits" >&2; exit 3 ;;
  esac
  CUDABENCH_EXTRA_TOOLKITS="$root" "$dir/bench" --env > "$out/$name.env.txt"
  echo "matrix: $name: $(grep -E '^  (built with|loaded) ' "$out/$name.env.txt" | sed 's/^ *//; s/  */ /g' | paste -sd';' -)" >&2
  names+=("$name")
done

# Interleaved rounds: every build runs once per round, in turn, so slow drift
# of a shared machine falls on all toolkits alike.
rounds="${CUDABENCH_MATRIX_ROUNDS:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  echo "matrix: round $r/$rounds" >&2
  for name in "${names[@]}"; do
    "build-matrix/$name/bench" --benchmark_filter="$filter" --benchmark_min_time="${CUDABENCH_MIN_TIME:-0.1}" \
      --benchmark_out="$tmp/$name.$r.json" --benchmark_out_format=json "${bench_args[@]}" \
      >/dev/null 2>>"$tmp/$name.log" || { rc=$?; cat "$tmp/$name.log" >&2; exit "$rc"; }
  done
done
files=()
labels=()
for name in "${names[@]}"; do
  "$py" scripts/matrix_toolkits.py --merge "$out/$name.json" $(seq -f "$tmp/$name.%g.json" 1 "$rounds")
  files+=("$out/$name.json")
  labels+=("$name")
done

label_list="$(IFS=,; echo "${labels[*]}")"
if [ "${#files[@]}" -ge 2 ]; then
  "$py" scripts/compare.py "${files[@]}" --labels "$label_list" --report-only --markdown "$out/compare.md"
fi
"$py" scripts/report.py "${files[@]}" --labels "$label_list" --out "$out" --title "Toolkit matrix on $machine ($device)"
