#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "kernels/cuda_check.h"
#include "env/probe.h"
#include "gpu_support.h"
#include "kernels/l2_flush.cuh"
#include "kernels/stream_cover.cuh"
#include "telemetry.h"
#include "kernels/vector_add.cuh"

namespace cudabench::bench {

void fail_gpu(benchmark::State& state, const std::exception& e, const std::string& prefix) {
  std::string message = e.what();
  message = prefix + message.substr(0, message.find('\n'));
  const auto* ce = dynamic_cast<const CudaError*>(&e);
  const cudaError_t code = ce ? ce->code() : cudaDeviceSynchronize();
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
      fail(state, message);
      return;
    default:
      break;
  }
  fail_run(state, message);
}

template <typename T>
DeviceBuffer<T>::DeviceBuffer(std::size_t n) : n_(n) {
  CUDA_CHECK(cudaGetDevice(&dev_));
  if (n) CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
}
template <typename T>
DeviceBuffer<T>::~DeviceBuffer() {
  if (!p_) return;
  int current = dev_;
  cudaGetDevice(&current);
  if (current != dev_) cudaSetDevice(dev_);
  cudaFree(p_);
  if (current != dev_) cudaSetDevice(current);
}
template class DeviceBuffer<float>;
template class DeviceBuffer<unsigned char>;
template class DeviceBuffer<unsigned long long>;

HostBuffer::HostBuffer(std::size_t bytes, bool pinned) : pinned_(pinned) {
  if (pinned) CUDA_CHECK(cudaMallocHost(&p_, bytes));
  else p_ = new float[(bytes + sizeof(float) - 1) / sizeof(float)];
}
HostBuffer::~HostBuffer() {
  if (pinned_) cudaFreeHost(p_);
  else delete[] p_;
}

GpuTimer::GpuTimer() {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}
GpuTimer::~GpuTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}
void GpuTimer::start(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(start_, s)); }
void GpuTimer::record_stop(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(stop_, s)); }
double GpuTimer::seconds() {
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms / 1e3;
}

namespace {

int current_device() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

const env::GpuDevice* gpu(int dev) {
  for (const auto& g : env::collect().gpus)
    if (g.index == dev) return &g;
  return nullptr;
}

// The flush buffer of the current device: 2x L2, at least 64 MiB, filled
// once (0x5a bytes) so the read flush reads real data; plus its sink.
struct FlushBuffer {
  DeviceBuffer<unsigned char> buf;
  DeviceBuffer<float> sink{1};
  explicit FlushBuffer(std::size_t bytes) : buf(bytes) {
    CUDA_CHECK(cudaMemsetAsync(buf.get(), 0x5a, bytes, bench_stream()));
    CUDA_CHECK(cudaStreamSynchronize(bench_stream()));
  }
};

std::size_t flush_buffer_bytes(long long l2) {
  return std::max<std::size_t>(2 * static_cast<std::size_t>(std::max(0LL, l2)), std::size_t{64} << 20);
}

FlushBuffer& flush_buffer() {
  static std::map<int, std::unique_ptr<FlushBuffer>> per_device;
  const int dev = current_device();
  auto& slot = per_device[dev];
  if (!slot) {
    // The L2 size the probe read, as flush_overhead_s uses it.
    const auto* g = gpu(dev);
    slot = std::make_unique<FlushBuffer>(flush_buffer_bytes(g ? g->l2_bytes : 0));
  }
  return *slot;
}

// About half a second of DRAM traffic on the current device, once per
// process, before its first timed benchmark: a GPU at idle clocks takes
// that long to reach its boost clock.
void warm_up_once(cudaStream_t s) {
  static std::set<int> warm;
  if (!warm.insert(current_device()).second) return;
  FlushBuffer& f = flush_buffer();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 8; ++i) l2_flush::read(f.buf.get(), f.buf.size(), f.sink.get(), s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

}  // namespace

void use_device(int dev) { CUDA_CHECK(cudaSetDevice(dev)); }

cudaStream_t bench_stream() {
  static std::map<int, cudaStream_t> per_device;
  const int dev = current_device();
  auto it = per_device.find(dev);
  if (it == per_device.end()) {
    cudaStream_t t{};
    CUDA_CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    it = per_device.emplace(dev, t).first;
  }
  return it->second;
}

void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}

void download(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}

void cover_enqueue(cudaStream_t s, int launches) {
  stream_cover::delay(static_cast<std::uint64_t>(kEnqueueCover * 1e9) * static_cast<std::uint64_t>(std::max(1, launches)), s);
}

void before_timed_kernel(L2Flush flush, cudaStream_t s) {
  switch (flush) {
    case L2Flush::None:
      return;
    case L2Flush::Memset: {
      FlushBuffer& f = flush_buffer();
      CUDA_CHECK(cudaMemsetAsync(f.buf.get(), 0x5a, f.buf.size(), s));
      return;
    }
    case L2Flush::Read: {
      FlushBuffer& f = flush_buffer();
      l2_flush::read(f.buf.get(), f.buf.size(), f.sink.get(), s);
      return;
    }
  }
}

double dram_peak(int dev) {
  const auto* g = gpu(dev);
  return g ? g->peak_bandwidth_bytes_per_s : 0;
}

double pcie_peak(int dev) {
  const auto* g = gpu(dev);
  return g ? env::pcie_peak_bytes_per_s(g->nvml) : 0;
}

double flush_overhead_s(L2Flush flush, int dev) {
  const auto* g = gpu(dev);
  const double peak = dram_peak(dev);
  double before = 0;  // no flush: the gate opens as soon as the host has enqueued
  if (flush != L2Flush::None)
    before = peak > 0 ? static_cast<double>(flush_buffer_bytes(g ? g->l2_bytes : 0)) / peak : kEnqueueCover;
  return before + kLaunchSyncOverhead;
}

std::string cache_label(double working_set_bytes, int dev) {
  const auto* g = gpu(dev);
  return cache_label(working_set_bytes, g ? static_cast<double>(g->l2_bytes) : 0.0);
}

namespace {
constexpr double kLaunchFloor = 2e-6;
}

double dram_time_estimate(double bytes, int dev) {
  const double peak = dram_peak(dev);
  return std::max(kLaunchFloor, peak > 0 ? bytes / peak : 0.0);
}

double pcie_time_estimate(double bytes, int dev) {
  const double link = pcie_peak(dev) > 0 ? pcie_peak(dev) : 64e9;
  return std::max(kLaunchFloor, bytes / link);
}

namespace {

// The current device's gate (kernels/stream_cover.cuh): its flags in mapped,
// pinned host memory.
class Gate {
 public:
  Gate() {
    CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), sizeof *host_,
                             cudaHostAllocMapped | cudaHostAllocPortable));
    const cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0);
    if (e != cudaSuccess) cudaFreeHost(host_);
    CUDA_CHECK(e);
  }
  ~Gate() { cudaFreeHost(host_); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void close(cudaStream_t s, double timeout_s) {
    word(host_->open) = 0;
    word(host_->timed_out) = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    stream_cover::gate(device_, static_cast<std::uint64_t>(timeout_s * 1e9), s);
  }
  void open() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    word(host_->open) = 1;
  }
  // Once the stream has passed it: whether it was opened, not timed out.
  bool held() const { return word(host_->timed_out) == 0; }

 private:
  static volatile std::uint32_t& word(std::uint32_t& w) { return w; }
  stream_cover::GateFlags* host_ = nullptr;
  stream_cover::GateFlags* device_ = nullptr;
};

// Opens the gate when the enqueue is done, or when it throws.
struct OpenWhenDone {
  Gate* gate;
  ~OpenWhenDone() {
    if (gate) gate->open();
  }
};

// The current device's gate, or why it has none: mapped host memory is
// refused, or launches block the host (a profiler or a sanitizer
// serialises them: each waits for the kernel before it, or for its own),
// where a closed gate would only time out. Asked once per device: a gate
// and one launch behind it are enqueued in far less than the gate's
// timeout, and the stream still waits on them after that, where it works.
struct GateOrWhy {
  std::unique_ptr<Gate> gate;
  std::string why_not;
};
const GateOrWhy& usable_gate(cudaStream_t s) {
  static std::map<int, GateOrWhy> per_device;
  constexpr double kProbe = 0.2;  // s: the probe's gate timeout
  const int dev = current_device();
  if (const auto it = per_device.find(dev); it != per_device.end()) return it->second;
  GateOrWhy g;
  try {
    g.gate = std::make_unique<Gate>();
  } catch (const CudaError& e) {
    return per_device[dev] = {nullptr, std::string("not gated: no mapped host memory (") + cudaGetErrorName(e.code()) + ")"};
  }
  // The delay kernel loaded first: a first launch behind a closed gate may
  // wait for it to open (lazy loading). Three tries: a host thread away for
  // the whole timeout proves nothing.
  cover_enqueue(s);
  for (int attempt = 0; attempt < 3; ++attempt) {
    CUDA_CHECK(cudaStreamSynchronize(s));
    const auto t0 = std::chrono::steady_clock::now();
    cudaError_t q = cudaSuccess;
    {
      OpenWhenDone done{g.gate.get()};
      g.gate->close(s, kProbe);
      cover_enqueue(s);
      q = cudaStreamQuery(s);
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (q != cudaErrorNotReady && q != cudaSuccess) CUDA_CHECK(q);
    if (took >= kProbe / 2) return per_device[dev] = {nullptr, "not gated: launches block the host here (a profiler or sanitizer?)"};
    if (q == cudaErrorNotReady) return per_device[dev] = std::move(g);
  }
  return per_device[dev] = {nullptr, "not gated: the gate's probe never saw the stream wait"};
}

// One iteration: seconds per launch, or nullopt when the gate timed out.
std::optional<double> time_one(GpuTimer& t, cudaStream_t s, const std::function<void()>& body, const Timing& timing,
                               Gate* gate) {
  if (timing.before) timing.before();
  if (!gate && timing.cover != Cover::None) cover_enqueue(s, timing.launches);
  {
    OpenWhenDone done{gate};
    if (gate) gate->close(s, kGateTimeout);
    t.start(s);
    body();
    t.record_stop(s);
  }
  const double pair = t.seconds();
  if (gate && !gate->held()) return std::nullopt;
  return per_launch_seconds(pair, timing.launches);
}

}  // namespace

void timed_gpu_loop(benchmark::State& state, int dev, cudaStream_t s, const std::function<void()>& body,
                    const Timing& timing) {
  const auto* g = gpu(dev);
  warm_up_once(s);
  const GateOrWhy* cover = timing.cover == Cover::Gate ? &usable_gate(s) : nullptr;
  Gate* gate = cover ? cover->gate.get() : nullptr;
  const std::string label = cover ? joined_label(timing.label, cover->why_not) : timing.label;
  GpuTimer t;
  Telemetry telemetry(g ? g->pci_bus_id : "");
  {
    // Samples taken here, between iterations after a synchronisation, would
    // find the GPU idle; a thread samples while the work runs.
    TelemetryThread sampler(telemetry);
    for (auto _ : state) {
      const std::optional<double> seconds = time_one(t, s, body, timing, gate);
      if (!seconds) {
        fail_run(state, "the gate before the timed work timed out after " + std::to_string(static_cast<int>(kGateTimeout)) +
                            " s: the host stalled while enqueuing it, or the launch queue filled");
        break;
      }
      state.SetIterationTime(*seconds);
    }
  }
  CUDA_CHECK(cudaGetLastError());
  state.SetLabel(add_telemetry(state, telemetry.finish(), label));
}

double time_launches(cudaStream_t s, const std::function<void()>& body, const Timing& timing, double min_gpu_s,
                     int max_iterations) {
  Gate* gate = timing.cover == Cover::Gate ? usable_gate(s).gate.get() : nullptr;
  GpuTimer t;
  double total = 0;
  int i = 0;
  for (; i < max_iterations && total * timing.launches < min_gpu_s; ++i) {
    const std::optional<double> seconds = time_one(t, s, body, timing, gate);
    if (!seconds) return 0;
    total += *seconds;
  }
  return i ? total / i : 0;
}

NearGpuCpus::NearGpuCpus(int dev) {
  const auto* g = gpu(dev);
  const std::vector<int> cpus = cpu_list(g ? g->local_cpus : "");
  const std::string node = g && g->numa_node >= 0 ? "NUMA node " + std::to_string(g->numa_node) : "NUMA node unknown";
  if (cpus.empty()) {
    label_ = "host side not bound: the GPU's CPUs are unknown";
    return;
  }
  // Within the CPUs this thread may use (taskset, a Slurm cpuset): never more.
  cpu_set_t set;
  CPU_ZERO(&set);
  int allowed = 0;
  if (sched_getaffinity(0, sizeof old_, &old_) == 0)
    for (const int c : cpus)
      if (c < CPU_SETSIZE && CPU_ISSET(c, &old_)) {
        CPU_SET(c, &set);
        ++allowed;
      }
  if (allowed == 0 || sched_setaffinity(0, sizeof set, &set) != 0) {
    label_ = "host side not bound: the GPU's CPUs " + g->local_cpus + " are not allowed here";
    return;
  }
  bound_ = true;
  const std::string which = allowed == static_cast<int>(cpus.size()) ? "the GPU's CPUs "
                            : std::to_string(allowed) + " allowed here of the GPU's CPUs ";
  label_ = "host side on " + which + g->local_cpus + " (" + node + ")";
}

NearGpuCpus::~NearGpuCpus() {
  if (bound_) sched_setaffinity(0, sizeof old_, &old_);
}

void empty_launches(cudaStream_t s, int launches) {
  for (int k = 0; k < launches; ++k) stream_cover::empty(s);
}

double launch_overhead(bool back_to_back) {
  static std::map<std::pair<int, bool>, double> measured;
  const auto key = std::make_pair(current_device(), back_to_back);
  if (const auto it = measured.find(key); it != measured.end()) return it->second;
  cudaStream_t s = bench_stream();
  warm_up_once(s);  // at the clocks the rows run at, as the Launch rows are
  Timing t;
  t.launches = back_to_back ? kBackToBackLaunches : 1;
  empty_launches(s, t.launches);  // loaded before it is timed
  // 2 ms of GPU time: a few hundred pairs, each gated as a row's are.
  return measured[key] = time_launches(s, [s, &t] { empty_launches(s, t.launches); }, t, 2e-3, 1000);
}

Rotation buffer_rotation(std::size_t n, std::size_t bytes_per_element, L2Flush flush, int dev) {
  const double bytes = static_cast<double>(n * bytes_per_element);
  const auto* g = gpu(dev);
  if (flush == L2Flush::None || !g) return {};
  return rotation(bytes, static_cast<double>(g->l2_bytes), dram_time_estimate(bytes, dev));
}

}  // namespace cudabench::bench
