// NVML (libnvidia-ml.so.1), opened with dlopen like libcuda, so that a
// binary starts without a driver and a test can put a fake NVML on the
// library path. One session per process: initialised on first use, never
// shut down (NVML counts its users; process exit releases it).
//
// Used by the environment report (what each GPU is set to: clocks, power
// limits, ECC, PCIe link, MIG, compute mode) and by the benchmarks'
// telemetry (clocks, power, temperature and clock-event reasons while a
// benchmark runs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "env_types.h"

namespace cudabench::env::nvml {

// One reading of a GPU's state. -1 (or reasons_known = false) where NVML
// gave no answer.
struct Sample {
  int sm_clock_mhz = -1;
  int mem_clock_mhz = -1;
  double power_w = -1;
  int temp_c = -1;
  bool reasons_known = false;
  std::uint64_t clock_event_reasons = 0;  // nvmlClocksEventReason* bits
};

// The clock-event ("throttle") reason bits of NVML.
constexpr std::uint64_t kReasonGpuIdle = 0x1;
constexpr std::uint64_t kReasonApplicationsClocksSetting = 0x2;
constexpr std::uint64_t kReasonSwPowerCap = 0x4;
constexpr std::uint64_t kReasonHwSlowdown = 0x8;
constexpr std::uint64_t kReasonSyncBoost = 0x10;
constexpr std::uint64_t kReasonSwThermalSlowdown = 0x20;
constexpr std::uint64_t kReasonHwThermalSlowdown = 0x40;
constexpr std::uint64_t kReasonHwPowerBrakeSlowdown = 0x80;
constexpr std::uint64_t kReasonDisplayClockSetting = 0x100;
// Those that slow the GPU down ("throttled"): application clocks, sync
// boost and the display clock are settings, idle is no work.
constexpr std::uint64_t kSlowdownReasons = kReasonSwPowerCap | kReasonHwSlowdown | kReasonSwThermalSlowdown |
                                           kReasonHwThermalSlowdown | kReasonHwPowerBrakeSlowdown;

// "sw_power_cap,hw_thermal_slowdown" for the bits set (unknown bits as hex);
// "" for none.
std::string reason_names(std::uint64_t reasons);

class Session {
 public:
  // The process's session, opened on first call.
  static Session& get();
  // Before the first get(): never load NVML in this process, for `why`
  // (a driver probe that hung or crashed in a child).
  static void keep_closed(const std::string& why);
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }  // why not ok
  const std::string& driver_version() const { return driver_version_; }
  int cuda_driver_version() const { return cuda_driver_version_; }
  int init_result() const { return init_result_; }  // nvmlInit_v2's code; -1 when never called
  const std::string& library_path() const { return library_path_; }  // "" when not loaded
  // Every device NVML lists, in its order, described.
  std::vector<NvmlGpuInfo> list() const;

  // The NVML device at a PCI bus id ("0000:19:00.0", as CUDA gives it);
  // nullptr when NVML does not know it.
  void* device_by_pci_bus_id(const std::string& bus_id) const;
  // Everything the report shows of one device.
  NvmlGpuInfo describe(void* device) const;
  // Clocks, power, temperature and clock-event reasons now.
  Sample sample(void* device) const;

  struct Api;  // the resolved entry points (nvml.cpp)

 private:
  Session();
  static std::string& closed_reason();
  bool ok_ = false;
  std::string error_;
  std::string driver_version_;
  int cuda_driver_version_ = 0;
  int init_result_ = -1;
  std::string library_path_;
  const Api* api_ = nullptr;
};

}  // namespace cudabench::env::nvml
