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
// Per-thread bodies: thread `tid` of `nthreads` in the launch. __host__
// __device__, so host tests drive every thread of a launch.

// Thread `tid` owns element `tid`.
struct OnePerElement {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                               std::size_t /*nthreads*/) {
    if (tid < n) c[tid] = a[tid] + b[tid];
  }
};

// Thread `tid` visits tid, tid + nthreads, ...
struct GridStride {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                               std::size_t nthreads) {
    for (std::size_t i = tid; i < n; i += nthreads) c[i] = a[i] + b[i];
  }
};

// The float4s an aligned body works on: the first n / 4 elements of each
// array, as 16-byte words; the last n % 4 are the tail, grid-stride from
// thread 0 (one each for threads 0 .. n % 4 - 1 in any launch of more).
struct AddFloat4s {
  const Vec4* a;
  const Vec4* b;
  Vec4* c;
  CUDABENCH_HD Vec4 load(std::size_t i) const {
    const Vec4 x = a[i], y = b[i];
    Vec4 r;
    r.x = x.x + y.x;
    r.y = x.y + y.y;
    r.z = x.z + y.z;
    r.w = x.w + y.w;
    return r;
  }
  CUDABENCH_HD void store(std::size_t i, const Vec4& r) const { c[i] = r; }
  static CUDABENCH_HD void tail(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                                std::size_t nthreads) {
    const std::size_t f = n / 4 * 4;
    GridStride::run(a + f, b + f, c + f, n - f, tid, nthreads);
  }
};

// float4 grid-stride over the float4s, then the tail. Unaligned pointers
// take the GridStride body; the branch is the same for every thread, so it
// costs no divergence.
struct Float4 {
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                               std::size_t nthreads) {
    if (!(aligned16(a) && aligned16(b) && aligned16(c))) return GridStride::run(a, b, c, n, tid, nthreads);
    const AddFloat4s v{reinterpret_cast<const Vec4*>(a), reinterpret_cast<const Vec4*>(b), reinterpret_cast<Vec4*>(c)};
    for (std::size_t i = tid; i < n / 4; i += nthreads) v.store(i, v.load(i));
    AddFloat4s::tail(a, b, c, n, tid, nthreads);
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
  static CUDABENCH_HD void run(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                               std::size_t nthreads) {
    if (!(aligned16(a) && aligned16(b) && aligned16(c))) return GridStride::run(a, b, c, n, tid, nthreads);
    float4_unrolled(AddFloat4s{reinterpret_cast<const Vec4*>(a), reinterpret_cast<const Vec4*>(b),
                               reinterpret_cast<Vec4*>(c)},
                    n / 4, tid, nthreads);
    AddFloat4s::tail(a, b, c, n, tid, nthreads);
  }
};

// How a variant sizes its grid (launch_shape).
enum class Grid {
  PerElement,      // ceil(n / block)
  Seed,            // the seed's fixed <<<512, 512>>>, whatever the block size asked
  Resident,        // min(ceil(n / block), SMs x resident blocks per SM)
  ResidentFloat4,  // the same over the n / 4 float4s
  Float4Tiles,     // ceil(n / 4 / (block x kUnroll)): one pass of float4_unrolled
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
    "float4, 4 loads of each input in flight per thread before its stores, one pass, scalar tail")

using Body = void (*)(const float* a, const float* b, float* c, std::size_t n, std::size_t tid,
                      std::size_t nthreads);
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
