// Pieces every benchmark family shares: the size sweep, cached random
// inputs, the check-before-timing helpers and the failure flag that makes
// the process exit non-zero when any result was wrong.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cudabench::bench {

// Elements: 2^12, 2^14, ..., 2^26, 2^27 and the headline 1e7.
const std::vector<std::int64_t>& vector_sizes();

struct HostInputs {
  std::vector<float> a, b;
};
// Random a, b in [-1000, 1000) (never zeros), made once per n and reused.
const HostInputs& host_inputs(std::size_t n);

void fill_random(float* p, std::size_t n, std::uint64_t seed);
void poison(float* p, std::size_t n);  // quiet NaN in every element

// Fail the benchmark: SkipWithError, one line on stderr, exit code 1 later.
void fail(benchmark::State& state, const std::string& message);
bool any_failure();

// Compare c with a + b element by element; on a mismatch, fail() and return
// false. `what` names the implementation in the message.
bool check_vector_add(benchmark::State& state, const std::string& what,
                      const float* a, const float* b, const float* c, std::size_t n);

// bytes_per_second (12 bytes/element) and items_per_second for `n` elements
// per iteration.
void set_vector_add_counters(benchmark::State& state, std::size_t n);

}  // namespace cudabench::bench
