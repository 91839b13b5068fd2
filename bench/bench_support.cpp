#include "bench_support.h"

#include <atomic>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include "vector_add.cuh"

namespace cudabench::bench {

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
  // splitmix64: fast, and every value differs from its neighbours.
  std::uint64_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2000.0 - 1000.0);
  }
}

void poison(float* p, std::size_t n) {
  std::fill(p, p + n, std::numeric_limits<float>::quiet_NaN());
}

const HostInputs& host_inputs(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<HostInputs>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<HostInputs>();
    slot->a.resize(n);
    slot->b.resize(n);
    fill_random(slot->a.data(), n, 0x5eed0000 + n);
    fill_random(slot->b.data(), n, 0xb0b00000 + n);
  }
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

bool check_vector_add(benchmark::State& state, const std::string& what, const float* a,
                      const float* b, const float* c, std::size_t n) {
  const std::size_t i = vector_add::first_mismatch(a, b, c, n);
  if (i == n) return true;
  fail(state, what + " gave a wrong result: c[" + std::to_string(i) + "] = " +
                  std::to_string(c[i]) + ", expected " + std::to_string(a[i] + b[i]) +
                  " (n = " + std::to_string(n) + ")");
  return false;
}

void set_vector_add_counters(benchmark::State& state, std::size_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(n * vector_add::kBytesPerElement));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(n));
}

}  // namespace cudabench::bench
