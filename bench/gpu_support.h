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

#include <sched.h>

#include <cstddef>
#include <functional>
#include <string>

#include "bench_support.h"

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

// Events on one stream: start(), record_stop(), then seconds() waits for
// the stop event.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  void start(cudaStream_t s);
  void record_stop(cudaStream_t s);
  double seconds();

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

// What runs on `s` before each timed kernel: the L2 flush `flush`
// (nothing for None), outside the measurement.
void before_timed_kernel(L2Flush flush, cudaStream_t s);
// The delay alone (kEnqueueCover per launch the timed work enqueues),
// before timed work that cannot be gated.
void cover_enqueue(cudaStream_t s, int launches = 1);
// cache_label (bench_support.h) for a working set on device `dev`.
std::string cache_label(double working_set_bytes, int dev);

// Facts about CUDA device `dev` from the environment report.
double dram_peak(int dev);  // theoretical DRAM bytes/s (0 if unknown)
// Theoretical PCIe bytes/s per direction at the maximum link generation of
// this GPU in this system, else the GPU's own (0 if unknown).
double pcie_peak(int dev);
// Wall time per iteration spent outside the timed region: the flush, launch
// and synchronisation (for bound_wall_time).
double flush_overhead_s(L2Flush flush, int dev);
// Lower bounds on the GPU time to move `bytes` through DRAM, or over PCIe
// (gen 5 x16 assumed when the link is unknown): at least the ~2 us floor
// of a launch or copy.
double dram_time_estimate(double bytes, int dev);
double pcie_time_estimate(double bytes, int dev);

// What keeps the GPU from reaching the start event before the host has
// enqueued the timed work (kernels/stream_cover.cuh).
enum class Cover {
  // The start event, the work and the stop event are enqueued behind a
  // closed gate, opened once they all are: the host's enqueue is never
  // measured, and a gate that timed out fails the row. Where launches
  // block the host (a profiler or sanitizer serialises them) a gate cannot
  // work: the delay stands in, and the label says so.
  Gate,
  // A kEnqueueCover delay, for work that blocks the host while it is
  // enqueued (pageable copies), which a gate would hold until its timeout.
  Delay,
  // Nothing: the host's time is part of what is measured (a training step).
  None,
};
// How the timed loop times one iteration.
struct Timing {
  std::function<void()> before;  // outside the measurement: the L2 flush, or nothing
  std::string label;             // the row's label (telemetry adds to it)
  int launches = 1;              // > 1: the body launches that many; the time is per launch
  Cover cover = Cover::Gate;
};
// The timed loop of every GPU benchmark: per iteration, timing.before, then
// `body` between two CUDA events on `s` (SetIterationTime). A thread samples
// device `dev`'s telemetry (NVML) while the loop runs, every 100 ms and at
// the end; the samples become counters, and the label gets "throttled: ..."
// when the GPU throttled. Before the first one on a device, about half a
// second of warm-up lifts the GPU from its idle clocks.
void timed_gpu_loop(benchmark::State& state, int dev, cudaStream_t s, const std::function<void()>& body,
                    const Timing& timing);
// The same timing outside Google Benchmark, for a reference a row is held
// against: iterations until min_gpu_s of GPU time or max_iterations;
// seconds per launch, 0 when a gate timed out.
double time_launches(cudaStream_t s, const std::function<void()>& body, const Timing& timing, double min_gpu_s,
                     int max_iterations);
// The overhead a GPU row's time includes besides its work, measured once
// per device and process with kernels that do nothing (gated, as the rows
// are): one launch's turnaround between two events, or, back to back, the
// gap from one launch to the next (per launch of kBackToBackLaunches). 0
// when the gate timed out.
constexpr int kBackToBackLaunches = 64;
double launch_overhead(bool back_to_back);
// launch_overhead's body: `launches` empty kernels on `s`.
void empty_launches(cudaStream_t s, int launches);
// While it lives, the calling thread runs on the CPUs nearest GPU `dev`
// (sysfs's local_cpulist, which NVML's CPU affinity also reads), so that
// host buffers made and copied meanwhile sit on the GPU's NUMA node; the
// thread's CPUs are restored after. label(): "host side on the GPU's CPUs
// 0-15 (NUMA node 0)", or why it is not bound.
class NearGpuCpus {
 public:
  explicit NearGpuCpus(int dev);
  ~NearGpuCpus();
  NearGpuCpus(const NearGpuCpus&) = delete;
  NearGpuCpus& operator=(const NearGpuCpus&) = delete;
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  bool bound_ = false;
  cpu_set_t old_{};
};
// How a VectorAdd or Copy of n elements (bytes_per_element each) is timed
// on `dev` (bench_support.h Rotation): with sets == 0, one launch after the
// flush `flush`.
Rotation buffer_rotation(std::size_t n, std::size_t bytes_per_element, L2Flush flush, int dev);

}  // namespace cudabench::bench
