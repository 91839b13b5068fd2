// GPU pieces the benchmark families share: device buffers, CUDA-event
// timing, the L2 flush, copies on the benchmark stream, the device facts
// (peaks, PCI bus id) and one timed loop that also records telemetry.
//
// Every benchmark first makes its device current (use_device) and then
// works on that device's non-blocking benchmark stream only: uploads,
// checks and timed work are ordered on it, never on the legacy default
// stream, which a non-blocking stream does not wait for.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

namespace cudabench::bench {

// Device memory on the device current when it is made; freed with that
// device current again.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_), dev_(o.dev_) { o.p_ = nullptr; o.n_ = 0; }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
  int dev_ = 0;
};

// Host memory, pinned (cudaMallocHost) or pageable (new[]).
class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, bool pinned);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  float* get() const { return p_; }

 private:
  float* p_ = nullptr;
  bool pinned_ = false;
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

// Makes CUDA device `dev` current for the benchmark that runs now.
void use_device(int dev);

// A GPU benchmark's exception, whoever threw it (CUDA_CHECK, LibTorch,
// Thrust, cuBLAS): a kernel fault (illegal address, launch failure, a device
// assert, ...; asked of the context's sticky error when the exception does
// not carry a CUDA code) is a wrong result (fail); anything else (out of
// memory, a missing device) could not run (fail_run). The message is the
// exception's first line (LibTorch's carries a C++ backtrace), after `prefix`.
void fail_gpu(benchmark::State& state, const std::exception& e, const std::string& prefix = "");
// The current device's benchmark stream (non-blocking, made once per device).
cudaStream_t bench_stream();

// Copies on `s`, waited for: the data is there (or back) when they return.
void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t s);
void download(void* dst, const void* src, std::size_t bytes, cudaStream_t s);

// What runs on `s` before each timed kernel: the L2 flush `flush`, or with
// `none` a short delay. Either keeps the
// stream busy while the host enqueues the start event, the kernel and the
// stop event, so the host's enqueue time is not measured.
void before_timed_kernel(L2Flush flush, cudaStream_t s);
std::string flush_label(L2Flush flush);  // "L2 flushed (read)", ...
// The delay alone (kEnqueueCover, or `seconds`), before timed work that
// needs no flush (copies, rotated launches).
void cover_enqueue(cudaStream_t s, double seconds = kEnqueueCover);
// cache_label (bench_support.h) for a working set on device `dev`.
std::string cache_label(double working_set_bytes, int dev);

// Facts about CUDA device `dev` from the environment report.
double dram_peak(int dev);  // theoretical DRAM bytes/s (0 if unknown)
// Theoretical PCIe bytes/s per direction at the GPU's own maximum link
// generation, else the system's (0 if unknown).
double pcie_peak(int dev);
// Wall time per iteration spent outside the timed region: the flush (or
// the delay), launch and synchronisation (for bound_wall_time).
double flush_overhead_s(L2Flush flush, int dev);
// Lower bounds on the GPU time to move `bytes` through DRAM, or over PCIe
// (gen 5 x16 assumed when the link is unknown): at least the ~2 us floor
// of a launch or copy.
double dram_time_estimate(double bytes, int dev);
double pcie_time_estimate(double bytes, int dev);

// The timed loop of every GPU benchmark: per iteration, `before` (the L2
// flush, a delay) outside the measurement, then `body` between two CUDA
// events on `s` (SetIterationTime). A thread samples device `dev`'s
// telemetry (NVML) while the loop runs, every 100 ms and at the end; the
// samples become counters, and the label is `label`, plus "throttled: ..."
// when the GPU throttled.
// Before the first one on a device, about half a second of warm-up lifts
// the GPU from its idle clocks. With `launches` > 1, `body` launches that
// many and each iteration's time is per launch (per_launch_seconds).
void timed_gpu_loop(benchmark::State& state, int dev, cudaStream_t s, const std::function<void()>& body,
                    const std::function<void()>& before, const std::string& label, int launches = 1);
// How VectorAdd of n elements is timed on `dev` (bench_support.h Rotation):
// with sets == 0, one launch after the flush `flush`.
Rotation vector_add_rotation(std::size_t n, L2Flush flush, int dev);

// VectorAdd on the GPU. A MakeGpuAdd is called once per benchmark run with
// the device buffers (a and b hold host_inputs(n)) and returns what one
// iteration launches on `s`, so that anything costly (tensor wrappers,
// handles) is built outside the timed region.
using GpuAdd = std::function<void()>;
using MakeGpuAdd =
    std::function<GpuAdd(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int dev)>;
// Registers VectorAdd/<name>/n:N[/dev:D] for every size and selected device:
// check once against the CPU (c poisoned first), warm up, then the timed
// loop: back to back over rotating buffer sets below 8x L2 (checked again
// after), else one launch after the L2 flush; wall time bounded as
// bound_wall_time says.
void register_gpu_vector_add(const RunOptions& run, const std::string& name, const MakeGpuAdd& make);

}  // namespace cudabench::bench
