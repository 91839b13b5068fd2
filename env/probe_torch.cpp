// LibTorch's view of the CUDA stack: its version, the CUDA and cuDNN it was
// built with, whether it sees a GPU, and where its library was loaded from.
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <filesystem>

#include "probe.h"

namespace cudabench::env {

TorchInfo probe_torch() {
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
  t.cuda_available = torch::cuda::is_available();
  t.device_count = t.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::globalContext), &info) && info.dli_fname) {
    std::error_code ec;
    auto p = std::filesystem::canonical(info.dli_fname, ec);
    t.library_path = ec ? info.dli_fname : p.string();
  }
  return t;
}

}  // namespace cudabench::env
