// The CPU rows: VectorAdd/cpu_scalar, cpu_omp_simd and cpu_omp_nt, and
// Copy/cpu_nt, the copy reference they are held against (STREAM Copy:
// c = a, threads, streaming stores, 8 bytes per element).
//
// For working sets beyond the last-level cache (kBeyondLlc x its size) every
// add row gets peak_GBps and frac_of_peak against the copy bandwidth measured
// in turn with it: after each timed add, an untimed copy of the same n, so
// the two see the same machine (a shared VM's bandwidth moves by tens of
// percent within a minute), and bytes over total time for both, the
// statistic every row reports (STREAM's best-of would hold a row's mean
// against the luckiest copy). Inside the cache there is no DRAM peak to hold
// a row against, and such rows are labelled "warm: fits in last-level cache".
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "bench/bench_support.h"
#include "bench/family.h"
#include "kernels/vector_add.cuh"

namespace cudabench::bench {
namespace {

using CpuAdd = void (*)(const float*, const float*, float*, std::size_t);
constexpr double kBeyondLlc = 2;
using vector_add::kCopyBytesPerElement;

// The last-level cache one core sees: sysfs (what lscpu shows) first, since
// inside a VM sysconf can report the whole host's L3.
long last_level_cache_bytes() {
  static const long llc = [] {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string s;
    if (f >> s && !s.empty()) {
      long v = std::atol(s.c_str());
      if (s.back() == 'K') v *= 1024;
      if (s.back() == 'M') v *= 1024 * 1024;
      if (v > 0) return v;
    }
    return sysconf(_SC_LEVEL3_CACHE_SIZE);
  }();
  return llc;
}

bool fits_in_llc(std::size_t bytes) {
  const long llc = last_level_cache_bytes();
  return llc > 0 && bytes <= static_cast<std::size_t>(llc);
}

bool beyond_llc(std::size_t bytes) {
  const long llc = last_level_cache_bytes();
  return llc > 0 && static_cast<double>(bytes) > kBeyondLlc * static_cast<double>(llc);
}

bool copy_is_right(const HostInputs& in, HostArray& c, std::size_t n) {
  poison(c.data(), n);
  vector_add::cpu_copy_nt(in.a.data(), c.data(), n);
  return std::memcmp(c.data(), in.a.data(), n * sizeof(float)) == 0;
}

void BM_cpu_add(benchmark::State& state, CpuAdd fn, const char* what) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto bytes = n * vector_add::kBytesPerElement;
  const HostInputs& in = host_inputs(n);
  HostArray& c = host_output(n);
  // Beyond the cache each timed add is followed by an untimed copy of a
  // into c: the copy reference, measured in turn with the add, so both see
  // the same machine at the same moments.
  const bool paired = beyond_llc(bytes);
  if (paired && !copy_is_right(in, c, n)) {
    fail(state, "the copy reference (cpu_copy_nt) gave c != a at n=" + std::to_string(n));
    return;
  }
  poison(c.data(), n);
  fn(in.a.data(), in.b.data(), c.data(), n);
  if (!check_vector_add(state, what, in.a.data(), in.b.data(), c.data(), n)) return;
  double copy_seconds = 0;
  for (auto _ : state) {
    fn(in.a.data(), in.b.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
    if (paired) {
      state.PauseTiming();
      const auto t0 = std::chrono::steady_clock::now();
      vector_add::cpu_copy_nt(in.a.data(), c.data(), n);
      benchmark::ClobberMemory();
      copy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.ResumeTiming();
    }
  }
  set_vector_add_counters(state, n);
  if (fits_in_llc(bytes)) {
    state.SetLabel("warm: fits in last-level cache");
  } else if (paired && copy_seconds > 0) {
    const double copy_rate =
        static_cast<double>(n * kCopyBytesPerElement) * static_cast<double>(state.iterations()) / copy_seconds;
    set_peak_counters(state, static_cast<double>(bytes), copy_rate);
  }
}

void BM_cpu_copy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const HostInputs& in = host_inputs(n);
  HostArray& c = host_output(n);
  if (!copy_is_right(in, c, n)) {
    fail(state, "cpu_copy_nt: c != a at n=" + std::to_string(n));
    return;
  }
  for (auto _ : state) {
    vector_add::cpu_copy_nt(in.a.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = n * kCopyBytesPerElement;
  set_bandwidth_counters(state, n, kCopyBytesPerElement);
  if (fits_in_llc(bytes)) state.SetLabel("warm: fits in last-level cache");
}

}  // namespace

std::string add_cpu_vector_add(const RunOptions& run, const Usable&) {
  struct V {
    const char* name;
    CpuAdd fn;
  };
  for (const V& v : {V{"cpu_scalar", &vector_add::cpu_reference},
                     V{"cpu_omp_simd", &vector_add::cpu_omp_simd},
                     V{"cpu_omp_nt", &vector_add::cpu_omp_nt}}) {
    auto* b = benchmark::RegisterBenchmark((std::string("VectorAdd/") + v.name).c_str(),
                                           BM_cpu_add, v.fn, v.name);
    with_iterations(run, b)->ArgName("n")->Unit(benchmark::kMicrosecond)->UseRealTime();
    for (auto n : vector_sizes()) b->Arg(n);
  }
  auto* b = benchmark::RegisterBenchmark("Copy/cpu_nt", BM_cpu_copy);
  with_iterations(run, b)->ArgName("n")->Unit(benchmark::kMicrosecond)->UseRealTime();
  for (auto n : vector_sizes()) b->Arg(n);
  return "";
}

// The gate's CPU rows are those whose process-to-process spread on a shared
// 2-core VM lets a 10% change show: cpu_omp_simd at 65536 and 1e7 move by
// 10-40% there (docs/regression-tracking.md, "The subset").
CUDABENCH_FAMILY(vector_add_cpu, 10, Needs::Nothing, add_cpu_vector_add,
                 {.default_rows = "(VectorAdd|Copy)/cpu_[^/]+/" CUDABENCH_DEFAULT_SIZES,
                  .gate_cpu = "VectorAdd/cpu_scalar/n:(65536|1048576|10000000)/"
                              "|VectorAdd/cpu_omp_simd/n:(1048576|4194304)/"});

}  // namespace cudabench::bench
