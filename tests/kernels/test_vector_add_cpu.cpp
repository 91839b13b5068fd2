// The CPU reference, the OpenMP SIMD variant and the result check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/vector_add.cuh"

namespace va = cudabench::vector_add;

namespace {
std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-100.f, 100.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
}  // namespace

TEST(VectorAddCpu, ReferenceAddsEveryElement) {
  for (std::size_t n : {0u, 1u, 3u, 5u, 17u, 1000u, 100003u}) {
    auto a = random_vec(n, 1), b = random_vec(n, 2);
    std::vector<float> c(n, std::numeric_limits<float>::quiet_NaN());
    va::cpu_reference(a.data(), b.data(), c.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "n=" << n << " i=" << i;
  }
}

TEST(VectorAddCpu, OmpSimdMatchesReferenceBitForBit) {
  for (std::size_t n : {0u, 1u, 7u, 64u, 1023u, 1u << 20}) {
    auto a = random_vec(n, 3), b = random_vec(n, 4);
    std::vector<float> c(n, std::numeric_limits<float>::quiet_NaN());
    va::cpu_omp_simd(a.data(), b.data(), c.data(), n);
    EXPECT_EQ(va::first_mismatch(a.data(), b.data(), c.data(), n), n) << "n=" << n;
  }
  EXPECT_GE(va::cpu_threads(), 1);
}

TEST(VectorAddCpu, FirstMismatchFindsPoisonAndWrongValues) {
  const std::size_t n = 100;
  auto a = random_vec(n, 5), b = random_vec(n, 6);
  std::vector<float> c(n);
  va::cpu_reference(a.data(), b.data(), c.data(), n);
  EXPECT_EQ(va::first_mismatch(a.data(), b.data(), c.data(), n), n);
  c[42] = std::numeric_limits<float>::quiet_NaN();  // an element never written
  EXPECT_EQ(va::first_mismatch(a.data(), b.data(), c.data(), n), 42u);
  c[42] = a[42] + b[42];
  c[99] = std::nextafter(c[99], 1e9f);  // one ulp off is wrong: addition is exact
  EXPECT_EQ(va::first_mismatch(a.data(), b.data(), c.data(), n), 99u);
}

TEST(VectorAddCpu, ByteAccountingIsTwelveBytesPerElement) {
  EXPECT_EQ(va::kArraysRead, 2);
  EXPECT_EQ(va::kArraysWritten, 1);
  EXPECT_EQ(va::kBytesPerElement, 12u);
}

// The streaming-store variants: every size around the vector width and the
// 64-byte split between threads, and c at every 4-byte offset within a
// 32-byte vector, so the scalar head, the vector body and the tail all run.
TEST(VectorAddCpu, NonTemporalAddAndCopyMatchAtEveryAlignmentAndTail) {
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 15u, 16u, 17u, 33u, 1000u, 65537u}) {
    auto a = random_vec(n + 8, 7), b = random_vec(n + 8, 8);
    for (std::size_t off = 0; off < 8; ++off) {
      std::vector<float> store(n + 8, kNan);
      float* c = store.data() + off;
      va::cpu_omp_nt(a.data() + off, b.data(), c, n);
      ASSERT_EQ(va::first_mismatch(a.data() + off, b.data(), c, n), n) << "n=" << n << " offset=" << off;
      for (std::size_t i = n + off; i < store.size(); ++i)
        ASSERT_TRUE(std::isnan(store[i])) << "wrote past the end: n=" << n << " offset=" << off;
      for (std::size_t i = 0; i < off; ++i) ASSERT_TRUE(std::isnan(store[i])) << "wrote before the start";
      std::fill(store.begin(), store.end(), kNan);
      va::cpu_copy_nt(a.data() + off, c, n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[off + i]) << "copy n=" << n << " i=" << i;
      for (std::size_t i = n + off; i < store.size(); ++i) ASSERT_TRUE(std::isnan(store[i]));
    }
  }
  const std::string isa = va::cpu_nt_isa();
  EXPECT_TRUE(isa == "avx2" || isa == "sse2" || isa == "none") << isa;
}
