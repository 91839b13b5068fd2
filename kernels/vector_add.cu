// GPU side of vector_add: one kernel template over the per-thread bodies,
// its launcher, and the dispatcher, all derived from the variant table
// (CUDABENCH_GPU_VARIANTS in vector_add.cuh); cuda_v8's bulk copies.
#include <cuda/barrier>
#include <cuda/ptx>
#include <nv/target>

#include <map>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device_shape.cuh"
#include "vector_add.cuh"

namespace cudabench::vector_add {
namespace {

__device__ __forceinline__ Thread this_thread() { return {blockIdx.x, threadIdx.x, blockDim.x, gridDim.x}; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Loads from shared memory (plain: .cs is for global memory), stores streaming.
struct StagedAccess {
  template <class T>
  static __device__ T load(const T* p) { return *p; }
  template <class T>
  static __device__ void store(T* p, const T& v) { StreamingAccess::store(p, v); }
};

// cuda_v8 on sm_90 and later: thread 0 brings the block's tiles of a and b
// into shared memory with one bulk copy each (cp.async.bulk, completing on
// an mbarrier: libcu++'s memcpy_async with 16-byte alignment), then every
// thread adds its float4s of the tile from there (add_tile's indices) and
// stores them streaming. A tile's bytes are a multiple of 16, its start
// 16-byte aligned (the body takes this path for aligned arrays only).
__device__ void add_tile_bulk_copy(const float* a, const float* b, float* c, std::size_t n, const Thread& t) {
  if (!all_aligned16(a, b, c)) return GridStride::run(a, b, c, n, t);
  extern __shared__ __align__(128) Vec4 staged[];  // a's tile, then b's
#pragma nv_diag_suppress static_var_with_dynamic_init  // a barrier in shared memory is made by init() below
  __shared__ cuda::barrier<cuda::thread_scope_block> arrived;
#pragma nv_diag_default static_var_with_dynamic_init
  const TileSpan s = tile_span(n / 4, t);
  if (s.size > 0) {  // the same for every thread of the block
    Vec4* sa = staged;
    Vec4* sb = staged + kTileFloat4s * blockDim.x;
    if (threadIdx.x == 0) {
      init(&arrived, blockDim.x);
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the barrier, seen by the copy engine
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const cuda::aligned_size_t<16> bytes(s.size * sizeof(Vec4));
      cuda::memcpy_async(sa, reinterpret_cast<const Vec4*>(a) + s.first, bytes, arrived);
      cuda::memcpy_async(sb, reinterpret_cast<const Vec4*>(b) + s.first, bytes, arrived);
    }
    arrived.arrive_and_wait();
    add_tile<StagedAccess>(sa, sb, reinterpret_cast<Vec4*>(c) + s.first, s.size, threadIdx.x, blockDim.x);
  }
  AddFloat4s::tail<StreamingAccess>(a, b, c, n, t);
}
#endif

template <class Body>
__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::size_t n) {
  Body::run(a, b, c, n, this_thread());
}

template <>
__global__ void vector_add_kernel<TileBulkCopy>(const float* __restrict__ a, const float* __restrict__ b,
                                                float* __restrict__ c, std::size_t n) {
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90, (add_tile_bulk_copy(a, b, c, n, this_thread());),
                    (TileBulkCopy::run(a, b, c, n, this_thread());))
}

// Whether the current device takes cuda_v8's bulk copies (sm_90 and later;
// before, its kernel runs cuda_v7's body and stages nothing). Asked once per device.
bool stages_tiles() {
  static std::map<int, bool> per_device;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (const auto it = per_device.find(dev); it != per_device.end()) return it->second;
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return per_device[dev] = major >= 9;
}

// Dynamic shared memory a body's block of `block` threads needs here.
template <class Body>
std::size_t shared_bytes(unsigned) {
  return 0;
}
template <>
std::size_t shared_bytes<TileBulkCopy>(unsigned block) {
  return stages_tiles() ? TileBulkCopy::shared_bytes(block) : 0;
}

// Lets the kernel take `shared` bytes of dynamic shared memory: beyond
// 48 KiB with its static shared memory (cuda_v8's barrier), a kernel must
// ask. Asked again only for a larger size (per device: the attribute is).
template <class Body>
void allow_shared(std::size_t shared) {
  static std::map<int, std::size_t> allowed;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  if (shared == 0 || shared <= allowed[dev]) return;
  CUDA_CHECK(cudaFuncSetAttribute(vector_add_kernel<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shared)));
  allowed[dev] = shared;
}

// Sizes the grid as `grid` says (asking the device only for the shapes that
// depend on it), launches on `stream` and checks the launch.
template <class Body>
void launch(Grid grid, const float* a, const float* b, float* c, std::size_t n, unsigned block_size,
            cudaStream_t stream) {
  hd::DeviceShape d;
  if (grid == Grid::Resident || grid == Grid::ResidentFloat4) d = hd::device_shape(vector_add_kernel<Body>, block_size);
  const LaunchShape s = launch_shape(grid, n, block_size, d.sms, d.blocks_per_sm);
  if (s.grid == 0) return;
  const std::size_t shared = shared_bytes<Body>(s.block);
  allow_shared<Body>(shared);
  vector_add_kernel<Body><<<s.grid, s.block, shared, stream>>>(a, b, c, n);
  CUDA_CHECK(cudaGetLastError());
}

template <class Body>
__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ c, std::size_t n) {
  Body::run(a, c, n, static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
            static_cast<std::size_t>(gridDim.x) * blockDim.x);
}

}  // namespace

void copy(CopyKernel kernel, const float* a, float* c, std::size_t n, unsigned block_size, cudaStream_t stream) {
  const bool vec = kernel == CopyKernel::Float4;
  const LaunchShape s = launch_shape(vec ? Grid::Float4Tiles : Grid::PerElement, n, block_size, 0, 0);
  if (s.grid == 0) return;
  if (vec) copy_kernel<CopyFloat4><<<s.grid, s.block, 0, stream>>>(a, c, n);
  else copy_kernel<CopyOnePerElement><<<s.grid, s.block, 0, stream>>>(a, c, n);
  CUDA_CHECK(cudaGetLastError());
}

void vector_add(int variant, const float* a, const float* b, float* c, std::size_t n, unsigned block_size,
                cudaStream_t stream) {
  switch (variant) {
#define CUDABENCH_CASE(id, name, grid, body, description) \
  case id: return launch<body>(grid, a, b, c, n, block_size, stream);
    CUDABENCH_GPU_VARIANTS(CUDABENCH_CASE)
#undef CUDABENCH_CASE
    default: gpu_variant(variant);  // throws: unknown
  }
}

}  // namespace cudabench::vector_add
