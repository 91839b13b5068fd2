// What the GPU did while a benchmark ran, the way nvbench records it: SM and
// memory clocks, power draw, temperature and clock-event ("throttle")
// reasons from NVML, sampled at the first tick() (the run's start), every
// `mid_run_interval` after that, and at finish() (its end); a
// TelemetryThread calls tick() while the timed loop runs. Written to
// the benchmark's JSON as the counters sm_clock_mhz, mem_clock_mhz, power_w
// and temp_c, and as the label "throttled: <reasons>" when any reason other
// than idle was active. Without NVML, or for a GPU NVML does not know, it
// samples nothing and adds nothing.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "env/nvml.h"

namespace cudabench::bench {

struct TelemetrySummary {
  int samples = 0;
  // Means over the samples that had a value: those taken while the GPU was
  // busy when there are any (an idle GPU's clocks say nothing of the run).
  double sm_clock_mhz = -1, mem_clock_mhz = -1, power_w = -1, temp_c = -1;
  std::uint64_t throttle_reasons = 0;  // every slowdown reason seen
  // "throttled: sw_power_cap,sw_thermal_slowdown", or "" when none.
  std::string label() const;
};
TelemetrySummary summarize(const std::vector<env::nvml::Sample>& samples);

class Telemetry {
 public:
  static constexpr std::chrono::milliseconds kMidRunInterval{100};
  // `pci_bus_id` of the GPU the benchmark runs on ("" samples nothing).
  explicit Telemetry(const std::string& pci_bus_id,
                     std::chrono::milliseconds mid_run_interval = kMidRunInterval);
  // The first sample, or one more if `mid_run_interval` has passed since
  // the last.
  void tick();
  // The end sample; then the counters (and a label part) for `state`.
  TelemetrySummary finish();
  const std::vector<env::nvml::Sample>& samples() const { return samples_; }

 private:
  void take();
  void* device_ = nullptr;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_;
  std::vector<env::nvml::Sample> samples_;
};

// Calls t.tick() from a thread of its own, from shortly after it starts
// until it is destroyed, so that samples see the GPU while it works.
class TelemetryThread {
 public:
  explicit TelemetryThread(Telemetry& t);
  ~TelemetryThread();
  TelemetryThread(const TelemetryThread&) = delete;
  TelemetryThread& operator=(const TelemetryThread&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// sm_clock_mhz, mem_clock_mhz, power_w, temp_c: those NVML answered.
std::map<std::string, double> telemetry_counters(const TelemetrySummary& t);
// `label` with "; throttled: ..." appended when the GPU throttled.
std::string labelled(const std::string& label, const TelemetrySummary& t);
// Both on `state`; returns the label to set.
std::string add_telemetry(benchmark::State& state, const TelemetrySummary& t, const std::string& label);

}  // namespace cudabench::bench
