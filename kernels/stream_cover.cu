// GPU side of stream_delay (see stream_delay.cuh).
#include "cuda_check.h"
#include "stream_delay.cuh"

namespace cudabench::stream_delay {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stream_delay_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = global_ns();
  while (global_ns() - t0 < ns) __nanosleep(256);
}

void delay(std::uint64_t ns, cudaStream_t stream) {
  stream_delay_kernel<<<1, 1, 0, stream>>>(ns);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cudabench::stream_delay
