// VectorAdd/cpu_scalar and VectorAdd/cpu_omp_simd.
#include <unistd.h>

#include <fstream>

#include "bench_support.h"
#include "registry.h"
#include "vector_add.cuh"

namespace cudabench::bench {
namespace {

using CpuAdd = void (*)(const float*, const float*, float*, std::size_t);

// The last-level cache one core sees: sysfs (what lscpu shows) first, since
// inside a VM sysconf can report the whole host's L3.
long last_level_cache_bytes() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string s;
  if (f >> s && !s.empty()) {
    long v = std::atol(s.c_str());
    if (s.back() == 'K') v *= 1024;
    if (s.back() == 'M') v *= 1024 * 1024;
    if (v > 0) return v;
  }
  return sysconf(_SC_LEVEL3_CACHE_SIZE);
}

void BM_cpu_add(benchmark::State& state, CpuAdd fn, const char* what) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const HostInputs& in = host_inputs(n);
  std::vector<float> c(n);
  poison(c.data(), n);
  fn(in.a.data(), in.b.data(), c.data(), n);
  if (!check_vector_add(state, what, in.a.data(), in.b.data(), c.data(), n)) return;
  for (auto _ : state) {
    fn(in.a.data(), in.b.data(), c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_vector_add_counters(state, n);
  static const long llc = last_level_cache_bytes();
  // Small sizes live in the CPU's caches between iterations: say so.
  if (llc > 0 && n * vector_add::kBytesPerElement <= static_cast<std::size_t>(llc))
    state.SetLabel("warm: fits in last-level cache");
}

}  // namespace

void register_cpu_vector_add() {
  struct V {
    const char* name;
    CpuAdd fn;
  };
  for (const V& v : {V{"cpu_scalar", &vector_add::cpu_reference},
                     V{"cpu_omp_simd", &vector_add::cpu_omp_simd}}) {
    auto* b = benchmark::RegisterBenchmark((std::string("VectorAdd/") + v.name).c_str(),
                                           BM_cpu_add, v.fn, v.name);
    b->ArgName("n")->Unit(benchmark::kMicrosecond)->UseRealTime();
    for (auto n : vector_sizes()) b->Arg(n);
  }
}

}  // namespace cudabench::bench
