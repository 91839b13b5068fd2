// GPU side of stream_cover (see stream_cover.cuh).
#include "cuda_check.h"
#include "stream_cover.cuh"

namespace cudabench::stream_cover {
namespace {

__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct GlobalTimer {
  __device__ std::uint64_t operator()() const { return global_ns(); }
};
struct Nap {
  __device__ void operator()() const { __nanosleep(256); }
};

__global__ void delay_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = global_ns();
  while (global_ns() - t0 < ns) __nanosleep(256);
}

__global__ void empty_kernel() {}

__global__ void gate_kernel(GateFlags* flags, std::uint64_t timeout_ns) {
  const volatile GateFlags* f = flags;
  const bool opened = wait_open(&f->open, global_ns() + timeout_ns, GlobalTimer{}, Nap{});
  flags->timed_out = opened ? 0u : 1u;
  __threadfence_system();
}

}  // namespace

void delay(std::uint64_t ns, cudaStream_t stream) {
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  CUDA_CHECK(cudaGetLastError());
}

void empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CUDA_CHECK(cudaGetLastError());
}

void gate(GateFlags* flags, std::uint64_t timeout_ns, cudaStream_t stream) {
  gate_kernel<<<1, 1, 0, stream>>>(flags, timeout_ns);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cudabench::stream_cover
