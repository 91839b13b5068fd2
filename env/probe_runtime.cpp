// The CUDA runtime this binary links and cuBLAS (library queries that need
// no driver). Without CUDA in the build every probe here reports "not
// compiled in". The GPUs are listed through the driver API (probe_driver.cpp).
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
  // The library that function came from: with a LibTorch of another CUDA
  // major two runtimes are loaded (libcudart.so.12 and .so.13), and the
  // first in the process is not necessarily this binary's.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudaRuntimeGetVersion), &info) != 0 && info.dli_fname &&
      std::string(info.dli_fname).find("/libcudart") != std::string::npos)
    r.loaded_path = info.dli_fname;  // else linked statically
#endif
  return r;
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
