// GPU side of vector_add: one kernel template over the per-thread bodies,
// its launcher, and the dispatcher, all derived from the variant table
// (CUDABENCH_GPU_VARIANTS in vector_add.cuh).
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device_shape.cuh"
#include "vector_add.cuh"

namespace cudabench::vector_add {

template <class Body>
__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::size_t n) {
  Body::run(a, b, c, n, static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
            static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

// Sizes the grid as `grid` says (asking the device only for the shapes that
// depend on it), launches on `stream` and checks the launch.
template <class Body>
void launch(Grid grid, const float* a, const float* b, float* c, std::size_t n, unsigned block_size,
            cudaStream_t stream) {
  hd::DeviceShape d;
  if (grid == Grid::Resident || grid == Grid::ResidentFloat4) d = hd::device_shape(vector_add_kernel<Body>, block_size);
  const LaunchShape s = launch_shape(grid, n, block_size, d.sms, d.blocks_per_sm);
  if (s.grid == 0) return;
  vector_add_kernel<Body><<<s.grid, s.block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

template <class Body>
__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ c, std::size_t n) {
  Body::run(a, c, n, static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
            static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

void copy(CopyKernel kernel, const float* a, float* c, std::size_t n, unsigned block_size, cudaStream_t stream) {
  const bool vec = kernel == CopyKernel::Float4;
  const LaunchShape s = launch_shape(vec ? Grid::Float4Tiles : Grid::PerElement, n, block_size, 0, 0);
  if (s.grid == 0) return;
  if (vec) copy_kernel<CopyFloat4><<<s.grid, s.block, 0, stream>>>(a, c, n);
  else copy_kernel<CopyOnePerElement><<<s.grid, s.block, 0, stream>>>(a, c, n);
  CUDA_CHECK(cudaGetLastError());
}

void vector_add(int variant, const float* a, const float* b, float* c, std::size_t n, unsigned block_size,
                cudaStream_t stream) {
  switch (variant) {
#define CUDABENCH_CASE(id, name, grid, body, description) \
  case id: return launch<body>(grid, a, b, c, n, block_size, stream);
    CUDABENCH_GPU_VARIANTS(CUDABENCH_CASE)
#undef CUDABENCH_CASE
    default: gpu_variant(variant);  // throws: unknown
  }
}

}  // namespace cudabench::vector_add
