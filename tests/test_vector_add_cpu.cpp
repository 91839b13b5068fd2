// The CPU reference, the OpenMP SIMD variant and the result check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "vector_add.cuh"

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
