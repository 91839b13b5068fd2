// Helpers for code that runs on the device and, in tests, on the host: the
// __host__ __device__ marker, a 16-byte vector of four floats, ceil_div and
// an alignment test. Plain C++ compilers see equivalent definitions.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define CUDABENCH_HD __host__ __device__ __forceinline__
#define CUDABENCH_UNROLL _Pragma("unroll")
#else
#define CUDABENCH_HD inline
#define CUDABENCH_UNROLL
#endif

#ifdef CUDABENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cudabench::hd {

CUDABENCH_HD std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// A 16-byte vector of four floats: CUDA's float4 on the device, an equivalent
// aligned struct on a host compiler.
#if defined(__CUDACC__)
using Vec4 = float4;
#else
struct alignas(16) Vec4 {
  float x, y, z, w;
};
#endif

CUDABENCH_HD bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

}  // namespace cudabench::hd
