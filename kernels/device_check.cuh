// device_check: the GPU rows' inputs made on the device and their outputs
// checked there, so a row never moves its arrays through the host.
//
// Inputs: element i of a stream `seed` is SplitMix64's i-th value for that
// seed, scaled to [-1000, 1000): the host's fill_random (bench_support)
// gives the same bits, so a CPU reference can be made from the same seeds.
// Check: what element i of an output must hold is known from i alone (an
// add: a's value plus b's, rounded to float as every correct add rounds; a
// copy: a's value), so a compare kernel needs no copy of the inputs, and
// reports the first element whose bits differ (poison, NaN, never passes).
// The bodies are __host__ __device__: host tests hold them to the CPU
// reference (cpu_reference, first_mismatch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host_device.cuh"

namespace cudabench::device_check {

// SplitMix64 (Steele, Lea and Flood 2014): its i-th output for `seed`.
CUDABENCH_HD std::uint64_t splitmix64(std::uint64_t seed, std::size_t i) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(i) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element i of input stream `seed`: a value in [-1000, 1000). The 53 bits
// become a double in [-0.5, 0.5) exactly; one multiply, the only rounding
// before the float's, leaves nothing to fuse into an FMA: host and device
// give the same bits.
CUDABENCH_HD float input_value(std::uint64_t seed, std::size_t i) {
  const double centred = static_cast<double>(splitmix64(seed, i) >> 11) * 0x1.0p-53 - 0.5;  // exact
  return static_cast<float>(centred * 2000.0);
}

// What a row's output holds: c = a + b, or c = a.
enum class Op { Add, Copy };
struct Seeds {
  std::uint64_t a, b;
};
// The value element i of an output must hold.
CUDABENCH_HD float expected(Op op, const Seeds& s, std::size_t i) {
  const float x = input_value(s.a, i);
  return op == Op::Copy ? x : x + input_value(s.b, i);
}

CUDABENCH_HD std::uint32_t bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

// Whether output element i is right: its bits are the expected value's.
CUDABENCH_HD bool element_right(Op op, const Seeds& s, const float* c, std::size_t i) {
  return bits(c[i]) == bits(expected(op, s, i));
}

// The first wrong element among those thread `tid` of `nthreads` checks
// (grid-stride) of one output of n elements, or `none` when all are right.
CUDABENCH_HD std::size_t first_wrong_in(Op op, const Seeds& s, const float* c, std::size_t n, std::size_t tid,
                                        std::size_t nthreads, std::size_t none) {
  for (std::size_t i = tid; i < n; i += nthreads)
    if (!element_right(op, s, c, i)) return i;
  return none;
}

#ifdef CUDABENCH_HAVE_CUDA
// Fills `sets` copies of input stream `seed` (n elements each, set k at
// p + k x stride) on `stream`.
void fill(float* p, std::size_t n, std::size_t stride, int sets, std::uint64_t seed, cudaStream_t stream);

// A wrong element: which set, which element, what it held.
struct Wrong {
  int set = -1;  // -1: every element right
  std::size_t index = 0;
  float got = 0;
};
// Checks `sets` outputs of n elements, set k at c + k x stride, on
// `stream` (each thread's first wrong element by first_wrong_in, the
// lowest kept) and waits for the answer: the first wrong element.
// `scratch` is 8 bytes of the current device's memory.
Wrong first_wrong(Op op, const Seeds& s, const float* c, std::size_t n, std::size_t stride, int sets,
                  unsigned long long* scratch, cudaStream_t stream);
#endif

}  // namespace cudabench::device_check
