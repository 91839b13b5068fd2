"""A benchmark family written as docs/contributing.md's recipe says: one
file in bench/families/ and one line in bench/CMakeLists.txt. The new-family
test builds it into this checkout; the action's test into a fork of it."""

FILE = "throwaway_test_family.cpp"
LINE = "cudabench_family(families/throwaway_test_family.cpp)\n"
SOURCE = r'''// A throwaway family (tests/throwaway_family.py): the sum of n floats.
#include <numeric>
#include <vector>

#include "bench/bench_support.h"
#include "bench/family.h"

namespace cudabench::bench {
namespace {

void BM_sum(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> x(n);
  fill_random(x.data(), n, 41);
  const double want = std::accumulate(x.begin(), x.end(), 0.0);  // the reference, before timing
  double got = 0;
  for (auto _ : state) {
    got = std::accumulate(x.begin(), x.end(), 0.0);
    benchmark::DoNotOptimize(got);
  }
  if (got != want) fail(state, "Throwaway/cpu_sum: wrong sum");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

std::string add_sum(const RunOptions& run, const Usable&) {
  with_iterations(run, benchmark::RegisterBenchmark("Throwaway/cpu_sum", BM_sum))->ArgName("n")->Arg(4096);
  return "";
}

}  // namespace

CUDABENCH_FAMILY(throwaway, 15, Needs::Nothing, add_sum,
                 {.default_rows = "Throwaway/cpu_sum/", .gate_cpu = "Throwaway/cpu_sum/"});

}  // namespace cudabench::bench
'''
