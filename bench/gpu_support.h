// GPU timing and buffers for the benchmarks: CUDA events around the timed
// region, an L2 flush before each timed iteration so no size silently
// measures the cache, device buffers, and the peak-bandwidth counters.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace cudabench::bench {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Events on one stream; stop() waits for the stop event and returns seconds.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  void start(cudaStream_t s);
  double stop(cudaStream_t s);

 private:
  cudaEvent_t start_{}, stop_{};
};

cudaStream_t bench_stream();
// Overwrites a buffer twice the L2 size (at least 64 MiB) on `s`.
void flush_l2(cudaStream_t s);

// Device copies of host_inputs(n), uploaded once per n.
struct DeviceInputs {
  DeviceBuffer<float> a, b;
};
const DeviceInputs& device_inputs(std::size_t n);

// peak_GBps and frac_of_peak (achieved / theoretical DRAM bandwidth) for
// `bytes_per_iteration`, from the device's memory clock and bus width.
void set_peak_counters(benchmark::State& state, double bytes_per_iteration);

// The common body of every GPU VectorAdd benchmark: poison c, run once,
// check against the CPU, warm up, then time each iteration with events after
// an L2 flush.
using GpuAdd = std::function<void(const float*, const float*, float*, std::size_t, cudaStream_t)>;
void run_gpu_vector_add(benchmark::State& state, const std::string& what, const GpuAdd& add);

}  // namespace cudabench::bench
