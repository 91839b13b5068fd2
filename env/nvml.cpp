#include "nvml.h"

#include <dlfcn.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "parsers.h"
#include "probe.h"

namespace cudabench::env::nvml {
namespace {

// NVML's C types, by value: nvmlReturn_t and its enums are ints,
// nvmlDevice_t an opaque pointer.
using Dev = void*;
constexpr int kSuccess = 0, kNotFound = 6, kInsufficientSize = 7;
constexpr int kClockSm = 1, kClockMem = 2;     // nvmlClockType_t
constexpr int kTemperatureGpu = 0;             // nvmlTemperatureSensors_t
constexpr int kMemoryErrorCorrected = 0, kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0;                // nvmlEccCounterType_t

template <typename F>
F sym(void* h, const char* name) {
  return reinterpret_cast<F>(dlsym(h, name));
}

}  // namespace

struct Session::Api {
  int (*init)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  int (*cuda_driver_version)(int*) = nullptr;
  int (*by_pci_bus_id)(const char*, Dev*) = nullptr;
  int (*uuid)(Dev, char*, unsigned) = nullptr;
  int (*serial)(Dev, char*, unsigned) = nullptr;
  int (*persistence)(Dev, int*) = nullptr;
  int (*clock)(Dev, int, unsigned*) = nullptr;
  int (*app_clock)(Dev, int, unsigned*) = nullptr;
  int (*max_clock)(Dev, int, unsigned*) = nullptr;
  int (*power_limit)(Dev, unsigned*) = nullptr;
  int (*power_default)(Dev, unsigned*) = nullptr;
  int (*power_constraints)(Dev, unsigned*, unsigned*) = nullptr;
  int (*power_usage)(Dev, unsigned*) = nullptr;
  int (*temperature)(Dev, int, unsigned*) = nullptr;
  int (*reasons)(Dev, unsigned long long*) = nullptr;
  int (*ecc_mode)(Dev, int*, int*) = nullptr;
  int (*ecc_errors)(Dev, int, int, unsigned long long*) = nullptr;
  int (*pcie_gen)(Dev, unsigned*) = nullptr;
  int (*pcie_gen_max)(Dev, unsigned*) = nullptr;
  int (*pcie_gen_gpu_max)(Dev, unsigned*) = nullptr;
  int (*pcie_width)(Dev, unsigned*) = nullptr;
  int (*pcie_width_max)(Dev, unsigned*) = nullptr;
  int (*mig_mode)(Dev, unsigned*, unsigned*) = nullptr;
  int (*compute_mode)(Dev, int*) = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*by_index)(unsigned, Dev*) = nullptr;
  int (*name)(Dev, char*, unsigned) = nullptr;
  int (*pci_info)(Dev, void*) = nullptr;
  int (*cc)(Dev, int*, int*) = nullptr;
  int (*max_mig)(Dev, unsigned*) = nullptr;
  int (*mig_by_index)(Dev, unsigned, Dev*) = nullptr;
  int (*processes)(Dev, unsigned*, void*) = nullptr;
  int (*retired_pending)(Dev, int*) = nullptr;
  int (*remapped_rows)(Dev, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  int (*fabric)(Dev, void*) = nullptr;
};

std::string reason_names(std::uint64_t r) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {kReasonGpuIdle, "gpu_idle"},
      {kReasonApplicationsClocksSetting, "applications_clocks_setting"},
      {kReasonSwPowerCap, "sw_power_cap"},
      {kReasonHwSlowdown, "hw_slowdown"},
      {kReasonSyncBoost, "sync_boost"},
      {kReasonSwThermalSlowdown, "sw_thermal_slowdown"},
      {kReasonHwThermalSlowdown, "hw_thermal_slowdown"},
      {kReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {kReasonDisplayClockSetting, "display_clock_setting"},
  };
  std::string out;
  for (const auto& [bit, name] : names) {
    if (!(r & bit)) continue;
    out += (out.empty() ? "" : ",") + std::string(name);
    r &= ~bit;
  }
  if (r) {
    std::ostringstream o;
    o << std::hex << "0x" << r;
    out += (out.empty() ? "" : ",") + o.str();
  }
  return out;
}

std::string& Session::closed_reason() {
  static std::string why;
  return why;
}

void Session::keep_closed(const std::string& why) { closed_reason() = why; }

Session& Session::get() {
  static Session s;
  return s;
}

Session::Session() {
  if (!closed_reason().empty()) {
    error_ = closed_reason();
    return;
  }
  probe_calling("dlopen libnvidia-ml.so.1");
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error_ = std::string("libnvidia-ml.so.1 not found") + (e ? std::string(": ") + e : "");
    return;
  }
  static Api a;
  a.init = sym<decltype(a.init)>(h, "nvmlInit_v2");
  a.error_string = sym<decltype(a.error_string)>(h, "nvmlErrorString");
  a.driver_version = sym<decltype(a.driver_version)>(h, "nvmlSystemGetDriverVersion");
  a.cuda_driver_version = sym<decltype(a.cuda_driver_version)>(h, "nvmlSystemGetCudaDriverVersion");
  a.by_pci_bus_id = sym<decltype(a.by_pci_bus_id)>(h, "nvmlDeviceGetHandleByPciBusId_v2");
  a.uuid = sym<decltype(a.uuid)>(h, "nvmlDeviceGetUUID");
  a.serial = sym<decltype(a.serial)>(h, "nvmlDeviceGetSerial");
  a.persistence = sym<decltype(a.persistence)>(h, "nvmlDeviceGetPersistenceMode");
  a.clock = sym<decltype(a.clock)>(h, "nvmlDeviceGetClockInfo");
  a.app_clock = sym<decltype(a.app_clock)>(h, "nvmlDeviceGetApplicationsClock");
  a.max_clock = sym<decltype(a.max_clock)>(h, "nvmlDeviceGetMaxClockInfo");
  a.power_limit = sym<decltype(a.power_limit)>(h, "nvmlDeviceGetPowerManagementLimit");
  a.power_default = sym<decltype(a.power_default)>(h, "nvmlDeviceGetPowerManagementDefaultLimit");
  a.power_constraints = sym<decltype(a.power_constraints)>(h, "nvmlDeviceGetPowerManagementLimitConstraints");
  a.power_usage = sym<decltype(a.power_usage)>(h, "nvmlDeviceGetPowerUsage");
  a.temperature = sym<decltype(a.temperature)>(h, "nvmlDeviceGetTemperature");
  // The newer name first; drivers before 535 have only the older one.
  a.reasons = sym<decltype(a.reasons)>(h, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!a.reasons) a.reasons = sym<decltype(a.reasons)>(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
  a.ecc_mode = sym<decltype(a.ecc_mode)>(h, "nvmlDeviceGetEccMode");
  a.ecc_errors = sym<decltype(a.ecc_errors)>(h, "nvmlDeviceGetTotalEccErrors");
  a.pcie_gen = sym<decltype(a.pcie_gen)>(h, "nvmlDeviceGetCurrPcieLinkGeneration");
  a.pcie_gen_max = sym<decltype(a.pcie_gen_max)>(h, "nvmlDeviceGetMaxPcieLinkGeneration");
  a.pcie_gen_gpu_max = sym<decltype(a.pcie_gen_gpu_max)>(h, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
  a.pcie_width = sym<decltype(a.pcie_width)>(h, "nvmlDeviceGetCurrPcieLinkWidth");
  a.pcie_width_max = sym<decltype(a.pcie_width_max)>(h, "nvmlDeviceGetMaxPcieLinkWidth");
  a.mig_mode = sym<decltype(a.mig_mode)>(h, "nvmlDeviceGetMigMode");
  a.compute_mode = sym<decltype(a.compute_mode)>(h, "nvmlDeviceGetComputeMode");
  a.count = sym<decltype(a.count)>(h, "nvmlDeviceGetCount_v2");
  a.by_index = sym<decltype(a.by_index)>(h, "nvmlDeviceGetHandleByIndex_v2");
  a.name = sym<decltype(a.name)>(h, "nvmlDeviceGetName");
  a.pci_info = sym<decltype(a.pci_info)>(h, "nvmlDeviceGetPciInfo_v3");
  a.cc = sym<decltype(a.cc)>(h, "nvmlDeviceGetCudaComputeCapability");
  a.max_mig = sym<decltype(a.max_mig)>(h, "nvmlDeviceGetMaxMigDeviceCount");
  a.mig_by_index = sym<decltype(a.mig_by_index)>(h, "nvmlDeviceGetMigDeviceHandleByIndex");
  a.processes = sym<decltype(a.processes)>(h, "nvmlDeviceGetComputeRunningProcesses_v3");
  a.retired_pending = sym<decltype(a.retired_pending)>(h, "nvmlDeviceGetRetiredPagesPendingStatus");
  a.remapped_rows = sym<decltype(a.remapped_rows)>(h, "nvmlDeviceGetRemappedRows");
  a.fabric = sym<decltype(a.fabric)>(h, "nvmlDeviceGetGpuFabricInfo");
  library_path_ = loaded_path_of(h);
  if (!a.init) {
    error_ = "libnvidia-ml.so.1 has no nvmlInit_v2";
    return;
  }
  probe_calling("nvmlInit_v2");
  const int rc = a.init();
  init_result_ = rc;
  if (rc != kSuccess) {
    const char* text = a.error_string ? a.error_string(rc) : nullptr;
    error_ = "nvmlInit failed (" + std::to_string(rc) + (text ? std::string(": ") + text : "") + ")";
    return;
  }
  api_ = &a;
  ok_ = true;
  char buf[96] = {0};
  probe_calling("nvmlSystemGetDriverVersion");
  if (a.driver_version && a.driver_version(buf, sizeof buf) == kSuccess) driver_version_ = buf;
  if (a.cuda_driver_version) a.cuda_driver_version(&cuda_driver_version_);
}

void* Session::device_by_pci_bus_id(const std::string& bus_id) const {
  Dev d = nullptr;
  if (!ok_ || !api_->by_pci_bus_id || api_->by_pci_bus_id(bus_id.c_str(), &d) != kSuccess) return nullptr;
  return d;
}

namespace {
// Calls f(args..., &out) and returns out, or -1 when the entry point is
// missing or does not succeed.
template <typename F, typename... A>
int uint_or_unknown(F f, A... args) {
  unsigned v = 0;
  return f && f(args..., &v) == kSuccess ? static_cast<int>(v) : -1;
}
double milliwatts_to_w(int mw) { return mw < 0 ? -1 : mw / 1000.0; }
}  // namespace

namespace {
using Api = Session::Api;

// Name, UUID, serial, PCI bus id, compute capability.
void read_identity(const Api& a, Dev d, NvmlGpuInfo& g) {
  char buf[96] = {0};
  if (a.uuid && a.uuid(d, buf, sizeof buf) == kSuccess) g.uuid = buf;
  buf[0] = 0;
  if (a.serial && a.serial(d, buf, sizeof buf) == kSuccess) g.serial = buf;
  buf[0] = 0;
  if (a.name && a.name(d, buf, sizeof buf) == kSuccess) g.name = buf;
  // nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId,
  // pciSubSystemId (unsigned each), busId[32]: 68 bytes, read into more.
  char pci[128] = {0};
  if (a.pci_info && a.pci_info(d, pci) == kSuccess) g.pci_bus_id = std::string(pci + 36, strnlen(pci + 36, 32));
  int major = 0, minor = 0;
  if (a.cc && a.cc(d, &major, &minor) == kSuccess) {
    g.cc_major = major;
    g.cc_minor = minor;
  }
}

// Clocks, power limits, the PCIe link, persistence, MIG and compute mode.
void read_settings(const Api& a, Dev d, NvmlGpuInfo& g) {
  int state = 0;
  if (a.persistence && a.persistence(d, &state) == kSuccess) g.persistence_mode = state;
  g.sm_clock_mhz = uint_or_unknown(a.clock, d, kClockSm);
  g.mem_clock_mhz = uint_or_unknown(a.clock, d, kClockMem);
  g.app_sm_clock_mhz = uint_or_unknown(a.app_clock, d, kClockSm);
  g.app_mem_clock_mhz = uint_or_unknown(a.app_clock, d, kClockMem);
  g.max_sm_clock_mhz = uint_or_unknown(a.max_clock, d, kClockSm);
  g.max_mem_clock_mhz = uint_or_unknown(a.max_clock, d, kClockMem);
  g.power_limit_w = milliwatts_to_w(uint_or_unknown(a.power_limit, d));
  g.power_default_w = milliwatts_to_w(uint_or_unknown(a.power_default, d));
  unsigned lo = 0, hi = 0;
  if (a.power_constraints && a.power_constraints(d, &lo, &hi) == kSuccess) g.power_max_w = hi / 1000.0;
  g.pcie_gen = uint_or_unknown(a.pcie_gen, d);
  g.pcie_gen_max = uint_or_unknown(a.pcie_gen_max, d);
  g.pcie_gen_gpu_max = uint_or_unknown(a.pcie_gen_gpu_max, d);
  g.pcie_width = uint_or_unknown(a.pcie_width, d);
  g.pcie_width_max = uint_or_unknown(a.pcie_width_max, d);
  unsigned mig = 0, mig_pending = 0;
  if (a.mig_mode && a.mig_mode(d, &mig, &mig_pending) == kSuccess) {
    g.mig_current = static_cast<int>(mig);
    g.mig_pending = static_cast<int>(mig_pending);
  }
  if (a.compute_mode && a.compute_mode(d, &state) == kSuccess) g.compute_mode = state;
}

// ECC mode and errors, memory waiting to be retired or remapped.
void read_memory_health(const Api& a, Dev d, NvmlGpuInfo& g) {
  int state = 0, pending = 0;
  if (a.ecc_mode && a.ecc_mode(d, &state, &pending) == kSuccess) {
    g.ecc_current = state;
    g.ecc_pending = pending;
  }
  unsigned long long n = 0;
  if (a.ecc_errors && a.ecc_errors(d, kMemoryErrorCorrected, kVolatileEcc, &n) == kSuccess)
    g.ecc_volatile_corrected = static_cast<long long>(n);
  if (a.ecc_errors && a.ecc_errors(d, kMemoryErrorUncorrected, kVolatileEcc, &n) == kSuccess)
    g.ecc_volatile_uncorrected = static_cast<long long>(n);
  if (a.retired_pending && a.retired_pending(d, &state) == kSuccess) g.retired_pages_pending = state;
  unsigned corr = 0, unc = 0, rpending = 0, rfailure = 0;
  if (a.remapped_rows && a.remapped_rows(d, &corr, &unc, &rpending, &rfailure) == kSuccess) {
    g.remap_pending = rpending ? 1 : 0;
    g.remap_failure = rfailure ? 1 : 0;
    g.remap_uncorrectable_rows = static_cast<int>(unc);
  }
}

// With MIG on: how many MIG devices exist (-1 when NVML will not say).
void count_mig_devices(const Api& a, Dev d, NvmlGpuInfo& g) {
  unsigned max = 0;
  if (g.mig_current != 1 || !a.max_mig || !a.mig_by_index || a.max_mig(d, &max) != kSuccess) return;
  g.mig_devices = 0;
  for (unsigned i = 0; i < max && g.mig_devices >= 0; ++i) {
    Dev m = nullptr;
    const int rc = a.mig_by_index(d, i, &m);
    if (rc == kSuccess) ++g.mig_devices;
    else if (rc != kNotFound) g.mig_devices = -1;  // no permission, ...: unknown, not "none"
  }
}

// The compute processes on the GPU, with their names.
void read_processes(const Api& a, Dev d, NvmlGpuInfo& g) {
  if (!a.processes) return;
  // nvmlProcessInfo_t (v2 = v3): pid, usedGpuMemory (8-byte aligned),
  // gpuInstanceId, computeInstanceId: 24 bytes each.
  struct Info {
    unsigned pid;
    unsigned long long used;
    unsigned gi, ci;
  };
  unsigned n = 0;
  int prc = a.processes(d, &n, nullptr);
  std::vector<Info> infos;
  if (prc == kInsufficientSize) {
    n = n * 2 + 8;
    infos.resize(n);
    prc = a.processes(d, &n, infos.data());
  }
  if (prc != kSuccess) return;
  g.processes_known = true;
  for (unsigned i = 0; i < n && i < infos.size(); ++i) {
    g.compute_pids.push_back(infos[i].pid);
    g.compute_names.push_back(read_first_line("/proc/" + std::to_string(infos[i].pid) + "/comm"));
  }
}

// The NVLink fabric's state (NVSwitch systems).
void read_fabric(const Api& a, Dev d, NvmlGpuInfo& g) {
  // nvmlGpuFabricInfo_t: clusterUuid[16], status (nvmlReturn_t), cliqueId,
  // state (one byte in nvml.h; zeroed room either way).
  char fabric[64] = {0};
  if (!a.fabric || a.fabric(d, fabric) != kSuccess) return;
  int status = 0;
  std::memcpy(&status, fabric + 16, sizeof status);
  g.fabric_state = static_cast<unsigned char>(fabric[24]);
  g.fabric_status = status;
}

}  // namespace

NvmlGpuInfo Session::describe(void* d) const {
  NvmlGpuInfo g;
  if (!ok_ || !d) return g;
  g.found = true;
  read_identity(*api_, d, g);
  read_settings(*api_, d, g);
  read_memory_health(*api_, d, g);
  count_mig_devices(*api_, d, g);
  read_processes(*api_, d, g);
  read_fabric(*api_, d, g);
  return g;
}

std::vector<NvmlGpuInfo> Session::list() const {
  std::vector<NvmlGpuInfo> out;
  unsigned n = 0;
  if (!ok_ || !api_->count || !api_->by_index || api_->count(&n) != kSuccess) return out;
  for (unsigned i = 0; i < n; ++i) {
    Dev d = nullptr;
    probe_calling("nvmlDeviceGetHandleByIndex and the device's settings");
    if (api_->by_index(i, &d) != kSuccess) continue;
    NvmlGpuInfo g = describe(d);
    g.nvml_index = static_cast<int>(i);
    out.push_back(std::move(g));
  }
  return out;
}

Sample Session::sample(void* d) const {
  Sample s;
  if (!ok_ || !d) return s;
  const Api& a = *api_;
  s.sm_clock_mhz = uint_or_unknown(a.clock, d, kClockSm);
  s.mem_clock_mhz = uint_or_unknown(a.clock, d, kClockMem);
  s.power_w = milliwatts_to_w(uint_or_unknown(a.power_usage, d));
  s.temp_c = uint_or_unknown(a.temperature, d, kTemperatureGpu);
  unsigned long long r = 0;
  if (a.reasons && a.reasons(d, &r) == kSuccess) {
    s.reasons_known = true;
    s.clock_event_reasons = r;
  }
  return s;
}

}  // namespace cudabench::env::nvml
