// The CUDA runtime this binary links, its GPUs and cuBLAS. Without CUDA in
// the build every probe here reports "not compiled in".
#include <dlfcn.h>

#include "probe.h"

#ifdef CUDABENCH_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <library_types.h>
#endif

namespace cudabench::env {

RuntimeInfo probe_runtime() {
  RuntimeInfo r;
#ifdef CUDABENCH_HAVE_CUDA
  r.compiled_in = true;
  r.built_version = CUDART_VERSION;
  // Needs no driver: it reports the runtime library's own version.
  cudaRuntimeGetVersion(&r.loaded_version);
  for (const auto& lib : loaded_libraries())
    if (lib.name.rfind("libcudart", 0) == 0) r.loaded_path = lib.path;
#endif
  return r;
}

std::vector<GpuDevice> probe_gpus() {
  std::vector<GpuDevice> out;
#ifdef CUDABENCH_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls are clean
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuDevice g;
    g.index = i;
    g.name = p.name;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.sms = p.multiProcessorCount;
    g.total_memory_bytes = static_cast<long long>(p.totalGlobalMem);
    g.l2_bytes = p.l2CacheSize;
    // CUDA 13 removed memoryClockRate / clockRate from cudaDeviceProp.
    cudaDeviceGetAttribute(&g.memory_clock_khz, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&g.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, i);
    cudaDeviceGetAttribute(&g.sm_clock_khz, cudaDevAttrClockRate, i);
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) g.pci_bus_id = bus;
    g.peak_bandwidth_bytes_per_s =
        peak_bandwidth_bytes_per_s(g.memory_clock_khz, g.bus_width_bits);
    out.push_back(g);
  }
#endif
  return out;
}

LibraryVersions probe_library_versions() {
  LibraryVersions v;
#ifdef CUDABENCH_HAVE_CUDA
  v.cublas_built = CUBLAS_VERSION;
  int major = 0, minor = 0, patch = 0;
  // A library query: no handle, no GPU needed.
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    v.cublas_loaded = major * 10000 + minor * 100 + patch;
#endif
  // cuDNN is LibTorch's; ask whichever copy is loaded, if any.
  using GetVersion = std::size_t (*)();
  if (auto f = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "cudnnGetVersion")))
    v.cudnn_loaded = static_cast<long>(f());
  return v;
}

}  // namespace cudabench::env
