// The GPU variant table as the host sees it (names, launch shapes, the
// per-thread bodies for host tests), from CUDABENCH_GPU_VARIANTS in
// vector_add.cuh. Builds without CUDA.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "vector_add.cuh"

namespace cudabench::vector_add {

const std::vector<Variant>& gpu_variants() {
#define CUDABENCH_ROW(id, name, grid, body, description) Variant{id, name, grid, &body::run, description},
  static const std::vector<Variant> v = {CUDABENCH_GPU_VARIANTS(CUDABENCH_ROW)};
#undef CUDABENCH_ROW
  return v;
}

std::vector<int> gpu_variant_ids() {
  std::vector<int> ids;
  for (const auto& v : gpu_variants()) ids.push_back(v.id);
  return ids;
}

const Variant& gpu_variant(int id) {
  for (const auto& v : gpu_variants())
    if (v.id == id) return v;
  throw std::invalid_argument("unknown vector_add variant " + std::to_string(id) + " (known: 1.." +
                              std::to_string(gpu_variants().size()) + ")");
}

LaunchShape launch_shape(Grid g, std::size_t n, unsigned block_size, int sms, int blocks_per_sm) {
  if (block_size == 0 || block_size > 1024)
    throw std::invalid_argument("block size must be 1..1024, got " + std::to_string(block_size));
  if (n == 0) return {0, block_size};
  const std::size_t resident = static_cast<std::size_t>(std::max(sms, 1)) * std::max(blocks_per_sm, 1);
  std::size_t grid = 0;
  switch (g) {
    case Grid::PerElement: grid = ceil_div(n, block_size); break;
    case Grid::Seed: return {kSeedGrid, kSeedBlock};
    case Grid::Resident: grid = std::min(ceil_div(n, block_size), resident); break;
    case Grid::ResidentFloat4: grid = std::min(ceil_div(ceil_div(n, 4), block_size), resident); break;
    case Grid::Float4Tiles: grid = ceil_div(ceil_div(n, 4), std::size_t{block_size} * kUnroll); break;
  }
  if (grid > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("n = " + std::to_string(n) + " needs more blocks than a grid allows");
  return {static_cast<unsigned>(grid), block_size};
}

LaunchShape launch_shape(int variant, std::size_t n, unsigned block_size, int sms, int blocks_per_sm) {
  return launch_shape(gpu_variant(variant).grid, n, block_size, sms, blocks_per_sm);
}

}  // namespace cudabench::vector_add
