// l2_flush: evict the L2 cache before a timed kernel, so that no size
// silently measures the cache (the benchmarks' --l2-flush).
//
// Bytes per flush: a buffer of twice the L2 size (at least 64 MiB).
//   read   : l2_flush_read_kernel reads every 16 bytes of the buffer once and
//            writes nothing: the lines it leaves in L2 are clean, so the
//            timed kernel that follows pays no write-back (the default).
//   memset : cudaMemsetAsync writes the buffer: it leaves up to an L2 of dirty
//            lines (50-60 MB on an H200) that the timed kernel must write back
//            to memory, on top of its own traffic (kept as an option).
// The per-thread body is __host__ __device__ so a host test can check that
// the threads of a launch cover every word exactly once.
#pragma once

#include <cstddef>

#include "host_device.cuh"

namespace cudabench::l2_flush {

// Thread `tid` of `nthreads` reads words tid, tid + nthreads, ... of `p` (n
// 16-byte words) and returns their sum, which the kernel stores only if it
// equals an impossible value: the loads cannot be optimised away.
CUDABENCH_HD float body_read(const hd::Vec4* p, std::size_t n, std::size_t tid, std::size_t nthreads) {
  float acc = 0.0f;
  for (std::size_t i = tid; i < n; i += nthreads) {
    const hd::Vec4 v = p[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  return acc;
}

// The sink's sentinel: body_read never returns it for the buffer the
// benchmarks fill (every byte 0x5a).
constexpr float kSentinel = -1.0e30f;

#ifdef CUDABENCH_HAVE_CUDA
// Reads `bytes` (a multiple of 16) of `buf` on `stream`; `sink` is one float
// of device memory.
void read(const void* buf, std::size_t bytes, float* sink, cudaStream_t stream);
#endif

}  // namespace cudabench::l2_flush
