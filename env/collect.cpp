#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "build_info.h"
#include "nvml.h"
#include "parsers.h"
#include "probe.h"

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
  b.stack = CUDABENCH_BUILD_STACK;
  return b;
}

namespace {
// Whether the driver can run code built with CUDA `built_version`; `who`
// names that code in the reason ("this binary", "LibTorch").
GpuStatus driver_status(const DriverInfo& d, int built_version, const std::string& who, size_t gpus_found,
                        size_t gpus_prohibited) {
  GpuStatus s;
  if (!d.probe_failure.empty()) {
    s.reason = d.probe_failure + ": the driver is not in a state to run anything (GPU benchmarks skipped)";
  } else if (!d.libcuda_found) {
    s.reason = d.libcuda_is_stub
                   ? "no NVIDIA driver: libcuda.so.1 not found (only the toolkit's stub " +
                         d.libcuda_path + " is on the library path)"
                   : "no NVIDIA driver: libcuda.so.1 not found";
  } else if (d.libcuda_is_stub) {
    s.reason = "libcuda.so.1 is the toolkit's stub (" + d.libcuda_path + "), not a driver";
  } else if (d.visible_devices_set &&
             (d.visible_devices.empty() || d.visible_devices == "-1")) {
    s.reason = "no GPU visible: CUDA_VISIBLE_DEVICES='" + d.visible_devices + "'";
  } else if (d.init_result != 0) {
    s.reason = "the NVIDIA driver failed to start: cuInit: " + d.init_error;
  } else if (d.device_count == 0 || gpus_found == 0) {
    s.reason = "the NVIDIA driver is loaded but sees no GPU";
  } else if (gpus_prohibited >= gpus_found) {
    s.reason = "every GPU is in compute mode Prohibited (nvidia-smi -c): no CUDA context can be created";
  } else if (d.cuda_version && built_version &&
             Version::from_cuda_int(d.cuda_version).major <
                 Version::from_cuda_int(built_version).major) {
    s.reason = "the driver supports only CUDA " + Version::from_cuda_int(d.cuda_version).major_minor() + ", " + who +
               " needs CUDA " + Version::from_cuda_int(built_version).major_minor();
  } else {
    s.usable = true;
  }
  return s;
}
}  // namespace

GpuStatus decide_gpu_status(const DriverInfo& d, const RuntimeInfo& rt, size_t gpus_found,
                            size_t gpus_prohibited) {
  if (!rt.compiled_in) {
    GpuStatus s;
    s.reason = "this build has no CUDA (nvcc was not found at configure time)";
    return s;
  }
  return driver_status(d, rt.built_version, "this binary", gpus_found, gpus_prohibited);
}

GpuStatus decide_torch_gpu_status(const DriverInfo& d, const TorchInfo& t, size_t gpus_found,
                                  size_t gpus_prohibited) {
  if (!t.compiled_in || t.cuda_version == 0) {
    GpuStatus s;
    s.reason = t.compiled_in ? "this build's LibTorch has no CUDA" : "this build has no LibTorch";
    return s;
  }
  return driver_status(d, t.cuda_version, "LibTorch", gpus_found, gpus_prohibited);
}

const Report& collect() {
  static const Report report = [] {
    Report r;
    r.build = build_info();
    const std::string root = probe_root();
    r.host = probe_host(root);
    r.system = probe_system(root);
    // The driver's calls were made in a child before this program loaded
    // anything (load_guard.cpp): a stuck or broken driver is withheld.
    const DriverProbeFailure failure = withheld_driver();
    if (failure.failed()) {
      r.driver = probe_driver_files(root);
      r.driver.probe_failure = failure.text;
      r.driver.probe_failure_call = failure.call;
      nvml::Session::keep_closed(failure.text);
    } else {
      r.driver = probe_driver(root);
      r.nvml_gpus = probe_nvml_gpus();
    }
    r.runtime = probe_runtime();
    r.torch = probe_torch(!failure.failed());  // before listing libraries: it may load some
    if (decide_gpu_status(r.driver, r.runtime, 1).usable || decide_torch_gpu_status(r.driver, r.torch, 1).usable)
      r.gpus = probe_gpus();
    const auto prohibited = std::count_if(r.gpus.begin(), r.gpus.end(),
                                          [](const GpuDevice& g) { return g.nvml.compute_mode == 2; });
    r.status = decide_gpu_status(r.driver, r.runtime, r.gpus.size(), static_cast<size_t>(prohibited));
    r.torch_status = decide_torch_gpu_status(r.driver, r.torch, r.gpus.size(), static_cast<size_t>(prohibited));
    r.libs = probe_library_versions();
    r.loaded = loaded_libraries();
    r.toolkits = discover_toolkits(DiscoveryInput::from_process(r.loaded));
    r.lazy_libraries = probe_lazy_libraries(r);
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
    return r;
  }();
  return report;
}

}  // namespace cudabench::env
