// The VectorAdd and Copy rows on the GPU (gpu_rows.h).
#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "gpu_rows.h"
#include "gpu_support.h"
#include "kernels/cuda_check.h"
#include "kernels/device_check.cuh"
#include "kernels/vector_add.cuh"

namespace cudabench::bench {
namespace {

constexpr unsigned kBlock = 256;

using device_check::Op;

std::size_t bytes_per_element(Op op) {
  return op == Op::Add ? vector_add::kBytesPerElement : vector_add::kCopyBytesPerElement;
}

// a and b hold input_seeds(n)'s streams in each of `sets` sets (at least
// one), made on the device; c is each set's output. One allocation per
// array, sets rotation_stride(n) apart.
struct VectorBuffers {
  std::size_t n, stride;
  int sets;
  DeviceBuffer<float> a, b, c;
  DeviceBuffer<unsigned long long> scratch{1};  // the check's answer
  VectorBuffers(std::size_t n, int sets, cudaStream_t s)
      : n(n), stride(rotation_stride(n)), sets(std::max(1, sets)), a(stride * this->sets),
        b(stride * this->sets), c(stride * this->sets) {
    device_check::fill(a.get(), n, stride, this->sets, input_seeds(n).a, s);
    device_check::fill(b.get(), n, stride, this->sets, input_seeds(n).b, s);
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

// The buffers of n elements in `sets` sets on the current device, kept for
// the rest of the process: every row at n uses them, whichever ran before
// (Google Benchmark runs a row's sizes in turn, so one slot was refilled at
// every call). When the device is out of memory, the others (all but
// `keep`, still in use) are freed and the allocation tried again.
VectorBuffers& vector_buffers(std::size_t n, int sets, cudaStream_t s, const VectorBuffers* keep = nullptr) {
  static std::map<int, std::map<std::pair<std::size_t, int>, std::unique_ptr<VectorBuffers>>> per_device;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  auto& kept = per_device[dev];
  auto& slot = kept[{n, sets}];
  if (slot) return *slot;
  try {
    slot = std::make_unique<VectorBuffers>(n, sets, s);
  } catch (const CudaError& e) {
    if (e.code() != cudaErrorMemoryAllocation) throw;
    for (auto& [key, other] : kept)
      if (other.get() != keep) other.reset();
    slot = std::make_unique<VectorBuffers>(n, sets, s);
  }
  return *slot;
}

// Sets [0, sets) of the output on the device: c = a + b, or c = a, bit
// for bit. A wrong element fails the row, naming it.
bool outputs_right(benchmark::State& state, const std::string& what, Op op, const VectorBuffers& d, int sets,
                   cudaStream_t s) {
  const device_check::Wrong w =
      device_check::first_wrong(op, input_seeds(d.n), d.c.get(), d.n, d.stride, sets, d.scratch.get(), s);
  if (w.set < 0) return true;
  fail(state, what + " gave a wrong result: c[" + std::to_string(w.index) + "] = " + std::to_string(w.got) +
                  ", expected " + std::to_string(device_check::expected(op, input_seeds(d.n), w.index)) +
                  (d.sets > 1 ? " in buffer set " + std::to_string(w.set) : "") + " (n = " + std::to_string(d.n) + ")");
  return false;
}

// `work` on set 0, its output poisoned first, then checked.
bool run_right(benchmark::State& state, const std::string& what, Op op, const VectorBuffers& d, const GpuAdd& work,
               cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(d.set(d.c, 0), 0xFF, d.n * sizeof(float), s));
  work();
  return outputs_right(state, what, op, d, 1, s);
}

// One event pair's launches: `launches` of `works` in turn, the turn going
// on from one pair to the next (`next` counts every launch).
std::function<void()> pair_of(const std::vector<GpuAdd>& works, int launches, std::size_t& next) {
  return [&works, launches, &next] {
    for (int k = 0; k < launches; ++k) works[next++ % works.size()]();
  };
}

// How a row over its buffers is timed: rotated (sets > 0), else one launch
// after the flush.
Timing timing_of(const Rotation& rot, L2Flush flush, cudaStream_t s, const std::string& label) {
  Timing t;
  if (rot.sets == 0) t.before = [flush, s] { before_timed_kernel(flush, s); };
  t.launches = rot.launches;
  t.label = label;
  return t;
}

// The device copies, one Copy row each: BabelStream's kernel, the
// vectorised kernel, cudaMemcpyAsync. The last two are the achievable
// reference (copy_reference).
struct DeviceCopy {
  const char* name;
  MakeGpuAdd make;
  bool reference;
};
template <vector_add::CopyKernel K>
GpuAdd copy_kernel(const float* a, const float*, float* c, std::size_t n, cudaStream_t s, int) {
  return [=] { vector_add::copy(K, a, c, n, kBlock, s); };
}
GpuAdd copy_memcpy(const float* a, const float*, float* c, std::size_t n, cudaStream_t s, int) {
  return [=] { CUDA_CHECK(cudaMemcpyAsync(c, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s)); };
}
const DeviceCopy kDeviceCopies[] = {
    {"cuda_kernel", copy_kernel<vector_add::CopyKernel::OnePerElement>, false},
    {"cuda_float4", copy_kernel<vector_add::CopyKernel::Float4>, true},
    {"cuda_memcpy", copy_memcpy, true},
};

// The best copy bandwidth at n on `dev`: each reference copy of
// kDeviceCopies on the Copy rows' buffers (the add's `add` kept), checked
// first (a wrong copy fails the add's row) and timed as a Copy row is (its
// own rotation, or one launch after `flush`); measured once per device, n
// and flush in a process (a failure again for each row it is asked for).
// 0 when one failed or timed out.
double copy_reference(benchmark::State& state, int dev, cudaStream_t s, std::size_t n, L2Flush flush,
                      const VectorBuffers& add) {
  static std::map<std::string, double> measured;
  const std::string key = std::to_string(dev) + " " + std::to_string(n) + " " + l2_flush_name(flush);
  if (const auto it = measured.find(key); it != measured.end()) return it->second;
  const Rotation rot = buffer_rotation(n, vector_add::kCopyBytesPerElement, flush, dev);
  const VectorBuffers& d = vector_buffers(n, rot.sets, s, &add);
  double best = 0;
  for (const DeviceCopy& copy : kDeviceCopies) {
    if (!copy.reference) continue;
    std::vector<GpuAdd> copies;
    for (int k = 0; k < d.sets; ++k) copies.push_back(copy.make(d.set(d.a, k), nullptr, d.set(d.c, k), n, s, dev));
    if (!run_right(state, std::string("the copy reference (Copy/") + copy.name + ")", Op::Copy, d, copies[0], s))
      return 0;
    std::size_t next = 0;
    const double per_launch =
        time_launches(s, pair_of(copies, rot.launches, next), timing_of(rot, flush, s, ""), 20e-3, 200);
    if (!(per_launch > 0)) return 0;
    best = std::max(best, static_cast<double>(n * vector_add::kCopyBytesPerElement) / per_launch);
  }
  return measured[key] = best;
}

// What a row's time includes besides its traffic, as its label says, and
// why it has no fraction of the DRAM peak ("" when it has one): warm in L2,
// or latency-bound against the overhead measured here.
std::string timing_label(const Rotation& rot, L2Flush flush, double bytes, int dev, std::string* not_dram) {
  const bool back_to_back = rot.sets > 0;
  *not_dram = joined_label(back_to_back ? "" : cache_label(bytes, dev),
                           latency_label(bytes, dram_peak(dev), launch_overhead(back_to_back)));
  const std::string includes = back_to_back ? kIncludesGap : kIncludesTurnaround;
  return joined_label(joined_label(back_to_back ? rot.label() : flush_label(flush), includes), *not_dram);
}

void run_bandwidth_row(benchmark::State& state, int dev, L2Flush flush, Op op, const std::string& what,
                       const MakeGpuAdd& make, const Calls& calls) {
  try {
    const auto n = static_cast<std::size_t>(state.range(0));
    use_device(dev);
    cudaStream_t s = bench_stream();
    const double bytes = static_cast<double>(n * bytes_per_element(op));
    const Rotation rot = buffer_rotation(n, bytes_per_element(op), flush, dev);
    VectorBuffers& d = vector_buffers(n, rot.sets, s);
    std::vector<GpuAdd> works;
    for (int k = 0; k < d.sets; ++k) works.push_back(make(d.set(d.a, k), d.set(d.b, k), d.set(d.c, k), n, s, dev));
    const std::string key = what + " n=" + std::to_string(n) + " dev=" + std::to_string(dev);
    if (!check_once(key, [&] { return run_right(state, what, op, d, works[0], s); })) return;
    for (int i = 0; i < 3; ++i) works[static_cast<std::size_t>(i % d.sets)]();  // warm-up
    // The buffers outlive a call (repetitions, other rows at this n): every
    // output is poisoned, so the check after the timing reads this call's.
    d.poison_outputs(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::string not_dram;
    const std::string label = joined_label(timing_label(rot, flush, bytes, dev, &not_dram), calls ? calls(n) : "");
    std::size_t next = 0;
    timed_gpu_loop(state, dev, s, pair_of(works, rot.launches, next), timing_of(rot, flush, s, label));
    if (state.error_occurred()) return;
    // The launches took the sets in turn from the first: each one launched is checked.
    const int launched = static_cast<int>(std::min<std::size_t>(next, works.size()));
    if (!outputs_right(state, what + " (after the timed launches)", op, d, launched, s)) return;
    set_bandwidth_counters(state, n, bytes_per_element(op));
    if (!not_dram.empty()) return;
    set_peak_counters(state, bytes, dram_peak(dev));
    if (op == Op::Add) set_reference_counters(state, "copy", bytes, copy_reference(state, dev, s, n, flush, d));
  } catch (const std::exception& e) {
    fail_gpu(state, e);
  }
}

void register_bandwidth_rows(const RunOptions& run, const std::string& family, const std::string& name, Op op,
                             const MakeGpuAdd& make, double enqueue_s, const Calls& calls = {}) {
  const L2Flush flush = run.l2_flush;
  register_per_device(
      run, family + "/" + name, "n", vector_sizes(),
      [name, make, flush, op, calls](benchmark::State& st, int dev) {
        run_bandwidth_row(st, dev, flush, op, name, make, calls);
      },
      [run, op, enqueue_s](Registered* b, std::int64_t n, int dev) {
        b->UseManualTime()->Unit(benchmark::kMicrosecond);
        const auto elements = static_cast<std::size_t>(n);
        const double launch = dram_time_estimate(static_cast<double>(elements * bytes_per_element(op)), dev);
        const Rotation rot = buffer_rotation(elements, bytes_per_element(op), run.l2_flush, dev);
        // The reported time is one launch's; an iteration also enqueues
        // every launch of its pair behind the gate, then runs the others.
        if (rot.sets > 0)
          bound_wall_time(run, b, launch, rot.launches * enqueue_s + (rot.launches - 1) * launch + kLaunchSyncOverhead,
                          rot.launches);
        else
          bound_wall_time(run, b, launch, enqueue_s + flush_overhead_s(run.l2_flush, dev));
      });
}

}  // namespace

void register_vector_add_rows(const RunOptions& run, const std::string& name, const MakeGpuAdd& make,
                              double enqueue_s, const Calls& calls) {
  register_bandwidth_rows(run, "VectorAdd", name, Op::Add, make, enqueue_s, calls);
}

void register_gpu_copies(const RunOptions& run) {
  for (const DeviceCopy& copy : kDeviceCopies)
    register_bandwidth_rows(run, "Copy", copy.name, Op::Copy, copy.make, kKernelEnqueue);
}

}  // namespace cudabench::bench
