// The driver side of the stack, read without linking libcuda: the kernel
// module's version from /proc, libcuda.so.1 and libnvidia-ml.so.1 through
// dlopen, device nodes, CUDA_VISIBLE_DEVICES.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "probe.h"

namespace fs = std::filesystem;

namespace cudabench::env {
namespace {

std::string loaded_path_of(void* handle) {
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr || !lm->l_name)
    return "";
  std::error_code ec;
  fs::path p = fs::canonical(lm->l_name, ec);
  return ec ? std::string(lm->l_name) : p.string();
}

std::string kernel_module_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  if (!f) return "";
  std::string line;
  std::getline(f, line);
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue ..."
  static const std::regex re(R"(Kernel Module\s+(?:for \S+\s+)?([0-9]+\.[0-9]+(?:\.[0-9]+)?))");
  std::smatch m;
  if (std::regex_search(line, m, re)) return m[1];
  return line;
}

// libcuda.so.580.95.05 -> 580.95.05
std::string version_from_soname(const std::string& path) {
  static const std::regex re(R"(\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$)");
  std::smatch m;
  if (std::regex_search(path, m, re)) return m[1];
  return "";
}

using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuGetErrorString = int (*)(int, const char**);

using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetDriverVersion = int (*)(char*, unsigned);
using NvmlGetCudaDriverVersion = int (*)(int*);

}  // namespace

DriverInfo probe_driver() {
  DriverInfo d;
  d.kernel_module_version = kernel_module_version();
  struct stat st {};
  d.device_nodes_present = ::stat("/dev/nvidiactl", &st) == 0;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    d.visible_devices_set = true;
    d.visible_devices = v;
  }

  // libcuda.so.1 is what the CUDA runtime loads; the toolkit's stubs/ folder
  // has only libcuda.so, meant for linking. If .so.1 is missing but the stub
  // resolves, say so: that is the usual sign of a toolkit with no driver.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    d.libcuda_error = e ? e : "libcuda.so.1 not found";
    if (void* stub = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL)) {
      const std::string p = loaded_path_of(stub);
      if (p.find("/stubs/") != std::string::npos) {
        d.libcuda_is_stub = true;
        d.libcuda_path = p;
      }
      dlclose(stub);
    }
  } else {
    d.libcuda_found = true;
    d.libcuda_path = loaded_path_of(h);
    d.libcuda_file_version = version_from_soname(d.libcuda_path);
    d.libcuda_is_stub = d.libcuda_path.find("/stubs/") != std::string::npos;
    auto get_version = reinterpret_cast<CuDriverGetVersion>(dlsym(h, "cuDriverGetVersion"));
    auto init = reinterpret_cast<CuInit>(dlsym(h, "cuInit"));
    auto count = reinterpret_cast<CuDeviceGetCount>(dlsym(h, "cuDeviceGetCount"));
    auto err_str = reinterpret_cast<CuGetErrorString>(dlsym(h, "cuGetErrorString"));
    auto err_name = reinterpret_cast<CuGetErrorString>(dlsym(h, "cuGetErrorName"));
    if (get_version) get_version(&d.cuda_version);
    if (init) {
      d.init_result = init(0);
      if (d.init_result != 0) {
        const char* name = nullptr;
        const char* text = nullptr;
        if (err_name) err_name(d.init_result, &name);
        if (err_str) err_str(d.init_result, &text);
        d.init_error = std::string(name ? name : "CUDA error") + " (" +
                       std::to_string(d.init_result) + "): " +
                       (text ? text : "no description");
      } else if (count) {
        count(&d.device_count);
      }
    }
    // Keep libcuda loaded: the CUDA runtime will use the same copy.
  }

  if (void* n = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    auto init = reinterpret_cast<NvmlInit>(dlsym(n, "nvmlInit_v2"));
    auto shut = reinterpret_cast<NvmlShutdown>(dlsym(n, "nvmlShutdown"));
    auto drv = reinterpret_cast<NvmlGetDriverVersion>(dlsym(n, "nvmlSystemGetDriverVersion"));
    auto cuv = reinterpret_cast<NvmlGetCudaDriverVersion>(dlsym(n, "nvmlSystemGetCudaDriverVersion"));
    if (init && init() == 0) {
      d.nvml_found = true;
      char buf[96] = {0};
      if (drv && drv(buf, sizeof buf) == 0) d.nvml_driver_version = buf;
      if (cuv) cuv(&d.nvml_cuda_version);
      if (shut) shut();
    }
  }
  return d;
}

std::vector<LoadedLibrary> loaded_libraries() {
  static const std::regex interesting(
      R"(^(libcuda\.so|libcudart|libcublas|libcublasLt|libcudnn|libtorch|libc10|libnvrtc|libnccl|libnvidia-ml|libcusparse|libcufft|libcurand|libnvJitLink|libcupti|libcusolver))");
  std::vector<LoadedLibrary> out;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* v = static_cast<std::vector<LoadedLibrary>*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const fs::path p(info->dlpi_name);
        const std::string name = p.filename().string();
        if (!std::regex_search(name, interesting)) return 0;
        std::error_code ec;
        const fs::path real = fs::canonical(p, ec);
        v->push_back({name, ec ? p.string() : real.string()});
        return 0;
      },
      &out);
  return out;
}

double peak_bandwidth_bytes_per_s(int memory_clock_khz, int bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return 0;
  return static_cast<double>(memory_clock_khz) * 1000.0 * 2.0 *
         static_cast<double>(bus_width_bits) / 8.0;
}

}  // namespace cudabench::env
