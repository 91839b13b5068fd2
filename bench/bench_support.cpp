#include "bench_support.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "kernels/device_check.cuh"
#include "kernels/vector_add.cuh"

namespace cudabench::bench {

void register_per_device(const RunOptions& run, const std::string& name, const char* arg_name,
                         const std::vector<std::int64_t>& values, const OnDevice& fn,
                         const std::function<void(Registered*, std::int64_t, int)>& add) {
  for (const std::int64_t v : values)
    for (const int dev : run.devices) {
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [fn, dev](benchmark::State& st) { fn(st, dev); });
      if (run.devices.size() > 1) b->ArgNames({arg_name, "dev"})->Args({v, dev});
      else b->ArgName(arg_name)->Arg(v);
      add(with_iterations(run, b), v, dev);
    }
}

double bounded_min_time(double gpu_s, double overhead_s, double budget_s) {
  if (!(gpu_s > 0)) return kDefaultMinTime;
  return std::min(kDefaultMinTime, budget_s * gpu_s / (gpu_s + std::max(0.0, overhead_s)));
}

std::optional<double> row_min_time(const RunOptions& run, double gpu_s, double overhead_s, int launches) {
  if (!run.user_min_time) return bounded_min_time(gpu_s, overhead_s);
  if (launches > 1) return *run.user_min_time / launches;
  return std::nullopt;
}

void bound_wall_time(const RunOptions& run, Registered* b, double gpu_s, double overhead_s, int launches) {
  if (run.iterations) return;  // with_iterations: they win over any time
  if (const auto t = row_min_time(run, gpu_s, overhead_s, launches)) b->MinTime(*t);
}

Registered* with_iterations(const RunOptions& run, Registered* b) {
  return run.iterations ? b->Iterations(*run.iterations) : b;
}

std::string cache_label(double working_set_bytes, double l2_bytes) {
  if (!(l2_bytes > 0) || working_set_bytes >= kDramBoundL2s * l2_bytes) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "working set %.2gx L2: %s", working_set_bytes / l2_bytes, kNotDramBound);
  return buf;
}

std::string joined_label(const std::string& a, const std::string& b) {
  return a.empty() || b.empty() ? a + b : a + "; " + b;
}

std::string flush_label(L2Flush f) {
  return f == L2Flush::None ? "L2 not flushed" : std::string("L2 flushed (") + l2_flush_name(f) + ")";
}

std::string latency_label(double bytes, double peak, double overhead_s) {
  const double bound = overhead_s > 0 ? kOverheadsPerLatencyBound * overhead_s : kLatencyBound;
  if (!(peak > 0) || bytes / peak >= bound) return "";
  char buf[160];
  if (overhead_s > 0)
    std::snprintf(buf, sizeof buf, "%s: %.2g us of traffic at peak, under %gx the %.2g us launch overhead measured here",
                  kLatencyBoundLabel, bytes / peak * 1e6, kOverheadsPerLatencyBound, overhead_s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%s: %.2g us of traffic at peak", kLatencyBoundLabel, bytes / peak * 1e6);
  return buf;
}

Rotation rotation(double working_set_bytes, double l2_bytes, double launch_s) {
  Rotation r;
  if (!(l2_bytes > 0) || !(working_set_bytes > 0) || working_set_bytes >= kDramBoundL2s * l2_bytes) return r;
  r.sets = 1 + static_cast<int>(std::ceil(kRotationL2s * l2_bytes / working_set_bytes));
  const double wanted = launch_s > 0 ? std::ceil(kRotationMinTime / launch_s) : 1.0;
  r.launches = static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(kMaxLaunchesPerTiming)));
  return r;
}

namespace {
// Rotation::label() writes it and rotation_of_label() reads it.
constexpr const char* kRotationFormat = "back to back: %d buffer sets in turn, %d launches per event pair";
}  // namespace

std::string Rotation::label() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, kRotationFormat, sets, launches);
  return buf;
}

std::optional<Rotation> rotation_of_label(const std::string& label) {
  Rotation r;
  int consumed = 0;
  const std::string format = std::string(kRotationFormat) + "%n";
  if (std::sscanf(label.c_str(), format.c_str(), &r.sets, &r.launches, &consumed) != 2 || consumed == 0)
    return std::nullopt;
  return r;
}

std::vector<int> cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, end - start);
    // "LO-HI" or "N", the whole part (%n: the characters read).
    const int size = static_cast<int>(part.size());
    int lo = 0, hi = 0, used = 0;
    if (std::sscanf(part.c_str(), "%d-%d%n", &lo, &hi, &used) != 2 || used != size) {
      used = 0;
      if (std::sscanf(part.c_str(), "%d%n", &lo, &used) != 1 || used != size) return {};
      hi = lo;
    }
    if (lo < 0 || hi < lo || hi >= 1 << 16 || part[0] == ' ') return {};
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    start = end + 1;
    if (end + 1 == text.size()) return {};  // a trailing comma
  }
  return cpus;
}

double per_launch_seconds(double pair_seconds, int launches) { return pair_seconds / std::max(1, launches); }

std::size_t rotation_stride(std::size_t n) { return (n + 63) / 64 * 64; }

bool check_once(const std::string& key, const std::function<bool()>& check) {
  static std::set<std::string> passed;
  if (passed.count(key)) return true;
  if (!check()) return false;
  passed.insert(key);
  return true;
}

const std::vector<std::int64_t>& vector_sizes() {
  static const std::vector<std::int64_t> sizes = [] {
    std::vector<std::int64_t> s;
    for (int p = 12; p <= 26; p += 2) s.push_back(std::int64_t{1} << p);
    s.push_back(std::int64_t{1} << 27);
    s.push_back(10'000'000);
    return s;
  }();
  return sizes;
}

void fill_random(float* p, std::size_t n, std::uint64_t seed) {
  // Value i depends on i alone (device_check::input_value, as the GPU rows
  // make theirs), so the threads share the work (and the first touch of
  // the pages) and give the serial loop's values. Each process of a default
  // run fills its inputs again: a serial fill was a third of it.
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) p[i] = device_check::input_value(seed, static_cast<std::size_t>(i));
}

void poison(float* p, std::size_t n) {
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) p[i] = std::numeric_limits<float>::quiet_NaN();
}

void HostArray::Free::operator()(void* p) const { std::free(p); }

HostArray::HostArray(std::size_t n, std::size_t offset_bytes) : n_(n) {
  constexpr std::size_t kPage = 4096, kHuge = 2u << 20;
  if (offset_bytes % alignof(float) != 0 || offset_bytes >= kPage)
    throw std::invalid_argument("HostArray offset must be a multiple of 4 below 4096");
  const std::size_t bytes = n * sizeof(float) + offset_bytes;
  const std::size_t align = bytes >= kHuge ? kHuge : kPage;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* mem = nullptr;
  if (posix_memalign(&mem, align, rounded) != 0) throw std::bad_alloc();
  mem_.reset(mem);
#ifdef MADV_HUGEPAGE
  if (align == kHuge) madvise(mem, rounded, MADV_HUGEPAGE);  // a hint; may be refused
#endif
  p_ = reinterpret_cast<float*>(static_cast<char*>(mem) + offset_bytes);
}

device_check::Seeds input_seeds(std::size_t n) { return {0x5eed0000 + n, 0xb0b00000 + n}; }

const HostInputs& host_inputs(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<HostInputs>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<HostInputs>();
    slot->a = HostArray(n, HostArray::kOffsetA);
    slot->b = HostArray(n, HostArray::kOffsetB);
    fill_random(slot->a.data(), n, input_seeds(n).a);
    fill_random(slot->b.data(), n, input_seeds(n).b);
  }
  return *slot;
}

HostArray& host_output(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<HostArray>> cache;
  auto& slot = cache[n];
  if (!slot) slot = std::make_unique<HostArray>(n, HostArray::kOffsetC);
  return *slot;
}

namespace {
std::atomic<bool> g_failed{false};
}

void fail(benchmark::State& state, const std::string& message) {
  g_failed = true;
  std::cerr << "cudabench: FAILED: " << message << "\n";
  state.SkipWithError(message.c_str());
}

bool any_failure() { return g_failed; }

namespace {
std::atomic<bool> g_run_failed{false};
std::vector<std::string>& note_list() {
  static std::vector<std::string> n;
  return n;
}
}  // namespace

void fail_run(benchmark::State& state, const std::string& message) {
  g_run_failed = true;
  const std::string m = kCouldNotRun + message;
  std::cerr << "cudabench: " << m << "\n";
  state.SkipWithError(m.c_str());
}

bool any_run_failure() { return g_run_failed; }

void add_note(const std::string& line) { note_list().push_back(line); }
const std::vector<std::string>& notes() { return note_list(); }

bool check_vector_add(benchmark::State& state, const std::string& what, const float* a,
                      const float* b, const float* c, std::size_t n) {
  const std::size_t i = vector_add::first_mismatch(a, b, c, n);
  if (i == n) return true;
  fail(state, what + " gave a wrong result: c[" + std::to_string(i) + "] = " +
                  std::to_string(c[i]) + ", expected " + std::to_string(a[i] + b[i]) +
                  " (n = " + std::to_string(n) + ")");
  return false;
}

void set_rates(benchmark::State& state, double bytes, double items) {
  using benchmark::Counter;
  if (bytes > 0) state.counters["bytes_per_second"] = Counter(bytes, Counter::kIsIterationInvariantRate, Counter::kIs1000);
  if (items > 0) state.counters["items_per_second"] = Counter(items, Counter::kIsIterationInvariantRate, Counter::kIs1000);
}

void set_bandwidth_counters(benchmark::State& state, std::size_t n, std::size_t bytes_per_element) {
  set_rates(state, static_cast<double>(n * bytes_per_element), static_cast<double>(n));
}

void set_vector_add_counters(benchmark::State& state, std::size_t n) {
  set_bandwidth_counters(state, n, vector_add::kBytesPerElement);
}

std::string bare_nonfinite_to_null(const std::string& text) {
  static const char* const kTokens[] = {"-Infinity", "Infinity", "-NaN", "NaN"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size()) out += text[++i];
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    const char* hit = nullptr;
    for (const char* t : kTokens)
      if (text.compare(i, std::strlen(t), t) == 0) {
        hit = t;
        break;
      }
    if (!hit) {
      out += ch;
      continue;
    }
    out += "null";
    i += std::strlen(hit) - 1;
  }
  return out;
}

void set_reference_counters(benchmark::State& state, const std::string& name, double bytes_per_iteration,
                            double reference) {
  if (!(reference > 0)) return;
  state.counters[name + "_GBps"] = benchmark::Counter(reference / 1e9);
  // A rate counter divides by the benchmark's time (real or manual time),
  // so this is achieved bytes/s over the reference's bytes/s.
  state.counters["frac_of_" + name] = benchmark::Counter(
      bytes_per_iteration * static_cast<double>(state.iterations()) / reference, benchmark::Counter::kIsRate);
}

}  // namespace cudabench::bench
