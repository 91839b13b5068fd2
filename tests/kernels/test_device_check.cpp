// device_check's bodies on the host: the inputs are SplitMix64's streams,
// what an output must hold is the CPU reference's answer, and the compare
// finds the first wrong element of any set, poison included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/device_check.cuh"
#include "kernels/vector_add.cuh"

namespace dc = cudabench::device_check;

TEST(DeviceCheck, InputsAreSplitMix64sStreamInRange) {
  // The published test vector: SplitMix64 seeded with 1234567.
  const std::uint64_t want[] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull,
                                4593380528125082431ull, 16408922859458223821ull};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(dc::splitmix64(1234567, i), want[i]) << i;
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < 100000; ++i) {
    const float x = dc::input_value(42, i);
    ASSERT_TRUE(x >= -1000.0f && x < 1000.0f) << i << ": " << x;
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
  }
  EXPECT_LT(lo, -990);  // the whole range is used
  EXPECT_GT(hi, 990);
  EXPECT_NE(dc::input_value(1, 0), dc::input_value(2, 0));  // streams differ by seed
}

TEST(DeviceCheck, ExpectedIsTheCpuReference) {
  const std::size_t n = 4099;
  const dc::Seeds s{11, 22};
  std::vector<float> a(n), b(n), c(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = dc::input_value(s.a, i);
    b[i] = dc::input_value(s.b, i);
  }
  cudabench::vector_add::cpu_reference(a.data(), b.data(), c.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(dc::element_right(dc::Op::Add, s, c.data(), i)) << i;
    ASSERT_FALSE(dc::element_right(dc::Op::Copy, s, c.data(), i)) << i;  // a copy holds a, not a + b
    ASSERT_TRUE(dc::element_right(dc::Op::Copy, s, a.data(), i)) << i;
  }
}

TEST(DeviceCheck, FindsTheFirstWrongElementOfAnySet) {
  const std::size_t n = 1000, stride = 1024, none = std::numeric_limits<std::size_t>::max();
  const int sets = 3;
  const dc::Seeds s{5, 6};
  std::vector<float> c(stride * sets, std::numeric_limits<float>::quiet_NaN());  // padding stays poisoned
  for (int k = 0; k < sets; ++k)
    for (std::size_t i = 0; i < n; ++i) c[k * stride + i] = dc::expected(dc::Op::Add, s, i);
  // As the compare kernel does it: each thread's first wrong element, set
  // by set, counted across sets; the lowest kept. Any split of the work
  // between threads finds the same answer.
  auto first_wrong = [&](std::size_t threads) {
    std::size_t first = none;
    for (std::size_t t = 0; t < threads; ++t)
      for (int k = 0; k < sets; ++k)
        if (const std::size_t i = dc::first_wrong_in(dc::Op::Add, s, c.data() + k * stride, n, t, threads, none);
            i != none) {
          first = std::min(first, k * n + i);
          break;
        }
    return first;
  };
  for (std::size_t threads : {1u, 7u, 256u, 5000u}) EXPECT_EQ(first_wrong(threads), none) << threads;
  c[2 * stride + 17] = std::nextafter(c[2 * stride + 17], 1e9f);  // one bit off, in the last set
  for (std::size_t threads : {1u, 7u, 256u}) EXPECT_EQ(first_wrong(threads), 2 * n + 17) << threads;
  c[1 * stride + 999] = std::numeric_limits<float>::quiet_NaN();  // poison left in an earlier set
  for (std::size_t threads : {1u, 7u, 256u}) EXPECT_EQ(first_wrong(threads), 1 * n + 999) << threads;
  // The sign alone flipped is wrong.
  std::vector<float> flipped{-dc::expected(dc::Op::Copy, s, 0)};
  EXPECT_FALSE(dc::element_right(dc::Op::Copy, s, flipped.data(), 0));
}
