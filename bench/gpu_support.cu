#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "bench_support.h"
#include "kernels/cuda_check.h"
#include "env/probe.h"
#include "gpu_support.h"
#include "kernels/l2_flush.cuh"
#include "kernels/stream_delay.cuh"
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
double GpuTimer::stop(cudaStream_t s) {
  CUDA_CHECK(cudaEventRecord(stop_, s));
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

// a and b hold host_inputs(n) in each of `sets` sets (at least one); c is
// each set's output. One allocation per array, sets rotation_stride(n)
// apart. Kept per device across a benchmark's growth steps and
// repetitions, replaced for a new n.
struct VectorBuffers {
  std::size_t n, stride;
  int sets;
  DeviceBuffer<float> a, b, c;
  VectorBuffers(std::size_t n, int sets, cudaStream_t s)
      : n(n), stride(rotation_stride(n)), sets(std::max(1, sets)), a(stride * this->sets),
        b(stride * this->sets), c(stride * this->sets) {
    const HostInputs& h = host_inputs(n);
    upload(a.get(), h.a.data(), n * sizeof(float), s);
    upload(b.get(), h.b.data(), n * sizeof(float), s);
    for (int k = 1; k < this->sets; ++k) {
      CUDA_CHECK(cudaMemcpyAsync(a.get() + k * stride, a.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(b.get() + k * stride, b.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    }
    poison_outputs(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  // Every output NaN (0xFF bytes are a NaN in every float): a set no launch
  // wrote since cannot pass a check.
  void poison_outputs(cudaStream_t s) {
    CUDA_CHECK(cudaMemsetAsync(c.get(), 0xFF, stride * sets * sizeof(float), s));
  }
  float* set(const DeviceBuffer<float>& x, int k) const { return x.get() + static_cast<std::size_t>(k) * stride; }
};

VectorBuffers& vector_buffers(std::size_t n, int sets, cudaStream_t s) {
  static std::map<int, LastOne<VectorBuffers>> per_device;
  return per_device[current_device()].get(std::to_string(n) + "x" + std::to_string(sets),
                                          [&] { return std::make_unique<VectorBuffers>(n, sets, s); });
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

void cover_enqueue(cudaStream_t s, double seconds) {
  stream_delay::delay(static_cast<std::uint64_t>(seconds * 1e9), s);
}

void before_timed_kernel(L2Flush flush, cudaStream_t s) {
  switch (flush) {
    case L2Flush::None:
      cover_enqueue(s);
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

std::string flush_label(L2Flush f) {
  return f == L2Flush::None ? "L2 not flushed" : std::string("L2 flushed (") + l2_flush_name(f) + ")";
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
  double before = kEnqueueCover;
  if (flush != L2Flush::None && peak > 0)
    before = static_cast<double>(flush_buffer_bytes(g ? g->l2_bytes : 0)) / peak;
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

void timed_gpu_loop(benchmark::State& state, int dev, cudaStream_t s, const std::function<void()>& body,
                    const std::function<void()>& before, const std::string& label, int launches) {
  const auto* g = gpu(dev);
  warm_up_once(s);
  GpuTimer t;
  Telemetry telemetry(g ? g->pci_bus_id : "");
  {
    // Samples taken here, between iterations after a synchronisation, would
    // find the GPU idle; a thread samples while the work runs.
    TelemetryThread sampler(telemetry);
    for (auto _ : state) {
      if (before) before();
      t.start(s);
      body();
      state.SetIterationTime(per_launch_seconds(t.stop(s), launches));
    }
  }
  CUDA_CHECK(cudaGetLastError());
  state.SetLabel(add_telemetry(state, telemetry.finish(), label));
}

Rotation vector_add_rotation(std::size_t n, L2Flush flush, int dev) {
  const double bytes = static_cast<double>(n * vector_add::kBytesPerElement);
  const auto* g = gpu(dev);
  if (flush == L2Flush::None || !g) return {};
  return rotation(bytes, static_cast<double>(g->l2_bytes), dram_time_estimate(bytes, dev));
}

namespace {

// The result of `add` on set k of d, c poisoned first, against the CPU.
bool vector_add_right(benchmark::State& state, const std::string& what, VectorBuffers& d, int k,
                      const GpuAdd& add, cudaStream_t s) {
  const std::size_t n = d.n;
  // 0xFF bytes are a NaN in every float: an unwritten element cannot pass.
  if (add) {
    CUDA_CHECK(cudaMemsetAsync(d.set(d.c, k), 0xFF, n * sizeof(float), s));
    add();
  }
  std::vector<float> back(n);
  download(back.data(), d.set(d.c, k), n * sizeof(float), s);
  const HostInputs& h = host_inputs(n);
  return check_vector_add(state, what, h.a.data(), h.b.data(), back.data(), n);
}

// The rotated timing (bench_support.h Rotation): the sets in turn, the turn
// going on across pairs; before each pair a delay that covers the host's
// enqueue of its launches, as measured on one pair first. Then the last
// set launched is checked. The buffers outlive a call (repetitions, other
// variants at this n), so every output is poisoned first: what the check
// reads was written by this call.
bool time_rotated(benchmark::State& state, int dev, cudaStream_t s, VectorBuffers& d, const std::vector<GpuAdd>& adds,
                  const Rotation& rot, const std::string& what) {
  d.poison_outputs(s);
  std::size_t next = 0;
  const auto pair = [&] {
    for (int k = 0; k < rot.launches; ++k) adds[next++ % adds.size()]();
  };
  const auto t0 = std::chrono::steady_clock::now();
  pair();
  const double enqueue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CUDA_CHECK(cudaStreamSynchronize(s));
  const double cover = enqueue_cover_s(enqueue_s);
  timed_gpu_loop(state, dev, s, pair, [s, cover] { cover_enqueue(s, cover); }, rot.label(), rot.launches);
  const int last = static_cast<int>((next - 1) % adds.size());
  return vector_add_right(state, what + " (the last buffer set launched)", d, last, nullptr, s);
}

void run_gpu_vector_add(benchmark::State& state, int dev, L2Flush flush, const std::string& what,
                        const MakeGpuAdd& make) {
  try {
    const auto n = static_cast<std::size_t>(state.range(0));
    use_device(dev);
    cudaStream_t s = bench_stream();
    const Rotation rot = vector_add_rotation(n, flush, dev);
    VectorBuffers& d = vector_buffers(n, rot.sets, s);
    std::vector<GpuAdd> adds;
    for (int k = 0; k < d.sets; ++k) adds.push_back(make(d.set(d.a, k), d.set(d.b, k), d.set(d.c, k), n, s, dev));
    const std::string key = what + " n=" + std::to_string(n) + " dev=" + std::to_string(dev);
    if (!check_once(key, [&] { return vector_add_right(state, what, d, 0, adds[0], s); })) return;
    for (int i = 0; i < 3; ++i) adds[static_cast<std::size_t>(i % d.sets)]();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    const double bytes = static_cast<double>(n * vector_add::kBytesPerElement);
    bool from_dram = true;  // what the row's frac_of_peak is against
    if (rot.sets > 0) {
      if (!time_rotated(state, dev, s, d, adds, rot, what)) return;
    } else {
      const std::string cache = cache_label(bytes, dev);
      from_dram = cache.empty();
      timed_gpu_loop(state, dev, s, adds[0], [s, flush] { before_timed_kernel(flush, s); },
                     from_dram ? flush_label(flush) : flush_label(flush) + "; " + cache);
    }
    set_vector_add_counters(state, n);
    if (from_dram) set_peak_counters(state, bytes, dram_peak(dev));
  } catch (const std::exception& e) {
    fail_gpu(state, e);
  }
}

}  // namespace

void register_gpu_vector_add(const RunOptions& run, const std::string& name, const MakeGpuAdd& make) {
  const L2Flush flush = run.l2_flush;
  register_per_device(
      run, "VectorAdd/" + name, "n", vector_sizes(),
      [name, make, flush](benchmark::State& st, int dev) { run_gpu_vector_add(st, dev, flush, name, make); },
      [run](Registered* b, std::int64_t n, int dev) {
        b->UseManualTime()->Unit(benchmark::kMicrosecond);
        // The reported time is per launch; a rotated iteration runs them all.
        const double launch = dram_time_estimate(static_cast<double>(n) * vector_add::kBytesPerElement, dev);
        const Rotation rot = vector_add_rotation(static_cast<std::size_t>(n), run.l2_flush, dev);
        // The delay covers the host's enqueue, ~5 us a launch.
        if (rot.sets > 0)
          bound_wall_time(run, b, launch,
                          (rot.launches - 1) * launch + enqueue_cover_s(rot.launches * 5e-6) + kLaunchSyncOverhead);
        else
          bound_wall_time(run, b, launch, flush_overhead_s(run.l2_flush, dev));
      });
}

}  // namespace cudabench::bench
