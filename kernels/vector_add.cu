// GPU side of vector_add: kernels, launchers and the dispatcher. The header
// (vector_add.cuh) describes the variants and holds the per-thread bodies;
// vector_add_cpu.cpp holds the CPU reference and the launch geometry.
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device_shape.cuh"
#include "vector_add.cuh"

namespace cudabench::vector_add {

// ---- kernels ----
__global__ void vector_add_kernel1(const float* __restrict__ a,
                                   const float* __restrict__ b,
                                   float* __restrict__ c, std::size_t n) {
  body_one_per_element(a, b, c, n,
                       static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x);
}

// v2 and v3 share the grid-stride kernel; they differ in launch shape.
__global__ void vector_add_kernel_grid_stride(const float* __restrict__ a,
                                              const float* __restrict__ b,
                                              float* __restrict__ c,
                                              std::size_t n) {
  body_grid_stride(a, b, c, n,
                   static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                   static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

__global__ void vector_add_kernel4(const float* __restrict__ a,
                                   const float* __restrict__ b,
                                   float* __restrict__ c, std::size_t n) {
  body_float4(a, b, c, n,
              static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
              static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

// ---- launchers ----
using hd::device_shape;
using hd::DeviceShape;

void vector_add1(const float* a, const float* b, float* c, std::size_t n,
                 unsigned block_size, cudaStream_t stream) {
  const LaunchShape s = launch_shape(1, n, block_size, 1, 1);
  if (s.grid == 0) return;
  vector_add_kernel1<<<s.grid, s.block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

void vector_add2(const float* a, const float* b, float* c, std::size_t n,
                 unsigned block_size, cudaStream_t stream) {
  const LaunchShape s = launch_shape(2, n, block_size, 1, 1);
  if (s.grid == 0) return;
  vector_add_kernel_grid_stride<<<s.grid, s.block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

void vector_add3(const float* a, const float* b, float* c, std::size_t n,
                 unsigned block_size, cudaStream_t stream) {
  const DeviceShape d = device_shape(vector_add_kernel_grid_stride, block_size);
  const LaunchShape s = launch_shape(3, n, block_size, d.sms, d.blocks_per_sm);
  if (s.grid == 0) return;
  vector_add_kernel_grid_stride<<<s.grid, s.block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

void vector_add4(const float* a, const float* b, float* c, std::size_t n,
                 unsigned block_size, cudaStream_t stream) {
  const DeviceShape d = device_shape(vector_add_kernel4, block_size);
  const LaunchShape s = launch_shape(4, n, block_size, d.sms, d.blocks_per_sm);
  if (s.grid == 0) return;
  vector_add_kernel4<<<s.grid, s.block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

// ---- dispatcher ----
void vector_add(int variant, const float* a, const float* b, float* c,
                std::size_t n, unsigned block_size, cudaStream_t stream) {
  switch (variant) {
    case 1: vector_add1(a, b, c, n, block_size, stream); break;
    case 2: vector_add2(a, b, c, n, block_size, stream); break;
    case 3: vector_add3(a, b, c, n, block_size, stream); break;
    case 4: vector_add4(a, b, c, n, block_size, stream); break;
    default:
      throw std::invalid_argument("unknown vector_add variant " +
                                  std::to_string(variant) + " (known: 1..4)");
  }
}

}  // namespace cudabench::vector_add
