// A fake libnvidia-ml.so.1: the NVML calls of cudabench's probe and
// telemetry, answered from the "nvml" part of each GPU in the machine named
// by $CUDABENCH_FAKE_GPU. NVML's own order of the GPUs can differ from
// CUDA's ("nvml_order"), as on real machines, so lookups by PCI bus id are
// tested. Absent fields answer NVML_ERROR_NOT_SUPPORTED.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fake_machine.h"

namespace {
constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6;

using Dev = void*;
Dev handle(int gpu) { return reinterpret_cast<Dev>(static_cast<std::uintptr_t>(gpu + 1)); }
int gpu_of(Dev d) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(d)) - 1; }

bool initialised = false;

const nlohmann::json* nvml_of(Dev d) {
  const auto* g = fake::Machine::get().gpu(gpu_of(d));
  return g && g->contains("nvml") ? &(*g)["nvml"] : nullptr;
}

// Reads nvml/<path> of device d as T into *out.
template <typename T>
int answer(Dev d, const std::string& path, T* out) {
  if (!initialised) return kUninitialized;
  const auto* n = nvml_of(d);
  if (!n || !out) return n ? kInvalidArgument : kNotSupported;
  const nlohmann::json v = fake::Machine::get().read(*n, path, path + "#" + std::to_string(gpu_of(d)));
  if (v.is_null()) return kNotSupported;
  *out = v.get<T>();
  return kSuccess;
}

const char* clock_name(int type) { return type == 1 ? "sm" : type == 2 ? "mem" : "graphics"; }
}  // namespace

FAKE_API int nvmlInit_v2() {
  // "nvml/init_fault" "hang": nvmlInit blocks, as on a stuck GPU.
  if (fake::Machine::get().json().value("/nvml/init_fault"_json_pointer, "") == "hang")
    for (;;) pause();
  const int rc = fake::Machine::get().json().value("/nvml/init_result"_json_pointer, 0);
  initialised = rc == kSuccess;
  return rc;
}
FAKE_API int nvmlShutdown() {
  initialised = false;
  return kSuccess;
}
FAKE_API const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kNotSupported: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 18: return "RM has detected an NVML/RM version mismatch";
    default: return "Unknown Error";
  }
}
FAKE_API int nvmlSystemGetDriverVersion(char* out, unsigned len) {
  if (!initialised) return kUninitialized;
  fake::copy_string(fake::Machine::get().json().value("/nvml/driver_version"_json_pointer, std::string("580.95.05")), out, len);
  return kSuccess;
}
FAKE_API int nvmlSystemGetCudaDriverVersion(int* v) {
  if (!initialised) return kUninitialized;
  *v = fake::Machine::get().json().value("/nvml/cuda_version"_json_pointer, 13000);
  return kSuccess;
}
FAKE_API int nvmlDeviceGetCount_v2(unsigned* n) {
  if (!initialised) return kUninitialized;
  *n = static_cast<unsigned>(fake::Machine::get().gpu_count());
  return kSuccess;
}
FAKE_API int nvmlDeviceGetHandleByIndex_v2(unsigned index, Dev* d) {
  if (!initialised) return kUninitialized;
  auto& m = fake::Machine::get();
  const auto& order = m.json().value("nvml_order", nlohmann::json::array());
  if (static_cast<int>(index) >= m.gpu_count()) return kInvalidArgument;
  *d = handle(order.empty() ? static_cast<int>(index) : order[index].get<int>());
  return kSuccess;
}
FAKE_API int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, Dev* d) {
  if (!initialised) return kUninitialized;
  auto& m = fake::Machine::get();
  for (int i = 0; i < m.gpu_count(); ++i)
    if (fake::normalize_bus_id(m.gpu(i)->value("pci_bus_id", "")) == fake::normalize_bus_id(bus) &&
        m.gpu(i)->contains("nvml")) {
      *d = handle(i);
      return kSuccess;
    }
  return kNotFound;
}
FAKE_API int nvmlDeviceGetUUID(Dev d, char* out, unsigned len) {
  std::string s;
  const int rc = answer(d, "uuid", &s);
  if (rc == kSuccess) fake::copy_string(s, out, len);
  return rc;
}
FAKE_API int nvmlDeviceGetSerial(Dev d, char* out, unsigned len) {
  std::string s;
  const int rc = answer(d, "serial", &s);
  if (rc == kSuccess) fake::copy_string(s, out, len);
  return rc;
}
FAKE_API int nvmlDeviceGetPersistenceMode(Dev d, int* v) { return answer(d, "persistence_mode", v); }
FAKE_API int nvmlDeviceGetClockInfo(Dev d, int type, unsigned* v) {
  return answer(d, std::string("clocks/") + clock_name(type), v);
}
FAKE_API int nvmlDeviceGetApplicationsClock(Dev d, int type, unsigned* v) {
  return answer(d, std::string("app_clocks/") + clock_name(type), v);
}
FAKE_API int nvmlDeviceGetMaxClockInfo(Dev d, int type, unsigned* v) {
  return answer(d, std::string("max_clocks/") + clock_name(type), v);
}
FAKE_API int nvmlDeviceGetPowerManagementLimit(Dev d, unsigned* v) { return answer(d, "power_limit_mw", v); }
FAKE_API int nvmlDeviceGetPowerManagementDefaultLimit(Dev d, unsigned* v) { return answer(d, "power_default_mw", v); }
FAKE_API int nvmlDeviceGetPowerManagementLimitConstraints(Dev d, unsigned* lo, unsigned* hi) {
  *lo = 0;
  return answer(d, "power_max_mw", hi);
}
FAKE_API int nvmlDeviceGetPowerUsage(Dev d, unsigned* v) { return answer(d, "power_usage_mw", v); }
FAKE_API int nvmlDeviceGetTemperature(Dev d, int, unsigned* v) { return answer(d, "temperature_c", v); }
FAKE_API int nvmlDeviceGetCurrentClocksEventReasons(Dev d, unsigned long long* v) {
  return answer(d, "clock_event_reasons", v);
}
FAKE_API int nvmlDeviceGetEccMode(Dev d, int* current, int* pending) {
  int rc = answer(d, "ecc/current", current);
  return rc == kSuccess ? answer(d, "ecc/pending", pending) : rc;
}
FAKE_API int nvmlDeviceGetTotalEccErrors(Dev d, int type, int counter, unsigned long long* v) {
  if (counter != 0) return kNotSupported;  // only the volatile counters are described
  return answer(d, type == 1 ? "ecc/volatile_uncorrected" : "ecc/volatile_corrected", v);
}
FAKE_API int nvmlDeviceGetCurrPcieLinkGeneration(Dev d, unsigned* v) { return answer(d, "pcie/gen", v); }
FAKE_API int nvmlDeviceGetMaxPcieLinkGeneration(Dev d, unsigned* v) { return answer(d, "pcie/gen_max", v); }
FAKE_API int nvmlDeviceGetGpuMaxPcieLinkGeneration(Dev d, unsigned* v) { return answer(d, "pcie/gpu_gen_max", v); }
FAKE_API int nvmlDeviceGetCurrPcieLinkWidth(Dev d, unsigned* v) { return answer(d, "pcie/width", v); }
FAKE_API int nvmlDeviceGetMaxPcieLinkWidth(Dev d, unsigned* v) { return answer(d, "pcie/width_max", v); }
FAKE_API int nvmlDeviceGetMigMode(Dev d, unsigned* current, unsigned* pending) {
  int rc = answer(d, "mig/current", current);
  return rc == kSuccess ? answer(d, "mig/pending", pending) : rc;
}
FAKE_API int nvmlDeviceGetComputeMode(Dev d, int* v) { return answer(d, "compute_mode", v); }

// Facts of the GPU itself (name, PCI id, compute capability) come from the
// GPU's own part, as for the fake libcuda.
const nlohmann::json* gpu_of_handle(Dev d) {
  return initialised ? fake::Machine::get().gpu(gpu_of(d)) : nullptr;
}
FAKE_API int nvmlDeviceGetName(Dev d, char* out, unsigned len) {
  const auto* g = gpu_of_handle(d);
  if (!g) return kUninitialized;
  fake::copy_string(g->value("name", "Fake GPU"), out, len);
  return kSuccess;
}
FAKE_API int nvmlDeviceGetPciInfo_v3(Dev d, void* info) {
  const auto* g = gpu_of_handle(d);
  if (!g || !g->contains("pci_bus_id")) return kNotSupported;
  // nvmlPciInfo_t: busIdLegacy[16], 5 unsigned, busId[32].
  char* p = static_cast<char*>(info);
  std::memset(p, 0, 68);
  const std::string bus = (*g)["pci_bus_id"].get<std::string>();
  fake::copy_string(bus, p, 16);
  const unsigned id = static_cast<unsigned>(std::stoul(g->value("pci_device_id", std::string("2335")), nullptr, 16) << 16 | 0x10de);
  std::memcpy(p + 28, &id, sizeof id);
  fake::copy_string("0000" + bus, p + 36, 32);
  return kSuccess;
}
FAKE_API int nvmlDeviceGetCudaComputeCapability(Dev d, int* major, int* minor) {
  const auto* g = gpu_of_handle(d);
  if (!g || !g->contains("cc_major")) return kNotSupported;
  *major = (*g)["cc_major"].get<int>();
  *minor = g->value("cc_minor", 0);
  return kSuccess;
}
FAKE_API int nvmlDeviceGetMaxMigDeviceCount(Dev d, unsigned* n) {
  unsigned mig = 0;
  const int rc = answer(d, "mig/current", &mig);
  if (rc != kSuccess) return rc;
  *n = mig ? 7 : 0;
  return kSuccess;
}
FAKE_API int nvmlDeviceGetMigDeviceHandleByIndex(Dev d, unsigned index, Dev* out) {
  unsigned n = 0;
  if (answer(d, "mig/devices", &n) != kSuccess || index >= n) return kNotFound;
  *out = d;
  return kSuccess;
}
FAKE_API int nvmlDeviceGetComputeRunningProcesses_v3(Dev d, unsigned* count, void* infos) {
  // "processes": "4242,4343" (a JSON array would be a sequence of readings).
  std::string list;
  const int rc = answer(d, "processes", &list);
  if (rc != kSuccess) return rc;
  std::vector<unsigned> pids;
  std::stringstream ss(list);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) pids.push_back(static_cast<unsigned>(std::stoul(p)));
  if (pids.empty()) {
    *count = 0;
    return kSuccess;
  }
  if (!infos || *count < pids.size()) {
    *count = static_cast<unsigned>(pids.size());
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  struct Info {
    unsigned pid;
    unsigned long long used;
    unsigned gi, ci;
  };
  auto* out = static_cast<Info*>(infos);
  for (std::size_t i = 0; i < pids.size(); ++i) out[i] = Info{pids[i], 1ull << 30, 0, 0};
  *count = static_cast<unsigned>(pids.size());
  return kSuccess;
}
FAKE_API int nvmlDeviceGetRetiredPagesPendingStatus(Dev d, int* v) { return answer(d, "retired_pages_pending", v); }
FAKE_API int nvmlDeviceGetRemappedRows(Dev d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  *corr = *unc = 0;
  answer(d, "remapped_rows/uncorrectable", unc);  // optional: 0 when absent
  const int rc = answer(d, "remapped_rows/pending", pending);
  return rc == kSuccess ? answer(d, "remapped_rows/failure", failure) : rc;
}
FAKE_API int nvmlDeviceGetGpuFabricInfo(Dev d, void* info) {
  unsigned state = 0;
  int status = 0;
  int rc = answer(d, "fabric/state", &state);
  if (rc == kSuccess) rc = answer(d, "fabric/status", &status);
  if (rc != kSuccess) return rc;
  char* p = static_cast<char*>(info);
  std::memset(p, 0, 28);
  std::memcpy(p + 16, &status, sizeof status);
  p[24] = static_cast<char>(state);
  return kSuccess;
}
