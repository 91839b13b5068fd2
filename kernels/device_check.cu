// device_check's kernels (device_check.cuh): the fill and the compare.
#include <algorithm>
#include <limits>

#include "cuda_check.h"
#include "device_check.cuh"

namespace cudabench::device_check {
namespace {

constexpr unsigned kBlock = 256;
constexpr unsigned long long kNone = std::numeric_limits<unsigned long long>::max();

// The grid over `sets` outputs of n elements: x over the elements, y over
// the sets, each capped (threads stride in x, blocks in y).
dim3 grid_of(std::size_t n, int sets) {
  return dim3(static_cast<unsigned>(std::min<std::size_t>(hd::ceil_div(n, kBlock), 65535)),
              static_cast<unsigned>(std::min(sets, 65535)));
}

__device__ std::size_t element_of_thread() { return std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ std::size_t threads_per_set() { return std::size_t{gridDim.x} * blockDim.x; }

__global__ void fill_kernel(float* p, std::size_t n, std::size_t stride, int sets, std::uint64_t seed) {
  for (int k = blockIdx.y; k < sets; k += gridDim.y)
    for (std::size_t i = element_of_thread(); i < n; i += threads_per_set()) p[k * stride + i] = input_value(seed, i);
}

// Each thread's first wrong element, counted across sets (k x n + i): a
// thread's later sets can only give higher ones.
__global__ void compare_kernel(Op op, Seeds s, const float* c, std::size_t n, std::size_t stride, int sets,
                               unsigned long long* first) {
  for (int k = blockIdx.y; k < sets; k += gridDim.y) {
    const std::size_t i = first_wrong_in(op, s, c + k * stride, n, element_of_thread(), threads_per_set(), kNone);
    if (i != kNone) {
      atomicMin(first, static_cast<unsigned long long>(k * n + i));
      return;
    }
  }
}

}  // namespace

void fill(float* p, std::size_t n, std::size_t stride, int sets, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0 || sets <= 0) return;
  fill_kernel<<<grid_of(n, sets), kBlock, 0, stream>>>(p, n, stride, sets, seed);
  CUDA_CHECK(cudaGetLastError());
}

Wrong first_wrong(Op op, const Seeds& s, const float* c, std::size_t n, std::size_t stride, int sets,
                  unsigned long long* scratch, cudaStream_t stream) {
  Wrong w;
  if (n == 0 || sets <= 0) return w;
  unsigned long long first = kNone;
  CUDA_CHECK(cudaMemsetAsync(scratch, 0xFF, sizeof first, stream));  // kNone
  compare_kernel<<<grid_of(n, sets), kBlock, 0, stream>>>(op, s, c, n, stride, sets, scratch);
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
