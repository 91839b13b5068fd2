// GPU side of l2_flush (see l2_flush.cuh): the read kernel and its launcher.
#include "cuda_check.h"
#include "device_shape.cuh"
#include "l2_flush.cuh"

namespace cudabench::l2_flush {

__global__ void l2_flush_read_kernel(const hd::Vec4* __restrict__ p, std::size_t n, float* sink) {
  const float acc = body_read(p, n, static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                              static_cast<std::size_t>(gridDim.x) * blockDim.x);
  if (acc == kSentinel) *sink = acc;
}

void read(const void* buf, std::size_t bytes, float* sink, cudaStream_t stream) {
  constexpr unsigned kBlock = 256;
  const hd::DeviceShape d = hd::device_shape(l2_flush_read_kernel, kBlock);
  l2_flush_read_kernel<<<static_cast<unsigned>(d.sms * d.blocks_per_sm), kBlock, 0, stream>>>(
      static_cast<const hd::Vec4*>(buf), bytes / 16, sink);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cudabench::l2_flush
