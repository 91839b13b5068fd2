// CPU side of vector_add (see vector_add.cuh): the reference, the OpenMP SIMD
// variant, the result check and the launch geometry. Builds without CUDA.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "vector_add.cuh"

namespace cudabench::vector_add {

// A plain scalar loop: GCC's auto-vectoriser is switched off for this one
// function so that "scalar" means one element per instruction.
__attribute__((optimize("no-tree-vectorize"))) void cpu_reference(
    const float* a, const float* b, float* c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void cpu_omp_simd(const float* a, const float* b, float* c, std::size_t n) {
  const std::ptrdiff_t m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) c[i] = a[i] + b[i];
}

int cpu_threads() { return omp_get_max_threads(); }

std::size_t first_mismatch(const float* a, const float* b, const float* c,
                           std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float want = a[i] + b[i];
    // Compare values, and NaN (the poison) never equals anything.
    if (!(c[i] == want)) return i;
  }
  return n;
}

LaunchShape launch_shape(int variant, std::size_t n, unsigned block_size,
                         int sms, int blocks_per_sm) {
  if (block_size == 0 || block_size > 1024)
    throw std::invalid_argument("block size must be 1..1024, got " +
                                std::to_string(block_size));
  if (n == 0) return {0, block_size};
  const std::size_t resident =
      static_cast<std::size_t>(std::max(sms, 1)) * std::max(blocks_per_sm, 1);
  std::size_t grid = 0;
  switch (variant) {
    case 1: grid = ceil_div(n, block_size); break;
    case 2: return {kSeedGrid, kSeedBlock};
    case 3: grid = std::min(ceil_div(n, block_size), resident); break;
    case 4: grid = std::min(ceil_div(ceil_div(n, 4), block_size), resident); break;
    default:
      throw std::invalid_argument("unknown vector_add variant " +
                                  std::to_string(variant) + " (known: 1..4)");
  }
  if (grid > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("n = " + std::to_string(n) +
                                " needs more blocks than a grid allows");
  return {static_cast<unsigned>(grid), block_size};
}

const std::vector<VariantInfo>& gpu_variants() {
  static const std::vector<VariantInfo> v = {
      {1, "cuda_v1", "one thread per element, grid = ceil(n / block)"},
      {2, "cuda_v2", "seed's <<<512,512>>> launch, grid-stride so any n is covered"},
      {3, "cuda_v3", "grid-stride, grid = SMs x resident blocks per SM"},
      {4, "cuda_v4", "float4 loads/stores, grid-stride, SMs x resident blocks, scalar tail"},
  };
  return v;
}

}  // namespace cudabench::vector_add
