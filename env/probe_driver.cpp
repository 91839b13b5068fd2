// The driver side of the stack, read without linking libcuda: the kernel
// module's version from /proc, libcuda.so.1 and libnvidia-ml.so.1 through
// dlopen, device nodes, CUDA_VISIBLE_DEVICES, and the GPUs as the driver API
// lists them (the same ordinals as the runtime's), each with NVML's view.
// Nothing here goes through the CUDA runtime, so no runtime error can leak
// from the probe into a benchmark, and a fake libcuda.so.1 and
// libnvidia-ml.so.1 on the library path can answer every call in tests.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <type_traits>

#include "nvml.h"
#include "parsers.h"
#include "probe.h"

namespace fs = std::filesystem;

namespace cudabench::env {

std::string loaded_path_of(void* handle) {
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr || !lm->l_name)
    return "";
  std::error_code ec;
  fs::path p = fs::canonical(lm->l_name, ec);
  return ec ? std::string(lm->l_name) : p.string();
}

namespace {

std::string kernel_module_version(const fs::path& root) {
  return parse_proc_driver_version(read_first_line((root / "proc/driver/nvidia/version").string()));
}

// The driver API entry points the probe uses (CUresult and CUdevice are ints).
struct DriverApi {
  int (*init)(unsigned) = nullptr;
  int (*version)(int*) = nullptr;
  int (*count)(int*) = nullptr;
  int (*error_string)(int, const char**) = nullptr;
  int (*error_name)(int, const char**) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*name)(char*, int, int) = nullptr;
  int (*total_mem)(std::size_t*, int) = nullptr;
  int (*attribute)(int*, int, int) = nullptr;
  int (*pci_bus_id)(char*, int, int) = nullptr;
  // The CUDA runtime finds every entry point through this, before cuInit.
  int (*proc_address_v2)(const char*, void**, int, unsigned long long, int*) = nullptr;
  int (*proc_address)(const char*, void**, int, unsigned long long) = nullptr;

  explicit DriverApi(void* h) {
    auto get = [h](auto& f, const char* name) { f = reinterpret_cast<std::decay_t<decltype(f)>>(dlsym(h, name)); };
    get(init, "cuInit");
    get(version, "cuDriverGetVersion");
    get(count, "cuDeviceGetCount");
    get(error_string, "cuGetErrorString");
    get(error_name, "cuGetErrorName");
    get(device_get, "cuDeviceGet");
    get(name, "cuDeviceGetName");
    get(total_mem, "cuDeviceTotalMem_v2");
    get(attribute, "cuDeviceGetAttribute");
    get(pci_bus_id, "cuDeviceGetPCIBusId");
    get(proc_address_v2, "cuGetProcAddress_v2");
    get(proc_address, "cuGetProcAddress");
  }
};

// CUdevice_attribute values (cuda.h).
constexpr int kAttrClockRate = 13, kAttrMultiprocessors = 16, kAttrMemoryClockRate = 36,
              kAttrBusWidth = 37, kAttrL2Size = 38, kAttrCcMajor = 75, kAttrCcMinor = 76;

// libcuda.so.1 (opened once: later dlopen calls return the same copy).
void* libcuda() {
  probe_calling("dlopen libcuda.so.1");
  return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

DriverInfo probe_driver_files(const std::string& root) {
  DriverInfo d;
  d.kernel_module_version = kernel_module_version(root);
  struct stat st {};
  d.device_nodes_present = ::stat((fs::path(root) / "dev/nvidiactl").c_str(), &st) == 0;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    d.visible_devices_set = true;
    d.visible_devices = v;
  }
  return d;
}

DriverInfo probe_driver(const std::string& root) {
  DriverInfo d = probe_driver_files(root);
  // libcuda.so.1 is what the CUDA runtime loads; the toolkit's stubs/ folder
  // has only libcuda.so, meant for linking. If .so.1 is missing but the stub
  // resolves, say so: that is the usual sign of a toolkit with no driver.
  void* h = libcuda();
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
    const DriverApi cu(h);
    probe_calling("cuDriverGetVersion");
    if (cu.version) cu.version(&d.cuda_version);
    if (void* entry = nullptr; cu.proc_address_v2 || cu.proc_address) {  // as the runtime starts
      probe_calling("cuGetProcAddress");
      int found = 0;
      if (cu.proc_address_v2) cu.proc_address_v2("cuInit", &entry, d.cuda_version, 0, &found);
      else cu.proc_address("cuInit", &entry, d.cuda_version, 0);
    }
    if (cu.init) {
      probe_calling("cuInit");
      d.init_result = cu.init(0);
      if (d.init_result != 0) {
        const char* name = nullptr;
        const char* text = nullptr;
        if (cu.error_name) cu.error_name(d.init_result, &name);
        if (cu.error_string) cu.error_string(d.init_result, &text);
        d.init_error = std::string(name ? name : "CUDA error") + " (" +
                       std::to_string(d.init_result) + "): " +
                       (text ? text : "no description");
      } else if (cu.count) {
        probe_calling("cuDeviceGetCount");
        cu.count(&d.device_count);
      }
    }
    // Keep libcuda loaded: the CUDA runtime will use the same copy.
  }

  const auto& nv = nvml::Session::get();
  d.nvml_found = nv.ok();
  d.nvml_error = nv.error();
  d.nvml_driver_version = nv.driver_version();
  d.nvml_cuda_version = nv.cuda_driver_version();
  d.nvml_init_result = nv.init_result();
  d.nvml_library_path = nv.library_path();
  return d;
}

std::vector<GpuDevice> probe_gpus() {
  std::vector<GpuDevice> out;
  void* h = libcuda();
  if (!h) return out;
  const DriverApi cu(h);
  int count = 0;
  if (!cu.init || cu.init(0) != 0 || !cu.count || cu.count(&count) != 0 || !cu.device_get) return out;
  const auto& nv = nvml::Session::get();
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    probe_calling("cuDeviceGet and the device's attributes");
    if (cu.device_get(&dev, i) != 0) continue;
    GpuDevice g;
    g.index = i;
    char buf[256] = {0};
    if (cu.name && cu.name(buf, sizeof buf, dev) == 0) g.name = buf;
    std::size_t mem = 0;
    if (cu.total_mem && cu.total_mem(&mem, dev) == 0) g.total_memory_bytes = static_cast<long long>(mem);
    auto attr = [&](int a) {
      int v = 0;
      return cu.attribute && cu.attribute(&v, a, dev) == 0 ? v : 0;
    };
    g.cc_major = attr(kAttrCcMajor);
    g.cc_minor = attr(kAttrCcMinor);
    g.sms = attr(kAttrMultiprocessors);
    g.memory_clock_khz = attr(kAttrMemoryClockRate);
    g.bus_width_bits = attr(kAttrBusWidth);
    g.sm_clock_khz = attr(kAttrClockRate);
    g.l2_bytes = attr(kAttrL2Size);
    char bus[32] = {0};
    if (cu.pci_bus_id && cu.pci_bus_id(bus, sizeof bus, dev) == 0) g.pci_bus_id = bus;
    g.peak_bandwidth_bytes_per_s = peak_bandwidth_bytes_per_s(g.memory_clock_khz, g.bus_width_bits);
    if (!g.pci_bus_id.empty()) {
      probe_calling("nvmlDeviceGetHandleByPciBusId and the device's settings");
      g.nvml = nv.describe(nv.device_by_pci_bus_id(g.pci_bus_id));
      pci_numa_affinity("/sys", g.pci_bus_id, &g.numa_node, &g.local_cpus);
    }
    out.push_back(g);
  }
  return out;
}

std::vector<NvmlGpuInfo> probe_nvml_gpus() { return nvml::Session::get().list(); }

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

double pcie_bytes_per_s(int generation, int width) {
  // Transfer rate per lane (GT/s) and the share of it that carries data.
  static const std::map<int, std::pair<double, double>> rate = {
      {1, {2.5, 8.0 / 10.0}},    {2, {5.0, 8.0 / 10.0}},    {3, {8.0, 128.0 / 130.0}},
      {4, {16.0, 128.0 / 130.0}}, {5, {32.0, 128.0 / 130.0}}, {6, {64.0, 242.0 / 256.0}},
  };
  const auto it = rate.find(generation);
  if (it == rate.end() || width <= 0) return 0;
  return it->second.first * 1e9 * it->second.second / 8.0 * width;
}

double pcie_peak_bytes_per_s(const NvmlGpuInfo& n) { return pcie_bytes_per_s(n.peak_pcie_gen(), n.pcie_width_max); }

}  // namespace cudabench::env
