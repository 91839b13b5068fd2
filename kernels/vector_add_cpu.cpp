// CPU side of vector_add (see vector_add.cuh): the reference, the OpenMP
// variants and the result check. Builds without CUDA.
#include <omp.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "vector_add.cuh"

namespace cudabench::vector_add {

// A plain scalar loop: GCC's auto-vectoriser is switched off for this one
// function so that "scalar" means one element per instruction.
__attribute__((optimize("no-tree-vectorize"))) void cpu_reference(
    const float* a, const float* b, float* c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void cpu_omp_simd(const float* a, const float* b, float* c, std::size_t n) {
  const std::ptrdiff_t m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) c[i] = a[i] + b[i];
}

int cpu_threads() { return omp_get_max_threads(); }

namespace {

// One thread's share [lo, hi) of c = a (+ b) with streaming stores: scalar
// until c is aligned to the vector, streaming vector stores, a scalar tail,
// then a store fence so the stores are visible when the thread ends.
#if defined(__x86_64__)
template <bool kAdd>
__attribute__((target("avx2"))) void stream_avx2(const float* a, const float* b,
                                                 float* c, std::size_t lo,
                                                 std::size_t hi) {
  std::size_t i = lo;
  for (; i < hi && (reinterpret_cast<std::uintptr_t>(c + i) & 31) != 0; ++i)
    c[i] = kAdd ? a[i] + b[i] : a[i];
  for (; i + 16 <= hi; i += 16) {
    __m256 x0 = _mm256_loadu_ps(a + i);
    __m256 x1 = _mm256_loadu_ps(a + i + 8);
    if constexpr (kAdd) {
      x0 = _mm256_add_ps(x0, _mm256_loadu_ps(b + i));
      x1 = _mm256_add_ps(x1, _mm256_loadu_ps(b + i + 8));
    }
    _mm256_stream_ps(c + i, x0);
    _mm256_stream_ps(c + i + 8, x1);
  }
  for (; i < hi; ++i) c[i] = kAdd ? a[i] + b[i] : a[i];
  _mm_sfence();
}

template <bool kAdd>
void stream_sse2(const float* a, const float* b, float* c, std::size_t lo,
                 std::size_t hi) {
  std::size_t i = lo;
  for (; i < hi && (reinterpret_cast<std::uintptr_t>(c + i) & 15) != 0; ++i)
    c[i] = kAdd ? a[i] + b[i] : a[i];
  for (; i + 4 <= hi; i += 4) {
    __m128 x = _mm_loadu_ps(a + i);
    if constexpr (kAdd) x = _mm_add_ps(x, _mm_loadu_ps(b + i));
    _mm_stream_ps(c + i, x);
  }
  for (; i < hi; ++i) c[i] = kAdd ? a[i] + b[i] : a[i];
  _mm_sfence();
}

bool have_avx2() {
  static const bool v = __builtin_cpu_supports("avx2");
  return v;
}
#endif

template <bool kAdd>
void stream_range(const float* a, const float* b, float* c, std::size_t lo,
                  std::size_t hi) {
#if defined(__x86_64__)
  if (have_avx2())
    stream_avx2<kAdd>(a, b, c, lo, hi);
  else
    stream_sse2<kAdd>(a, b, c, lo, hi);
#else
  for (std::size_t i = lo; i < hi; ++i) c[i] = kAdd ? a[i] + b[i] : a[i];
#endif
}

// Contiguous shares, split at 64-byte (16-float) boundaries, one per thread:
// each thread's stores fill whole cache lines of its own.
template <bool kAdd>
void stream_threads(const float* a, const float* b, float* c, std::size_t n) {
  if (n == 0) return;
#pragma omp parallel
  {
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t lines = (n + 15) / 16;
    const std::size_t lo = std::min(n, (lines * t / nt) * 16);
    const std::size_t hi = std::min(n, (lines * (t + 1) / nt) * 16);
    if (lo < hi) stream_range<kAdd>(a, b, c, lo, hi);
  }
}

}  // namespace

void cpu_omp_nt(const float* a, const float* b, float* c, std::size_t n) {
  stream_threads<true>(a, b, c, n);
}

void cpu_copy_nt(const float* a, float* c, std::size_t n) {
  stream_threads<false>(a, nullptr, c, n);
}

const char* cpu_nt_isa() {
#if defined(__x86_64__)
  return have_avx2() ? "avx2" : "sse2";
#else
  return "none";
#endif
}

std::size_t first_mismatch(const float* a, const float* b, const float* c,
                           std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float want = a[i] + b[i];
    // Compare values, and NaN (the poison) never equals anything.
    if (!(c[i] == want)) return i;
  }
  return n;
}

std::size_t first_copy_mismatch(const float* a, const float* c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&a[i], &c[i], sizeof(float)) != 0) return i;
  return n;
}

}  // namespace cudabench::vector_add
