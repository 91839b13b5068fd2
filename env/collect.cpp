#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "build_info.h"
#include "parsers.h"
#include "probe.h"
#include "verdicts.h"

extern char** environ;

namespace cudabench::env {

BuildInfo build_info() {
  BuildInfo b;
#ifdef CUDABENCH_HAVE_CUDA
  b.cuda_toolkit_version = CUDABENCH_BUILD_CUDA_VERSION;
  b.cuda_toolkit_root = CUDABENCH_BUILD_CUDA_ROOT;
  b.nvcc_path = CUDABENCH_BUILD_NVCC;
  b.cuda_architectures = CUDABENCH_BUILD_CUDA_ARCHS;
#endif
  b.cxx_compiler = CUDABENCH_BUILD_CXX;
  b.build_type = CUDABENCH_BUILD_TYPE;
  b.torch_version = CUDABENCH_BUILD_TORCH_VERSION;
  b.git_revision = CUDABENCH_BUILD_GIT_REVISION;
  return b;
}

const Report& collect() {
  static const Report report = [] {
    Report r;
    r.build = build_info();
    const std::string root = probe_root();
    r.host = probe_host(root);
    r.system = probe_system(root);
    r.driver = probe_driver(root);
    r.nvml_gpus = probe_nvml_gpus();
    r.runtime = probe_runtime();
    r.torch = probe_torch();  // before listing libraries: it may load some
    const GpuStatus pre = decide_gpu_status(r.driver, r.runtime, 1);
    if (pre.usable) r.gpus = probe_gpus();
    const auto prohibited = std::count_if(r.gpus.begin(), r.gpus.end(),
                                          [](const GpuDevice& g) { return g.nvml.compute_mode == 2; });
    r.status = decide_gpu_status(r.driver, r.runtime, r.gpus.size(), static_cast<size_t>(prohibited));
    r.libs = probe_library_versions();
    r.loaded = loaded_libraries();
    r.toolkits = discover_toolkits(DiscoveryInput::from_process(r.loaded));
    r.lazy_libraries = probe_lazy_libraries(r);
    if (r.runtime.compiled_in) {
      std::error_code ec;
      const auto exe = std::filesystem::canonical("/proc/self/exe", ec);
      r.binary_fatbin = read_fatbin_archs(ec ? "/proc/self/exe" : exe.string());
    }
    for (const auto& l : r.loaded)
      if (l.name == "libtorch_cuda.so") r.torch_fatbin = read_fatbin_archs(l.path);
    if (const char* p = std::getenv("PATH")) {
      r.nvcc_on_path = find_on_path(p, "nvcc");
      std::stringstream ss(p);
      std::string dir;
      while (std::getline(ss, dir, ':')) {
        if (to_lower(dir).find("cuda") != std::string::npos) r.path_cuda_entries.push_back(dir);
      }
    }
    for (const char* k :
         {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
          "LD_LIBRARY_PATH", "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUDA_HOME",
          "CUDA_PATH", "CONDA_PREFIX", "VIRTUAL_ENV", "CUBLAS_WORKSPACE_CONFIG",
          "PYTORCH_CUDA_ALLOC_CONF", "CUDA_CACHE_DISABLE", "CUDA_FORCE_PTX_JIT"})
      if (const char* v = std::getenv(k)) r.env_vars[k] = v;
    r.verdicts = evaluate(r);
    return r;
  }();
  return report;
}

}  // namespace cudabench::env
