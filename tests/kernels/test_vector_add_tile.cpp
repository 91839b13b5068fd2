// The tile body (cuda_v6, v7, and v8 where it has no bulk copies), driven on
// the host with a recorder for its memory accesses: each block takes one
// contiguous tile, each thread issues every load before any store, a warp's
// accesses are coalesced, and the tile's offsets fit 32 bits however far
// into the arrays it starts.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "kernels/vector_add.cuh"

namespace va = cudabench::vector_add;

namespace {

// Every access the body makes, in order: the thread, load or store, where.
struct Access {
  std::size_t thread;
  bool store;
  const void* at;
  std::size_t bytes;
};
std::vector<Access> g_log;
std::size_t g_thread = 0;

struct RecordingAccess {
  template <class T>
  static T load(const T* p) {
    g_log.push_back({g_thread, false, p, sizeof(T)});
    return *p;
  }
  template <class T>
  static void store(T* p, const T& v) {
    g_log.push_back({g_thread, true, p, sizeof(T)});
    *p = v;
  }
};

struct Arrays {
  std::vector<va::Vec4> a, b, c;
  explicit Arrays(std::size_t n) : a(n / 4 + 2), b(n / 4 + 2), c(n / 4 + 2) {
    for (std::size_t i = 0; i < n; ++i) {
      fa()[i] = static_cast<float>(i) * 0.5f + 1.25f;
      fb()[i] = 1000.0f - static_cast<float>(i) * 0.25f;
      fc()[i] = std::numeric_limits<float>::quiet_NaN();
    }
    fc()[n] = -12345.0f;  // past the end: must survive
  }
  float* fa() { return reinterpret_cast<float*>(a.data()); }
  float* fb() { return reinterpret_cast<float*>(b.data()); }
  float* fc() { return reinterpret_cast<float*>(c.data()); }
};

// The float4 index in `base` of a 16-byte access, or -1 for another array.
long long float4_index(const Access& x, const void* base, std::size_t words) {
  const auto at = reinterpret_cast<std::uintptr_t>(x.at), lo = reinterpret_cast<std::uintptr_t>(base);
  if (x.bytes != sizeof(va::Vec4) || at < lo || at >= lo + words * sizeof(va::Vec4)) return -1;
  return static_cast<long long>((at - lo) / sizeof(va::Vec4));
}

}  // namespace

TEST(TileBody, OneContiguousTilePerBlockEveryLoadBeforeAnyStoreCoalesced) {
  const std::size_t tile4 = va::kTileFloat4s;
  for (std::size_t n : {0u, 3u, 4u, 5u, 1000u, 4096u, 4100u, 3u * 4 * 64 * 4, 70001u})
    for (unsigned block : {32u, 64u, 256u}) {
      Arrays x(n);
      const va::LaunchShape shape = va::launch_shape(6, n, block, 0, 0);
      g_log.clear();
      for (std::size_t blk = 0; blk < shape.grid; ++blk)
        for (std::size_t t = 0; t < shape.block; ++t) {
          g_thread = blk * block + t;
          va::Tile<RecordingAccess>::run(x.fa(), x.fb(), x.fc(), n, va::Thread{blk, t, block, shape.grid});
        }
      const std::string where = "n=" + std::to_string(n) + " block=" + std::to_string(block);
      ASSERT_EQ(va::first_mismatch(x.fa(), x.fb(), x.fc(), n), n) << where;
      EXPECT_EQ(x.fc()[n], -12345.0f) << "wrote past the end: " << where;
      // Per thread, the float4s of a, b and c in the order it touched them.
      std::map<std::size_t, std::vector<long long>> a_of, b_of, c_of;
      std::map<std::size_t, std::size_t> last_load, first_store;
      const std::size_t nvec = n / 4;
      for (std::size_t i = 0; i < g_log.size(); ++i) {
        const Access& e = g_log[i];
        if (e.bytes != sizeof(va::Vec4)) continue;  // the scalar tail
        if (const long long k = float4_index(e, x.a.data(), nvec); k >= 0) a_of[e.thread].push_back(k);
        if (const long long k = float4_index(e, x.b.data(), nvec); k >= 0) b_of[e.thread].push_back(k);
        if (const long long k = float4_index(e, x.c.data(), nvec); k >= 0) c_of[e.thread].push_back(k);
        if (e.store) first_store.emplace(e.thread, i);
        else last_load[e.thread] = i;
      }
      for (const auto& [thread, i] : first_store)
        EXPECT_LT(last_load[thread], i) << "thread " << thread << " stored before its last load: " << where;
      // Thread t of block k: the float4s k x T + t, + block, ... of its tile,
      // in that order, for a, b and c alike; the tiles cover the float4s.
      std::vector<int> seen(nvec, 0);
      for (std::size_t blk = 0; blk < shape.grid; ++blk)
        for (std::size_t t = 0; t < block; ++t) {
          std::vector<long long> want;
          for (std::size_t k = 0; k < tile4; ++k) {
            const std::size_t i = blk * tile4 * block + t + k * block;
            if (i < nvec) want.push_back(static_cast<long long>(i));
          }
          const std::size_t id = blk * block + t;
          EXPECT_EQ(a_of[id], want) << "a, thread " << t << " of block " << blk << ": " << where;
          EXPECT_EQ(b_of[id], want) << "b, thread " << t << " of block " << blk << ": " << where;
          EXPECT_EQ(c_of[id], want) << "c, thread " << t << " of block " << blk << ": " << where;
          for (long long i : want) ++seen[static_cast<std::size_t>(i)];
        }
      for (std::size_t i = 0; i < nvec; ++i) ASSERT_EQ(seen[i], 1) << "float4 " << i << ": " << where;
    }
}

TEST(TileBody, TileStartsIn64BitsOffsetsIn32) {
  // Block 2^30 of 1024 threads starts at float4 2^42, past any 32-bit index;
  // its tile's size still fits 32 bits, and the last tile is cut at the end.
  const std::size_t block = std::size_t{1} << 30, nvec = (std::size_t{1} << 42) + 100;
  const va::TileSpan s = va::tile_span(nvec, va::Thread{block, 0, 1024, block + 1});
  EXPECT_EQ(s.first, std::size_t{1} << 42);
  EXPECT_EQ(s.size, 100u);
  EXPECT_EQ(va::tile_span(nvec, va::Thread{block - 1, 0, 1024, block + 1}).size, va::kTileFloat4s * 1024);
  EXPECT_EQ(va::tile_span(nvec, va::Thread{block + 1, 0, 1024, block + 2}).size, 0u);
}

TEST(TileBody, BulkCopyVariantStagesTwoTilesOfItsBlock) {
  EXPECT_EQ(va::TileBulkCopy::shared_bytes(256), 2u * va::kTileFloat4s * 256 * 16);
}
