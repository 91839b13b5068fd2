// device_check's kernels (device_check.cuh): the fill and the compare.
#include <algorithm>
#include <limits>

#include "cuda_check.h"
#include "device_check.cuh"

namespace cudabench::device_check {
namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned long long kNone = std::numeric_limits<unsigned long long>::max();

// A block per kBlock elements of a set, at most 65535: each thread strides.
unsigned grid_for(std::size_t n) { return static_cast<unsigned>(std::min<std::size_t>(hd::ceil_div(n, kBlock), 65535)); }

__global__ void fill_kernel(float* p, std::size_t n, std::size_t stride, int sets, std::uint64_t seed) {
  const std::size_t step = std::size_t{gridDim.x} * blockDim.x;
  for (int k = 0; k < sets; ++k)
    for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
      p[k * stride + i] = input_value(seed, i);
}

__global__ void compare_kernel(Op op, Seeds s, const float* c, std::size_t n, std::size_t stride, int sets,
                               unsigned long long* first) {
  const std::size_t g = first_wrong_strided(op, s, c, n, stride, sets, std::size_t{blockIdx.x} * blockDim.x + threadIdx.x,
                                            std::size_t{gridDim.x} * blockDim.x, kNone);
  if (g != kNone) atomicMin(first, static_cast<unsigned long long>(g));
}

}  // namespace

void fill(float* p, std::size_t n, std::size_t stride, int sets, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0 || sets <= 0) return;
  fill_kernel<<<grid_for(n), kBlock, 0, stream>>>(p, n, stride, sets, seed);
  CUDA_CHECK(cudaGetLastError());
}

Wrong first_wrong(Op op, const Seeds& s, const float* c, std::size_t n, std::size_t stride, int sets,
                  unsigned long long* scratch, cudaStream_t stream) {
  Wrong w;
  if (n == 0 || sets <= 0) return w;
  unsigned long long first = kNone;
  CUDA_CHECK(cudaMemsetAsync(scratch, 0xFF, sizeof first, stream));  // kNone
  compare_kernel<<<grid_for(n), kBlock, 0, stream>>>(op, s, c, n, stride, sets, scratch);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpyAsync(&first, scratch, sizeof first, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first == kNone) return w;
  w.set = static_cast<int>(first / n);
  w.index = first % n;
  CUDA_CHECK(cudaMemcpyAsync(&w.got, c + w.set * stride + w.index, sizeof w.got, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return w;
}

}  // namespace cudabench::device_check
