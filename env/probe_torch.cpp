// LibTorch's view of the CUDA stack: its version, the CUDA and cuDNN it was
// built with, whether it sees a GPU, and where its library was loaded from.
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <filesystem>

#include "parsers.h"
#include "probe.h"

namespace cudabench::env {

TorchInfo probe_torch(bool driver_answered) {
  TorchInfo t;
  t.compiled_in = true;
  t.version = TORCH_VERSION;
  const auto& hooks = at::detail::getCUDAHooks();
  try {
    t.cuda_version = static_cast<int>(hooks.versionCUDART());
    t.cudnn_built = hooks.versionCuDNN();
    t.cudnn_runtime = hooks.versionRuntimeCuDNN();
  } catch (...) {
    // a CPU-only LibTorch (no ATen_cuda) throws here; keep what was read
  }
  t.cuda_available = driver_answered && torch::cuda::is_available();
  t.device_count = t.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::globalContext), &info) && info.dli_fname) {
    std::error_code ec;
    auto p = std::filesystem::canonical(info.dli_fname, ec);
    t.library_path = ec ? info.dli_fname : p.string();
  }
  // NCCL: the copy already loaded (LibTorch's CUDA build links it), else
  // whatever libnccl.so.2 the loader finds. ncclGetVersion needs no GPU.
  void* nccl = ::dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (!nccl) nccl = ::dlopen("libnccl.so.2", RTLD_LAZY);
  if (!nccl) {
    const char* e = ::dlerror();
    t.nccl_error = e ? e : "libnccl.so.2 not found";
  } else if (auto* get = reinterpret_cast<int (*)(int*)>(::dlsym(nccl, "ncclGetVersion"))) {
    int code = 0;
    if (get(&code) == 0) t.nccl_version = nccl_version_string(code);
    t.nccl_path = loaded_path_of(nccl);
    if (t.nccl_version.empty()) t.nccl_error = "ncclGetVersion failed";
  } else {
    t.nccl_error = "libnccl.so.2 has no ncclGetVersion";
  }
  return t;
}

}  // namespace cudabench::env
