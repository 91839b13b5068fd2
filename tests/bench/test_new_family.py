"""A new benchmark family is one file plus one CMake line
(docs/contributing.md, "Adding a benchmark family"): a throwaway family,
written as the recipe says, builds into bench, lists its row in the order
it asked for, runs it checked, and is gone again after the test.

It edits the checkout (a file in bench/families/ and a line in
bench/CMakeLists.txt) and rebuilds bench twice, so CTest runs it alone
(RUN_SERIAL); both edits are undone whatever happens.
"""
import json
import os

import pytest

from conftest import BENCH, BUILD, ROOT, run

FAMILY_FILE = os.path.join(ROOT, "bench", "families", "throwaway_test_family.cpp")
CMAKE = os.path.join(ROOT, "bench", "CMakeLists.txt")
LINE = "cudabench_family(families/throwaway_test_family.cpp)\n"
SOURCE = r'''// A throwaway family (tests/bench/test_new_family.py): the sum of n floats.
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

CUDABENCH_FAMILY(throwaway, 15, Needs::Nothing, add_sum);

}  // namespace cudabench::bench
'''


def build_bench():
    r = run(["cmake", "--build", BUILD, "--target", "bench"], timeout=1200)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


@pytest.mark.skipif(not os.access(BENCH, os.X_OK), reason=f"no bench at {BENCH}: build first")
def test_a_family_is_one_file_and_one_cmake_line(tmp_path):
    with open(CMAKE) as f:
        cmake = f.read()
    assert LINE not in cmake and not os.path.exists(FAMILY_FILE), "a throwaway family left from an earlier run"
    try:
        with open(FAMILY_FILE, "w") as f:
            f.write(SOURCE)
        with open(CMAKE, "a") as f:
            f.write(LINE)
        assert "throwaway_test_family.cpp" in build_bench()  # compiled, not found stale
        listed = run([BENCH, "--benchmark_list_tests"], timeout=120).stdout.split()
        assert "Throwaway/cpu_sum/n:4096" in listed
        # order 15: after the CPU VectorAdd rows (10), before any GPU family (20)
        first_other = next(i for i, n in enumerate(listed) if not n.startswith(("VectorAdd/cpu_", "Copy/cpu_")))
        assert listed[first_other] == "Throwaway/cpu_sum/n:4096", listed
        out = tmp_path / "r.json"
        r = run([BENCH, "--benchmark_filter=^Throwaway/", "--benchmark_min_time=0.01s", f"--benchmark_out={out}"],
                timeout=300)
        assert r.returncode == 0, r.stderr
        rows = [b for b in json.loads(out.read_text())["benchmarks"] if b["name"].startswith("Throwaway/")]
        assert rows and all(b.get("items_per_second", 0) > 0 and not b.get("error_occurred") for b in rows), rows
    finally:
        if os.path.exists(FAMILY_FILE):
            os.remove(FAMILY_FILE)
        with open(CMAKE, "w") as f:
            f.write(cmake)
        build_bench()
    listed = run([BENCH, "--benchmark_list_tests"], timeout=120).stdout.split()
    assert not any(n.startswith("Throwaway/") for n in listed)
    assert not os.path.exists(FAMILY_FILE) and open(CMAKE).read() == cmake
