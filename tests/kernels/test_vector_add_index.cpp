// The GPU kernels' per-thread bodies, driven on the host over every thread of
// the launch shape the launcher would use: tails, n = 0, odd and unaligned
// sizes, and the float4 path's alignment fallback; and the stream gate's
// wait, on a clock of the test's own.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "kernels/l2_flush.cuh"
#include "kernels/stream_cover.cuh"
#include "kernels/vector_add.cuh"

namespace va = cudabench::vector_add;

namespace {

struct Arrays {
  // 16-byte aligned storage with room to offset the start.
  std::vector<va::Vec4> sa, sb, sc;
  float *a, *b, *c;
  Arrays(std::size_t n, std::size_t offset) {
    const std::size_t words = (n + offset) / 4 + 2;
    sa.resize(words); sb.resize(words); sc.resize(words);
    a = reinterpret_cast<float*>(sa.data()) + offset;
    b = reinterpret_cast<float*>(sb.data()) + offset;
    c = reinterpret_cast<float*>(sc.data()) + offset;
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i) * 0.5f + 1.25f;
      b[i] = 1000.0f - static_cast<float>(i) * 0.25f;
      c[i] = std::numeric_limits<float>::quiet_NaN();
    }
    // A sentinel just past the end must survive.
    c[n] = -12345.0f;
  }
};

// Calls body(thread) for every thread of a launch of `shape`, block by block.
template <class Body>
void each_thread(const va::LaunchShape& shape, Body&& body) {
  for (std::size_t b = 0; b < shape.grid; ++b)
    for (std::size_t t = 0; t < shape.block; ++t) body(va::Thread{b, t, shape.block, shape.grid});
}

// Run `variant`'s body for every thread of its launch shape.
void run_on_host(int variant, Arrays& x, std::size_t n, unsigned block, int sms, int bps) {
  const va::Variant& v = va::gpu_variant(variant);
  each_thread(va::launch_shape(v.grid, n, block, sms, bps), [&](const va::Thread& t) { v.body(x.a, x.b, x.c, n, t); });
}


}  // namespace

class VariantCoverage : public ::testing::TestWithParam<int> {};

TEST_P(VariantCoverage, EveryElementWrittenOnceAndNothingPastTheEnd) {
  const int variant = GetParam();
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 31u, 255u, 256u, 257u, 1000u,
                        4099u, 70001u}) {
    for (std::size_t offset : {0u, 1u, 2u, 3u})
      // Small "devices" so the grid-stride loops really stride; blocks of
      // one or two threads leave fewer threads than a tail has elements.
      for (unsigned block : {1u, 2u, 64u}) {
        Arrays x(n, offset);
        run_on_host(variant, x, n, block, 2, 3);
        EXPECT_EQ(va::first_mismatch(x.a, x.b, x.c, n), n)
            << "variant " << variant << " n=" << n << " offset=" << offset << " block=" << block;
        EXPECT_EQ(x.c[n], -12345.0f) << "wrote past the end: variant " << variant << " n=" << n;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, VariantCoverage, ::testing::ValuesIn(va::gpu_variant_ids()));

// The copy kernels' bodies over every thread of their launches, aligned or
// not: each element copied bit for bit, nothing past the end; a poisoned or
// differing bit is found.
TEST(CopyBody, EveryElementCopiedOnceAndNothingPastTheEnd) {
  const std::pair<va::Grid, void (*)(const float*, float*, std::size_t, std::size_t, std::size_t)> kernels[] = {
      {va::Grid::PerElement, &va::CopyOnePerElement::run}, {va::Grid::Float4Tiles, &va::CopyFloat4::run}};
  for (const auto& [grid, body] : kernels)
    for (std::size_t n : {0u, 1u, 3u, 4u, 5u, 7u, 255u, 256u, 257u, 4099u, 70001u})
      for (const auto [offset, block] : {std::pair{0u, 64u}, {1u, 64u}, {0u, 1u}, {0u, 2u}}) {
        Arrays x(n, offset);
        const va::LaunchShape s = va::launch_shape(grid, n, block, 0, 0);
        const std::size_t threads = static_cast<std::size_t>(s.grid) * s.block;
        for (std::size_t t = 0; t < threads; ++t) body(x.a, x.c, n, t, threads);
        EXPECT_EQ(va::first_copy_mismatch(x.a, x.c, n), n) << n << " offset " << offset;
        EXPECT_EQ(x.c[n], -12345.0f) << "wrote past the end: n=" << n;
      }
  Arrays x(8, 0);
  EXPECT_EQ(va::first_copy_mismatch(x.a, x.c, 8), 0u);  // the poison
  for (std::size_t i = 0; i < 8; ++i) x.c[i] = x.a[i];
  x.a[5] = 0.0f;
  x.c[5] = -0.0f;  // equal as values, not as bits
  EXPECT_EQ(va::first_copy_mismatch(x.a, x.c, 8), 5u);
}

TEST(LaunchShape, GridsAreSizedAsDocumented) {
  EXPECT_EQ(va::launch_shape(1, 1000, 256, 132, 8).grid, 4u);
  EXPECT_EQ(va::launch_shape(1, 1024, 256, 132, 8).grid, 4u);
  EXPECT_EQ(va::launch_shape(1, 1025, 256, 132, 8).grid, 5u);
  // The seed's launch is fixed whatever n is.
  EXPECT_EQ(va::launch_shape(2, 10'000'000, 256, 132, 8).grid, 512u);
  EXPECT_EQ(va::launch_shape(2, 10'000'000, 256, 132, 8).block, 512u);
  // Grid-stride: capped at SMs x resident blocks.
  EXPECT_EQ(va::launch_shape(3, 10'000'000, 256, 132, 8).grid, 132u * 8);
  EXPECT_EQ(va::launch_shape(3, 1000, 256, 132, 8).grid, 4u);
  // float4: a quarter of the threads.
  EXPECT_EQ(va::launch_shape(4, 4096, 256, 132, 8).grid, 4u);
  EXPECT_EQ(va::launch_shape(4, 4097, 256, 132, 8).grid, 5u);
  EXPECT_EQ(va::launch_shape(4, 1u << 27, 256, 132, 8).grid, 132u * 8);
  // Unrolled float4: one pass, kUnroll float4s a thread, whatever the device.
  EXPECT_EQ(va::launch_shape(5, 4096, 256, 132, 8).grid, 1u);
  EXPECT_EQ(va::launch_shape(5, 4097, 256, 132, 8).grid, 2u);
  EXPECT_EQ(va::launch_shape(5, 1u << 27, 256, 132, 8).grid, (1u << 27) / 4096);
  // The tiles: one per block, kTileFloat4s float4s a thread.
  for (int v : {6, 7, 8}) {
    EXPECT_EQ(va::launch_shape(v, 4096, 256, 132, 8).grid, 1u) << v;
    EXPECT_EQ(va::launch_shape(v, 4097, 256, 132, 8).grid, 2u) << v;
    EXPECT_EQ(va::launch_shape(v, 3, 256, 132, 8).grid, 1u) << v;  // the tail alone
  }
  for (int v : va::gpu_variant_ids()) EXPECT_EQ(va::launch_shape(v, 0, 256, 132, 8).grid, 0u) << v;
}

TEST(LaunchShape, RejectsBadArguments) {
  EXPECT_THROW(va::launch_shape(static_cast<int>(va::gpu_variants().size()) + 1, 10, 256, 1, 1),
               std::invalid_argument);
  EXPECT_THROW(va::launch_shape(0, 10, 256, 1, 1), std::invalid_argument);
  EXPECT_THROW(va::launch_shape(1, 10, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW(va::launch_shape(1, 10, 2048, 1, 1), std::invalid_argument);
}

TEST(VariantTable, TheSeedsVariantHasTheSeedsLaunch) {
  EXPECT_EQ(va::gpu_variant(va::kSeedVariant).grid, va::Grid::Seed);
  const va::LaunchShape s = va::launch_shape(va::kSeedVariant, 10'000'000, 256, 132, 8);
  EXPECT_EQ(s.grid, va::kSeedGrid);
  EXPECT_EQ(s.block, va::kSeedBlock);
}

TEST(VariantTable, NumberedAndNamed) {
  const auto& v = va::gpu_variants();
  ASSERT_EQ(v.size(), 8u);
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(v[i].id, static_cast<int>(i) + 1);
    EXPECT_EQ(v[i].name, "cuda_v" + std::to_string(i + 1));
    EXPECT_FALSE(v[i].description.empty());
  }
}

// The read flush: the threads of a launch together read every 16-byte word
// of the buffer exactly once, for any number of threads and words.
TEST(L2FlushBody, ThreadsCoverEveryWordOnce) {
  for (std::size_t words : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{4099}}) {
    // Word i holds 1 + i % 16 in each lane (small integers: float sums stay
    // exact), so a word missed or read twice changes the total.
    std::vector<va::Vec4> buf(words);
    double want = 0;
    for (std::size_t i = 0; i < words; ++i) {
      const float v = static_cast<float>(1 + i % 16);
      buf[i] = {v, v, v, v};
      want += 4.0 * v;
    }
    for (std::size_t threads : {std::size_t{1}, std::size_t{7}, std::size_t{256}, std::size_t{5000}}) {
      double total = 0;
      for (std::size_t t = 0; t < threads; ++t)
        total += cudabench::l2_flush::body_read(buf.data(), words, t, threads);
      EXPECT_DOUBLE_EQ(total, want) << words << " words, " << threads << " threads";
    }
  }
  // The benchmarks' fill (every byte 0x5a) never sums to the sentinel.
  std::vector<va::Vec4> fill(64);
  std::memset(fill.data(), 0x5a, fill.size() * sizeof(va::Vec4));
  EXPECT_NE(cudabench::l2_flush::body_read(fill.data(), fill.size(), 0, 1), cudabench::l2_flush::kSentinel);
}

// The gate's wait on a simulated clock: each reading of it is one tick, and
// the "host" opens the gate at tick `opens_at` (0: never).
struct Ticks {
  std::uint64_t now = 0, opens_at = 0;
  volatile std::uint32_t* open;
  std::uint64_t tick() {
    if (++now == opens_at) *open = 1;
    return now;
  }
};

TEST(StreamGate, WaitsUntilTheHostOpensItAndNoLonger) {
  using cudabench::stream_cover::wait_open;
  volatile std::uint32_t open = 0;
  Ticks clock{0, 5, &open};
  int naps = 0;
  EXPECT_TRUE(wait_open(&open, 100, [&] { return clock.tick(); }, [&] { ++naps; }));
  EXPECT_EQ(clock.now, 5u);  // no reading of the clock after the host opened it
  EXPECT_EQ(naps, 5);        // one nap after each poll that found it closed
  // Already open: no nap at all.
  naps = 0;
  EXPECT_TRUE(wait_open(&open, 0, [&] { return clock.tick(); }, [&] { ++naps; }));
  EXPECT_EQ(naps, 0);
}

TEST(StreamGate, GivesUpAtItsDeadlineWhenNeverOpened) {
  using cudabench::stream_cover::wait_open;
  volatile std::uint32_t open = 0;
  Ticks clock{0, 0, &open};
  int naps = 0;
  EXPECT_FALSE(wait_open(&open, 50, [&] { return clock.tick(); }, [&] { ++naps; }));
  EXPECT_EQ(clock.now, 50u);
  EXPECT_EQ(naps, 49);
}

