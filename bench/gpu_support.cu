#include <map>
#include <memory>
#include <vector>

#include "bench_support.h"
#include "cuda_check.h"
#include "env/probe.h"
#include "gpu_support.h"
#include "vector_add.cuh"

namespace cudabench::bench {

template <typename T>
DeviceBuffer<T>::DeviceBuffer(std::size_t n) : n_(n) {
  if (n) CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
}
template <typename T>
DeviceBuffer<T>::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}
template class DeviceBuffer<float>;
template class DeviceBuffer<unsigned char>;

GpuTimer::GpuTimer() {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}
GpuTimer::~GpuTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}
void GpuTimer::start(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(start_, s)); }
double GpuTimer::stop(cudaStream_t s) {
  CUDA_CHECK(cudaEventRecord(stop_, s));
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms / 1e3;
}

cudaStream_t bench_stream() {
  static cudaStream_t s = [] {
    cudaStream_t t{};
    CUDA_CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    return t;
  }();
  return s;
}

void flush_l2(cudaStream_t s) {
  static DeviceBuffer<unsigned char> buf = [] {
    int dev = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    return DeviceBuffer<unsigned char>(std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20));
  }();
  CUDA_CHECK(cudaMemsetAsync(buf.get(), 0x5a, buf.size(), s));
}

const DeviceInputs& device_inputs(std::size_t n) {
  static std::map<std::size_t, std::unique_ptr<DeviceInputs>> cache;
  auto& slot = cache[n];
  if (!slot) {
    const HostInputs& h = host_inputs(n);
    auto d = std::make_unique<DeviceInputs>(DeviceInputs{DeviceBuffer<float>(n), DeviceBuffer<float>(n)});
    CUDA_CHECK(cudaMemcpy(d->a.get(), h.a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d->b.get(), h.b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    slot = std::move(d);
  }
  return *slot;
}

void set_peak_counters(benchmark::State& state, double bytes_per_iteration) {
  const auto& gpus = env::collect().gpus;
  if (gpus.empty() || gpus.front().peak_bandwidth_bytes_per_s <= 0) return;
  const double peak = gpus.front().peak_bandwidth_bytes_per_s;
  state.counters["peak_GBps"] = benchmark::Counter(peak / 1e9);
  // A rate counter divides by the benchmark's time (the manual GPU time), so
  // this is achieved bytes/s over peak bytes/s.
  state.counters["frac_of_peak"] = benchmark::Counter(
      bytes_per_iteration * static_cast<double>(state.iterations()) / peak,
      benchmark::Counter::kIsRate);
}

void run_gpu_vector_add(benchmark::State& state, const std::string& what, const GpuAdd& add) {
  try {
    const auto n = static_cast<std::size_t>(state.range(0));
    const HostInputs& h = host_inputs(n);
    const DeviceInputs& d = device_inputs(n);
    DeviceBuffer<float> c(n);
    cudaStream_t s = bench_stream();
    // 0xFF bytes are a NaN in every float: an unwritten element cannot pass.
    CUDA_CHECK(cudaMemsetAsync(c.get(), 0xFF, n * sizeof(float), s));
    add(d.a.get(), d.b.get(), c.get(), n, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> back(n);
    CUDA_CHECK(cudaMemcpy(back.data(), c.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
    if (!check_vector_add(state, what, h.a.data(), h.b.data(), back.data(), n)) return;
    for (int i = 0; i < 3; ++i) add(d.a.get(), d.b.get(), c.get(), n, s);  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    GpuTimer t;
    for (auto _ : state) {
      flush_l2(s);
      t.start(s);
      add(d.a.get(), d.b.get(), c.get(), n, s);
      state.SetIterationTime(t.stop(s));
    }
    CUDA_CHECK(cudaGetLastError());
    set_vector_add_counters(state, n);
    set_peak_counters(state, static_cast<double>(n * vector_add::kBytesPerElement));
    state.SetLabel("L2 flushed");
  } catch (const std::exception& e) {
    fail(state, e.what());
  }
}

}  // namespace cudabench::bench
