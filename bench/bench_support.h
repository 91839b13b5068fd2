// Pieces every benchmark family shares: per-device registration, the size
// sweep, cached random inputs, the check-before-timing helpers, and the
// failure flag that makes the process exit non-zero when any result was
// wrong.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/device_check.cuh"
#include "options.h"

namespace cudabench::bench {

// Registers `name` once per value of `values` and device of `run`, running
// fn(state, device), and calling add(benchmark, value, device) for each so
// that each can get its own settings. With one device the name is
// <name>/<arg>:<value>; with several, <name>/<arg>:<value>/dev:<device>, so
// single-GPU names stay stable for history.
using Registered = benchmark::internal::Benchmark;
using OnDevice = std::function<void(benchmark::State&, int device)>;
void register_per_device(const RunOptions& run, const std::string& name, const char* arg_name,
                         const std::vector<std::int64_t>& values, const OnDevice& fn,
                         const std::function<void(Registered*, std::int64_t value, int device)>& add);

// Google Benchmark gives a manual-time benchmark iterations until the
// *measured* (GPU) time reaches its minimum time. When each iteration also
// spends wall time outside the measurement (an L2 flush, launch and
// synchronisation), a 2 us kernel with 50 us around it would run for half a
// minute at the default 0.5 s. This returns the minimum time that keeps the
// timed phase near `wall_budget_s` of wall time: budget x gpu / (gpu +
// overhead), capped at the default. An underestimated `gpu_s` only shortens
// the run.
constexpr double kDefaultMinTime = 0.5;   // Google Benchmark's default
constexpr double kGpuWallBudget = 0.3;    // s of wall time in the timed phase
constexpr double kLaunchSyncOverhead = 20e-6;  // s per iteration: launch, events, synchronise
double bounded_min_time(double gpu_s, double overhead_s, double budget_s = kGpuWallBudget);
// The minimum time a row gets (nullopt: Google Benchmark's flag as given):
// bounded_min_time, or the user's --benchmark_min_time, which is seconds of
// GPU work. A rotated row's reported time is one launch's of the
// `launches` each iteration runs, so its GPU time grows `launches` times
// faster than Google Benchmark counts: the user's time is divided by them.
std::optional<double> row_min_time(const RunOptions& run, double gpu_s, double overhead_s, int launches = 1);
// Sets row_min_time on `b`.
void bound_wall_time(const RunOptions& run, Registered* b, double gpu_s, double overhead_s, int launches = 1);
// `b` with --benchmark_min_time=Nx's N iterations, when given (Google
// Benchmark 1.7 has no flag for them); every registration passes its rows here.
Registered* with_iterations(const RunOptions& run, Registered* b);

// A kernel moves its nominal bytes through DRAM only when its working set
// is well beyond the L2. Below kDramBoundL2s x L2, the kernel's own writes
// (up to about a third of the L2) can still be dirty in L2 at the stop
// event (with the read flush), or the flush's dirty lines are written back
// during it (memset): the traffic differs from the nominal by more than ~4%.
// Such runs get this label ("working set 2x L2: not DRAM-bound") and no
// frac_of_peak; "" for a DRAM-bound working set or an unknown L2.
constexpr double kDramBoundL2s = 8;
constexpr const char* kNotDramBound = "not DRAM-bound";
std::string cache_label(double working_set_bytes, double l2_bytes);
// A row's label from its parts: "a; b", or the one that is not empty.
std::string joined_label(const std::string& a, const std::string& b);
// "L2 flushed (read)", "L2 flushed (memset)", "L2 not flushed".
std::string flush_label(L2Flush flush);

// What a GPU row's label says its time includes besides its traffic.
constexpr const char* kIncludesTurnaround = "one launch: its turnaround included";
constexpr const char* kIncludesGap = "per launch: the gap to the next included";

// A row's time includes an overhead besides its traffic: one launch's
// turnaround (a single launch between two events) or the gap from one
// launch to the next (back to back), both measured in the process
// (gpu_support.h launch_overhead). Work whose bytes would move at the peak
// rate (DRAM or PCIe) in under kOverheadsPerLatencyBound such overheads is
// timed by the overhead as much as by its bandwidth: such a row gets this
// label ("latency-bound: 2.6 us of traffic at peak, under 10x the 2.1 us
// launch overhead measured here") and no frac_of_peak; "" for any other row
// or an unknown peak. Where the overhead is unknown (0), kLatencyBound
// stands in for ten of them.
constexpr double kOverheadsPerLatencyBound = 10;  // the overhead at most ~10% of the time
constexpr double kLatencyBound = 5e-6;            // s
constexpr const char* kLatencyBoundLabel = "latency-bound";
std::string latency_label(double bytes, double peak_bytes_per_s, double overhead_s = 0);

// Below kDramBoundL2s x L2 a single launch after a flush would still find
// part of its data in L2 (above), and a small one would be timed by its
// launch, so a VectorAdd is timed over `launches` back to back between one
// event pair, taking `sets` buffer sets in turn (the turn goes on from one
// pair to the next): between two uses of one set the others move
// kRotationL2s x L2, so no launch finds its inputs in L2 and each pays, in
// steady state, for the write-backs of the one before. (BabelStream instead
// times each kernel on its own, synchronising after each, on arrays far
// beyond the caches; we keep that for 8x L2 and up.) A pair holds
// kRotationMinTime of GPU time, at most kMaxLaunchesPerTiming launches, all
// enqueued behind a closed gate (kernels/stream_cover.cuh), so the GPU, not
// the host's launch rate, is timed. sets == 0: one launch (a working set
// from 8x L2 up, or an unknown L2).
constexpr double kRotationL2s = 2;
constexpr double kRotationMinTime = 1e-3;  // s
constexpr int kMaxLaunchesPerTiming = 256;
struct Rotation {
  int sets = 0;
  int launches = 1;  // per event pair
  // "back to back: 2 buffer sets in turn, 40 launches per event pair"
  std::string label() const;
  bool operator==(const Rotation& o) const { return sets == o.sets && launches == o.launches; }
};
// `launch_s`: the estimated GPU time of one launch.
Rotation rotation(double working_set_bytes, double l2_bytes, double launch_s);
// The rotation a label made by Rotation::label() names (its start, whatever
// follows), or nullopt.
std::optional<Rotation> rotation_of_label(const std::string& label);
// Elements from one set to the next in one allocation: n rounded up to 64
// (256 bytes, so every set is as aligned as the first).
std::size_t rotation_stride(std::size_t n);
// The time a row reports per iteration: one launch's, from the pair's. With
// bytes_per_second counted per iteration (one launch's bytes), the rate is
// every launch's bytes over the pair's time.
double per_launch_seconds(double pair_seconds, int launches);
// The gate's timeout: far beyond any pair's enqueue (256 launches take the
// host a few ms), so only a stalled host or a full launch queue reaches it.
constexpr double kGateTimeout = 1.0;  // s
// The delay before work that cannot be gated (it blocks the host while it
// is enqueued: pageable copies) or where launches block (a profiler).
constexpr double kEnqueueCover = 30e-6;  // s

// The CPUs of a Linux CPU list ("0-15,32-47", sysfs's local_cpulist), in
// order; empty when the text is not one.
std::vector<int> cpu_list(const std::string& text);

// Google Benchmark calls a benchmark once per growth step and repetition;
// its result is checked on the first call. Runs `check` unless `key`
// ("cuda_v4 n=1048576 dev=0") already passed in this process, remembers a
// pass, and returns whether the result is known to be right. A failed check
// runs again next time (and fails again).
bool check_once(const std::string& key, const std::function<bool()>& check);

// One cached object, replaced when the key changes: the buffers of the
// benchmark that runs now, kept across its growth steps and repetitions,
// freed before the next benchmark's are made.
template <typename T>
class OneSlotCache {
 public:
  template <typename Make>
  T& get(const std::string& key, Make&& make) {
    if (!value_ || key != key_) {
      value_.reset();
      value_ = make();
      key_ = key;
    }
    return *value_;
  }
  void clear() { value_.reset(); }

 private:
  std::string key_;
  std::unique_ptr<T> value_;
};

// ---- inputs and checks ----

// Elements: 2^12, 2^14, ..., 2^26, 2^27 and the headline 1e7.
const std::vector<std::int64_t>& vector_sizes();

// Host memory for the benchmarks' arrays, laid out the same in every
// process: page-aligned (2 MiB-aligned, with transparent huge pages asked
// for, from 2 MiB up), then moved `offset_bytes` into the page. Give a, b and
// c different offsets (kOffsetA/B/C) and a load never shares its low 12
// address bits with a pending store ("4K aliasing"), which otherwise stalls
// the loop in some processes and not others, depending on where malloc put
// the arrays.
class HostArray {
 public:
  static constexpr std::size_t kOffsetA = 0, kOffsetB = 1024, kOffsetC = 2048;
  HostArray() = default;
  HostArray(std::size_t n, std::size_t offset_bytes);
  float* data() { return p_; }
  const float* data() const { return p_; }
  std::size_t size() const { return n_; }
  float* begin() { return p_; }
  float* end() { return p_ + n_; }
  const float* begin() const { return p_; }
  const float* end() const { return p_ + n_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> mem_;
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

struct HostInputs {
  HostArray a, b;
};
// The streams a and b of n elements are drawn from (device_check.cuh):
// the host's inputs and the GPU rows', made on the device, are the same.
device_check::Seeds input_seeds(std::size_t n);
// Random a, b in [-1000, 1000) (never zeros), made once per n and reused.
const HostInputs& host_inputs(std::size_t n);
// The CPU rows' output c for n, made once per n and reused: its pages are
// touched once per process (a fresh 512 MB c per row was a fifth of a run in
// the kernel's page clearing). Each row still poisons it before its check.
HostArray& host_output(std::size_t n);

void fill_random(float* p, std::size_t n, std::uint64_t seed);
void poison(float* p, std::size_t n);  // quiet NaN in every element

// Fail the benchmark: SkipWithError, one line on stderr, exit code 1 later.
void fail(benchmark::State& state, const std::string& message);
bool any_failure();
// A benchmark that could not run (out of memory, a CUDA or LibTorch error
// that is no kernel fault): not a wrong result. Its error message starts
// with kCouldNotRun (compare.py reads it so) and bench exits 3, not 1.
constexpr const char* kCouldNotRun = "could not run: ";
void fail_run(benchmark::State& state, const std::string& message);
bool any_run_failure();
// Why some benchmarks are absent (no GPU, no dataset): said once on stderr
// when benchmarks are about to run or be listed, not before the flags and
// the filter are known to be good.
void add_note(const std::string& line);
const std::vector<std::string>& notes();

// Compare c with a + b element by element; on a mismatch, fail() and return
// false. `what` names the implementation in the message.
bool check_vector_add(benchmark::State& state, const std::string& what,
                      const float* a, const float* b, const float* c, std::size_t n);


// bytes_per_second and items_per_second of `bytes` and `items` per
// iteration, in decimal units (1 GB/s = 1e9 bytes/s), the convention of
// every table cudabench writes: Google Benchmark's SetBytesProcessed would
// show binary ones (GiB/s) on its console, about 7% apart at G, 10% at T.
void set_rates(benchmark::State& state, double bytes, double items);
// set_rates for `n` elements of `bytes_per_element` each (12 for an add).
void set_bandwidth_counters(benchmark::State& state, std::size_t n, std::size_t bytes_per_element);
void set_vector_add_counters(benchmark::State& state, std::size_t n);

// Google Benchmark 1.7.1 writes a non-finite double as a bare NaN,
// -NaN, Infinity or -Infinity (the cv of a counter whose mean is 0), which
// is not JSON: each such token outside a string becomes null, as a JSON
// library writes it, so that the file still parses.
std::string bare_nonfinite_to_null(const std::string& json_text);

// <name>_GBps and frac_of_<name>: the reference's rate, and achieved bytes/s
// over `reference_bytes_per_s` (nothing when the reference is unknown, <= 0).
void set_reference_counters(benchmark::State& state, const std::string& name, double bytes_per_iteration,
                            double reference_bytes_per_s);
// peak_GBps and frac_of_peak, against a theoretical peak (DRAM, PCIe) or
// the CPU's measured copy.
inline void set_peak_counters(benchmark::State& state, double bytes_per_iteration, double peak_bytes_per_s) {
  set_reference_counters(state, "peak", bytes_per_iteration, peak_bytes_per_s);
}

}  // namespace cudabench::bench
