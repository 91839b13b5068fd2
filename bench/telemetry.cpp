#include "telemetry.h"

namespace cudabench::bench {

namespace nvml = env::nvml;

std::string TelemetrySummary::label() const {
  return throttle_reasons ? "throttled: " + nvml::reason_names(throttle_reasons) : "";
}

TelemetrySummary summarize(const std::vector<nvml::Sample>& samples) {
  TelemetrySummary t;
  t.samples = static_cast<int>(samples.size());
  bool any_busy = false;
  for (const auto& s : samples)
    if (s.reasons_known && !(s.clock_event_reasons & nvml::kReasonGpuIdle)) any_busy = true;
  double sum[4] = {0, 0, 0, 0};
  int n[4] = {0, 0, 0, 0};
  for (const auto& s : samples) {
    if (s.reasons_known) t.throttle_reasons |= s.clock_event_reasons & nvml::kSlowdownReasons;
    const bool idle = s.reasons_known && (s.clock_event_reasons & nvml::kReasonGpuIdle);
    if (any_busy && idle) continue;
    const double v[4] = {static_cast<double>(s.sm_clock_mhz), static_cast<double>(s.mem_clock_mhz), s.power_w,
                         static_cast<double>(s.temp_c)};
    for (int k = 0; k < 4; ++k)
      if (v[k] >= 0) {
        sum[k] += v[k];
        ++n[k];
      }
  }
  double* out[4] = {&t.sm_clock_mhz, &t.mem_clock_mhz, &t.power_w, &t.temp_c};
  for (int k = 0; k < 4; ++k)
    if (n[k]) *out[k] = sum[k] / n[k];
  return t;
}

Telemetry::Telemetry(const std::string& pci_bus_id, std::chrono::milliseconds mid_run_interval)
    : interval_(mid_run_interval) {
  if (!pci_bus_id.empty()) device_ = nvml::Session::get().device_by_pci_bus_id(pci_bus_id);
}

void Telemetry::take() {
  if (!device_) return;
  samples_.push_back(nvml::Session::get().sample(device_));
  last_ = std::chrono::steady_clock::now();
}

void Telemetry::tick() {
  if (device_ && (samples_.empty() || std::chrono::steady_clock::now() - last_ >= interval_)) take();
}

TelemetryThread::TelemetryThread(Telemetry& t)
    : thread_([this, &t] {
        // The first sample 1 ms in, once the loop has the GPU working; then
        // tick() decides (every 100 ms).
        std::unique_lock<std::mutex> lock(mu_);
        for (auto wait = std::chrono::milliseconds(1); !cv_.wait_for(lock, wait, [this] { return stop_; });
             wait = std::chrono::milliseconds(5))
          t.tick();
      }) {}

TelemetryThread::~TelemetryThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

TelemetrySummary Telemetry::finish() {
  take();
  return summarize(samples_);
}

std::map<std::string, double> telemetry_counters(const TelemetrySummary& t) {
  std::map<std::string, double> c;
  const std::pair<const char*, double> all[] = {
      {"sm_clock_mhz", t.sm_clock_mhz}, {"mem_clock_mhz", t.mem_clock_mhz}, {"power_w", t.power_w}, {"temp_c", t.temp_c}};
  for (const auto& [name, v] : all)
    if (v >= 0) c[name] = v;
  return c;
}

std::string labelled(const std::string& label, const TelemetrySummary& t) {
  const std::string throttled = t.label();
  if (throttled.empty()) return label;
  return label.empty() ? throttled : label + "; " + throttled;
}

std::string add_telemetry(benchmark::State& state, const TelemetrySummary& t, const std::string& label) {
  for (const auto& [name, v] : telemetry_counters(t)) state.counters[name] = benchmark::Counter(v);
  return labelled(label, t);
}

}  // namespace cudabench::bench
