// vector_add: c[i] = a[i] + b[i], float32.
//
// Bytes per element that must move through memory: read a (4), read b (4),
// write c (4) = 12 bytes; one FLOP per element, so it is memory-bound on every
// CPU and GPU (arithmetic intensity 1/12 FLOP/byte).
//
// CPU (kernels/vector_add_cpu.cpp; builds without CUDA):
//   reference : plain scalar loop, auto-vectorisation switched off
//   omp_simd  : OpenMP threads over `omp simd` chunks
//   omp_nt    : OpenMP threads, non-temporal (streaming) stores for sizes
//               beyond the last-level cache: a normal store first reads the
//               line of c it writes (write-allocate), so the add moves 16
//               bytes per element, not 12; a streaming store does not
//   copy_nt   : STREAM Copy (c = a) the same way, the CPU's measured
//               bandwidth the add is held against (8 bytes per element)
// GPU (kernels/vector_add.cu): the variants are the table below,
// CUDABENCH_GPU_VARIANTS, one row each; and the copy kernels, BabelStream's
// and a vectorised one: the faster of the vectorised one and
// cudaMemcpyAsync is the measured bandwidth the add is held against.
//
// The per-thread bodies are __host__ __device__ so that host tests can drive
// every thread index of a launch and check tails, n = 0 and alignment without
// a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "host_device.cuh"

namespace cudabench::vector_add {

// Byte accounting is data: arrays read and written per element.
constexpr int kArraysRead = 2;
constexpr int kArraysWritten = 1;
constexpr std::size_t kBytesPerElement =
    (kArraysRead + kArraysWritten) * sizeof(float);
// A copy (c = a), the bandwidth the add is held against: read a, write c.
constexpr std::size_t kCopyBytesPerElement = 2 * sizeof(float);

// The seed's launch: <<<512, 512>>>, the variant whose grid is Grid::Seed.
constexpr unsigned kSeedGrid = 512;
constexpr unsigned kSeedBlock = 512;
constexpr int kSeedVariant = 2;

using hd::aligned16;
using hd::ceil_div;
using hd::Vec4;

// ---- GPU variants ----
// Per-thread bodies: thread `t` of the launch (its block, its place in the
// block, the launch's shape). __host__ __device__, so host tests drive
// every thread of a launch.
struct Thread {
  std::size_t block, thread, block_dim, blocks;
  CUDABENCH_HD std::size_t id() const { return block * block_dim + thread; }
  CUDABENCH_HD std::size_t count() const { return blocks * block_dim; }
};

// How a body reads and writes memory: plainly, or streaming (PTX .cs:
// evict first, for data used once). Host tests put a recorder in their
// place to see the order of the accesses.
struct PlainAccess {
  template <class T>
  static CUDABENCH_HD T load(const T* p) { return *p; }
  template <class T>
  static CUDABENCH_HD void store(T* p, const T& v) { *p = v; }
};
struct StreamingAccess {
  template <class T>
  static CUDABENCH_HD T load(const T* p) {
#ifdef __CUDA_ARCH__
    return __ldcs(p);
#else
    return *p;
#endif
  }
  template <class T>
  static CUDABENCH_HD void store(T* p, const T& v) {
#ifdef __CUDA_ARCH__
    __stcs(p, v);
#else
    *p = v;
#endif
  }
};

CUDABENCH_HD Vec4 add4(const Vec4& x, const Vec4& y) {
  Vec4 r;
  r.x = x.x + y.x;
  r.y = x.y + y.y;
  r.z = x.z + y.z;
  r.w = x.w + y.w;
  return r;
}

// Elements first, first + 1, ... of n, grid-stride from thread t.id().
template <class Access = PlainAccess>
CUDABENCH_HD void add_from(const float* a, const float* b, float* c, std::size_t first, std::size_t n,
                           const Thread& t) {
  for (std::size_t i = first + t.id(); i < n; i += t.count())
    Access::store(c + i, Access::load(a + i) + Access::load(b + i));
}

// Thread `t` owns element t.id().
struct OnePerElement {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    if (t.id() < n) c[t.id()] = a[t.id()] + b[t.id()];
  }
};

// Thread `t` visits t.id(), t.id() + t.count(), ...
struct GridStride {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    add_from(a, b, c, 0, n, t);
  }
};

// The float4s an aligned body works on: the first n / 4 elements of each
// array, as 16-byte words; the last n % 4 are the tail, grid-stride from
// thread 0 (one each for threads 0 .. n % 4 - 1 in any launch of more).
struct AddFloat4s {
  const Vec4* a;
  const Vec4* b;
  Vec4* c;
  CUDABENCH_HD Vec4 load(std::size_t i) const { return add4(a[i], b[i]); }
  CUDABENCH_HD void store(std::size_t i, const Vec4& r) const { c[i] = r; }
  template <class Access = PlainAccess>
  static CUDABENCH_HD void tail(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    add_from<Access>(a, b, c, n / 4 * 4, n, t);
  }
};

CUDABENCH_HD bool all_aligned16(const float* a, const float* b, const float* c) {
  return aligned16(a) && aligned16(b) && aligned16(c);
}

// float4 grid-stride over the float4s, then the tail. Unaligned pointers
// take the GridStride body; the branch is the same for every thread, so it
// costs no divergence.
struct Float4 {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    if (!all_aligned16(a, b, c)) return GridStride::run(a, b, c, n, t);
    const AddFloat4s v{reinterpret_cast<const Vec4*>(a), reinterpret_cast<const Vec4*>(b), reinterpret_cast<Vec4*>(c)};
    for (std::size_t i = t.id(); i < n / 4; i += t.count()) v.store(i, v.load(i));
    AddFloat4s::tail(a, b, c, n, t);
  }
};

// More bytes in flight per thread: kUnroll float4 loads of each input are
// issued before the first store. Thread tid takes the float4s base + k x
// nthreads (k < kUnroll: a warp's loads stay coalesced), for base = tid,
// tid + kUnroll x nthreads, ... (one pass with Grid::Float4Tiles).
constexpr int kUnroll = 4;
template <class Op>
CUDABENCH_HD void float4_unrolled(const Op& op, std::size_t nvec, std::size_t tid, std::size_t nthreads) {
  for (std::size_t base = tid; base < nvec; base += kUnroll * nthreads) {
    Vec4 r[kUnroll] = {};
    CUDABENCH_UNROLL
    for (int k = 0; k < kUnroll; ++k)
      if (base + k * nthreads < nvec) r[k] = op.load(base + k * nthreads);
    CUDABENCH_UNROLL
    for (int k = 0; k < kUnroll; ++k)
      if (base + k * nthreads < nvec) op.store(base + k * nthreads, r[k]);
  }
}

struct Float4Unrolled {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    if (!all_aligned16(a, b, c)) return GridStride::run(a, b, c, n, t);
    float4_unrolled(AddFloat4s{reinterpret_cast<const Vec4*>(a), reinterpret_cast<const Vec4*>(b),
                               reinterpret_cast<Vec4*>(c)},
                    n / 4, t.id(), t.count());
    AddFloat4s::tail(a, b, c, n, t);
  }
};

// A contiguous tile per block, as CUB's DeviceTransform works: block k owns
// the float4s [k x T, (k + 1) x T) of each array, T = kTileFloat4s x its
// threads (the last block fewer); its thread j takes the float4s j, j +
// block_dim, ... of the tile (a warp's accesses coalesced). The tile's
// base is computed once, in 64 bits; offsets inside it are 32-bit.
// kTileFloat4s float4s of a and of b are 128 bytes in flight a thread,
// 32 KiB a block of 256: two resident blocks per SM already pass the 48 KiB
// per SM that CUB aims for on an H200's HBM3e.
constexpr unsigned kTileFloat4s = kUnroll;
struct TileSpan {
  std::size_t first;  // the tile's first float4
  unsigned size;      // its float4s: kTileFloat4s x block_dim, fewer in the last tile, 0 past the end
};
CUDABENCH_HD TileSpan tile_span(std::size_t nvec, const Thread& t) {
  const std::size_t tile = kTileFloat4s * t.block_dim, first = t.block * tile;
  return {first, first < nvec ? static_cast<unsigned>(nvec - first < tile ? nvec - first : tile) : 0u};
}

// One thread's part of a tile: every load of a and b issued before any
// add or store. kFull: the tile is whole, so no index is checked.
template <class Access, bool kFull>
CUDABENCH_HD void tile_part(const Vec4* a, const Vec4* b, Vec4* c, unsigned size, unsigned j, unsigned dim) {
  Vec4 x[kTileFloat4s], y[kTileFloat4s];
  CUDABENCH_UNROLL
  for (unsigned k = 0; k < kTileFloat4s; ++k)
    if (kFull || j + k * dim < size) {
      x[k] = Access::load(a + j + k * dim);
      y[k] = Access::load(b + j + k * dim);
    }
  CUDABENCH_UNROLL
  for (unsigned k = 0; k < kTileFloat4s; ++k)
    if (kFull || j + k * dim < size) Access::store(c + j + k * dim, add4(x[k], y[k]));
}

// Thread j's part of a tile of `size` float4s (0 < size), unchecked when
// the tile is whole (kTileFloat4s x dim).
template <class Access>
CUDABENCH_HD void add_tile(const Vec4* a, const Vec4* b, Vec4* c, unsigned size, unsigned j, unsigned dim) {
  if (size == kTileFloat4s * dim) tile_part<Access, true>(a, b, c, size, j, dim);
  else tile_part<Access, false>(a, b, c, size, j, dim);
}

// The tile body, its accesses plain (cuda_v6) or streaming (cuda_v7);
// unaligned pointers take the GridStride body, the tail is grid-stride.
template <class Access>
struct Tile {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    if (!all_aligned16(a, b, c)) return GridStride::run(a, b, c, n, t);
    const TileSpan s = tile_span(n / 4, t);
    const Vec4* ta = reinterpret_cast<const Vec4*>(a) + s.first;
    const Vec4* tb = reinterpret_cast<const Vec4*>(b) + s.first;
    Vec4* tc = reinterpret_cast<Vec4*>(c) + s.first;
    const auto j = static_cast<unsigned>(t.thread), dim = static_cast<unsigned>(t.block_dim);
    if (s.size > 0) add_tile<Access>(ta, tb, tc, s.size, j, dim);
    AddFloat4s::tail<Access>(a, b, c, n, t);
  }
};

// cuda_v8: the tile's a and b reach shared memory by bulk copies (TMA,
// cp.async.bulk) on sm_90 and later, one thread issuing both for the
// block; every thread then adds its float4s of the tile from there and
// stores them streaming (kernels/vector_add.cu). The host, and a device
// before sm_90, run the tile body: the same float4s per thread, read from
// global memory. What only the device does (the bulk copies, the barrier)
// is checked in the compiled sm_90 code (tests/kernels/test_sass.py).
struct TileBulkCopy {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
    Tile<StreamingAccess>::run(a, b, c, n, t);
  }
  // Shared memory a block of `block` threads stages: its tiles of a and b.
  static constexpr std::size_t shared_bytes(unsigned block) {
    return 2 * std::size_t{kTileFloat4s} * block * sizeof(Vec4);
  }
};

// How a variant sizes its grid (launch_shape).
enum class Grid {
  PerElement,      // ceil(n / block)
  Seed,            // the seed's fixed <<<512, 512>>>, whatever the block size asked
  Resident,        // min(ceil(n / block), SMs x resident blocks per SM)
  ResidentFloat4,  // the same over the n / 4 float4s
  Float4Tiles,     // ceil(n / 4 / (block x kUnroll)): one pass of float4_unrolled, or one tile a block
};

// The device copies (c = a), the bandwidth the add is held against.
// BabelStream's Copy kernel: thread `tid` owns element `tid`, grid =
// ceil(n / block) (Grid::PerElement). It keeps one 4-byte load in flight per
// thread, too few to reach an H200's DRAM bandwidth (2.7 of 4.8 TB/s).
struct CopyOnePerElement {
  static CUDABENCH_HD void run(const float* a, float* c, std::size_t n, std::size_t tid, std::size_t /*nthreads*/) {
    if (tid < n) c[tid] = a[tid];
  }
};
// The vectorised copy: float4_unrolled over the float4s (Grid::Float4Tiles),
// the tail one element a thread; unaligned pointers copy one element per
// thread, grid-stride.
struct CopyFloat4s {
  const Vec4* a;
  Vec4* c;
  CUDABENCH_HD Vec4 load(std::size_t i) const { return a[i]; }
  CUDABENCH_HD void store(std::size_t i, const Vec4& r) const { c[i] = r; }
  // Elements from `first` on, grid-stride: the tail, or all of an unaligned copy.
  static CUDABENCH_HD void scalar(const float* a, float* c, std::size_t first, std::size_t n, std::size_t tid,
                                  std::size_t nthreads) {
    for (std::size_t i = first + tid; i < n; i += nthreads) c[i] = a[i];
  }
};
struct CopyFloat4 {
  static CUDABENCH_HD void run(const float* a, float* c, std::size_t n, std::size_t tid, std::size_t nthreads) {
    if (!(aligned16(a) && aligned16(c))) return CopyFloat4s::scalar(a, c, 0, n, tid, nthreads);
    float4_unrolled(CopyFloat4s{reinterpret_cast<const Vec4*>(a), reinterpret_cast<Vec4*>(c)}, n / 4, tid, nthreads);
    CopyFloat4s::scalar(a, c, n / 4 * 4, n, tid, nthreads);
  }
};

// The variant table, one row each: number, name, launch shape, per-thread
// body, what it tries. The dispatcher (vector_add.cu), the benchmarks
// (VectorAdd/<name>) and the host coverage tests are derived from it, so a
// new variant is a body above and a row here. The winner keeps its number.
#define CUDABENCH_GPU_VARIANTS(X)                                                                         \
  X(1, "cuda_v1", Grid::PerElement, OnePerElement, "one thread per element, grid = ceil(n / block)")      \
  X(2, "cuda_v2", Grid::Seed, GridStride, "seed's <<<512,512>>> launch, grid-stride so any n is covered") \
  X(3, "cuda_v3", Grid::Resident, GridStride, "grid-stride, grid = SMs x resident blocks per SM")         \
  X(4, "cuda_v4", Grid::ResidentFloat4, Float4,                                                           \
    "float4 loads/stores, grid-stride, SMs x resident blocks, scalar tail")                               \
  X(5, "cuda_v5", Grid::Float4Tiles, Float4Unrolled,                                                      \
    "float4, 4 loads of each input in flight per thread before its stores, one pass, scalar tail")       \
  X(6, "cuda_v6", Grid::Float4Tiles, Tile<PlainAccess>,                                                   \
    "a contiguous tile per block, every load before any store, 32-bit offsets in the tile")              \
  X(7, "cuda_v7", Grid::Float4Tiles, Tile<StreamingAccess>,                                               \
    "cuda_v6 with streaming (.cs, evict-first) loads and stores")                                         \
  X(8, "cuda_v8", Grid::Float4Tiles, TileBulkCopy,                                                        \
    "cuda_v7's tiles brought to shared memory by bulk copies (TMA) on sm_90+, cuda_v7 before it")

using Body = void (*)(const float* a, const float* b, float* c, std::size_t n, const Thread& t);
struct Variant {
  int id;
  std::string name;         // "cuda_v1" ...
  Grid grid;
  Body body;                // the per-thread body, as the host runs it
  std::string description;  // one line
};
const std::vector<Variant>& gpu_variants();
std::vector<int> gpu_variant_ids();
// The row of variant `id`; throws std::invalid_argument for an unknown one.
const Variant& gpu_variant(int id);

// Launch geometry, as plain functions so tests can check coverage. sms and
// blocks_per_sm come from the device (SM count, occupancy API).
struct LaunchShape {
  unsigned grid = 0;
  unsigned block = 0;
};
LaunchShape launch_shape(Grid grid, std::size_t n, unsigned block_size, int sms, int blocks_per_sm);
LaunchShape launch_shape(int variant, std::size_t n, unsigned block_size, int sms, int blocks_per_sm);

// ---- CPU (vector_add_cpu.cpp) ----
void cpu_reference(const float* a, const float* b, float* c, std::size_t n);
void cpu_omp_simd(const float* a, const float* b, float* c, std::size_t n);
void cpu_omp_nt(const float* a, const float* b, float* c, std::size_t n);
void cpu_copy_nt(const float* a, float* c, std::size_t n);
int cpu_threads();  // threads cpu_omp_simd uses
// Which streaming stores cpu_omp_nt and cpu_copy_nt use on this CPU:
// "avx2", "sse2", or "none" (not x86-64: plain stores).
const char* cpu_nt_isa();

// Index of the first element where c != a + b (exact: float addition is
// correctly rounded, so every correct implementation gives identical bits),
// or n when all match. NaN (the poison) never matches.
std::size_t first_mismatch(const float* a, const float* b, const float* c,
                           std::size_t n);
// The same for a copy: the first element whose bits differ from a's.
std::size_t first_copy_mismatch(const float* a, const float* c, std::size_t n);

#ifdef CUDABENCH_HAVE_CUDA
// The dispatcher (vector_add.cu): variant `id` of the table on `stream`;
// throws std::invalid_argument for an unknown one.
void vector_add(int variant, const float* a, const float* b, float* c,
                std::size_t n, unsigned block_size, cudaStream_t stream);
// The copy kernels on `stream`: BabelStream's (CopyOnePerElement) and the
// vectorised one (CopyFloat4).
enum class CopyKernel { OnePerElement, Float4 };
void copy(CopyKernel kernel, const float* a, float* c, std::size_t n, unsigned block_size, cudaStream_t stream);
#endif

}  // namespace cudabench::vector_add
