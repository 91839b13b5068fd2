// Transfer/<h2d|d2h>_<pageable|pinned>/bytes:N: one cudaMemcpyAsync on the
// benchmark stream, timed with events. Checked first: the data that arrives
// is compared byte for byte with what was sent, into a destination poisoned
// beforehand. frac_of_peak is against the PCIe link's theoretical rate
// (NVML's maximum generation x width with this system, after encoding);
// a copy too small to be timed by its bandwidth is labelled latency-bound
// and has none. The host side runs on the GPU's own CPUs, and its buffers
// sit on the GPU's NUMA node (NearGpuCpus); the label says which.
#include <cstring>
#include <memory>

#include "bench/bench_support.h"
#include "kernels/cuda_check.h"
#include "bench/gpu_support.h"
#include "bench/family.h"

namespace cudabench::bench {
namespace {

struct TransferBuffers {
  HostBuffer host;
  DeviceBuffer<float> dev;
  TransferBuffers(std::size_t bytes, bool pinned) : host(bytes, pinned), dev(bytes / sizeof(float)) {}
};

void BM_transfer(benchmark::State& state, int dev, bool h2d, bool pinned) {
  try {
    const auto bytes = static_cast<std::size_t>(state.range(0));
    const std::size_t n = bytes / sizeof(float);
    use_device(dev);
    const NearGpuCpus near(dev);
    cudaStream_t s = bench_stream();
    static OneSlotCache<TransferBuffers> cache;
    const std::string key = std::string(h2d ? "h2d " : "d2h ") + (pinned ? "pinned " : "pageable ") +
                            std::to_string(bytes) + " dev=" + std::to_string(dev);
    TransferBuffers& b = cache.get(key, [&] { return std::make_unique<TransferBuffers>(bytes, pinned); });
    auto copy = [&] {
      if (h2d) CUDA_CHECK(cudaMemcpyAsync(b.dev.get(), b.host.get(), bytes, cudaMemcpyHostToDevice, s));
      else CUDA_CHECK(cudaMemcpyAsync(b.host.get(), b.dev.get(), bytes, cudaMemcpyDeviceToHost, s));
    };
    const bool good = check_once(key, [&] {
      const HostInputs& src = host_inputs(n);
      std::vector<float> arrived(n);
      if (h2d) {
        std::memcpy(b.host.get(), src.a.data(), bytes);
        CUDA_CHECK(cudaMemsetAsync(b.dev.get(), 0xFF, bytes, s));
        copy();
        download(arrived.data(), b.dev.get(), bytes, s);
      } else {
        upload(b.dev.get(), src.a.data(), bytes, s);
        poison(b.host.get(), n);
        copy();
        CUDA_CHECK(cudaStreamSynchronize(s));
        std::memcpy(arrived.data(), b.host.get(), bytes);
      }
      if (std::memcmp(arrived.data(), src.a.data(), bytes) == 0) return true;
      fail(state, "the copied data differs from the source");
      return false;
    });
    if (!good) return;
    copy();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    // A pageable copy blocks the host while it stages the data: no gate.
    Timing timing;
    timing.cover = pinned ? Cover::Gate : Cover::Delay;
    const std::string latency = latency_label(static_cast<double>(bytes), pcie_peak(dev));
    timing.label = joined_label(latency, near.label());
    timed_gpu_loop(state, dev, s, copy, timing);
    set_rates(state, static_cast<double>(bytes), 0);
    if (latency.empty()) set_peak_counters(state, static_cast<double>(bytes), pcie_peak(dev));
  } catch (const std::exception& e) {
    fail_gpu(state, e);
  }
}

}  // namespace

std::string add_transfers(const RunOptions& run, const Usable&) {
  std::vector<std::int64_t> sizes;
  for (auto n : vector_sizes()) sizes.push_back(n * static_cast<std::int64_t>(sizeof(float)));
  for (bool h2d : {true, false})
    for (bool pinned : {false, true}) {
      const std::string name = std::string("Transfer/") + (h2d ? "h2d" : "d2h") + "_" +
                               (pinned ? "pinned" : "pageable");
      register_per_device(
          run, name, "bytes", sizes,
          [h2d, pinned](benchmark::State& st, int dev) { BM_transfer(st, dev, h2d, pinned); },
          [run](Registered* b, std::int64_t bytes, int dev) {
            b->UseManualTime()->Unit(benchmark::kMicrosecond);
            bound_wall_time(run, b, pcie_time_estimate(static_cast<double>(bytes), dev),
                            kEnqueueCover + kLaunchSyncOverhead);
          });
    }
  return "";
}

CUDABENCH_FAMILY(transfer, 30, Needs::Gpu, add_transfers,
                 {.default_rows = "Transfer/", .gate_gpu = "Transfer/h2d_pinned/bytes:40000000/"});

}  // namespace cudabench::bench
