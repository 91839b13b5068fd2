// Transfer/<h2d|d2h>_<pageable|pinned>/bytes:N: one cudaMemcpyAsync, timed
// with events. Checked first: the data that arrives is compared byte for byte
// with what was sent, into a destination poisoned beforehand.
#include <cstring>
#include <memory>

#include "bench_support.h"
#include "cuda_check.h"
#include "gpu_support.h"
#include "registry.h"

namespace cudabench::bench {
namespace {

struct HostBuffer {
  float* p = nullptr;
  bool pinned = false;
  HostBuffer(std::size_t n, bool pin) : pinned(pin) {
    if (pin) CUDA_CHECK(cudaMallocHost(&p, n * sizeof(float)));
    else p = new float[n];
  }
  ~HostBuffer() {
    if (pinned) cudaFreeHost(p);
    else delete[] p;
  }
};

void BM_transfer(benchmark::State& state, bool h2d, bool pinned) {
  try {
    const auto bytes = static_cast<std::size_t>(state.range(0));
    const std::size_t n = bytes / sizeof(float);
    const HostInputs& src = host_inputs(n);
    HostBuffer host(n, pinned);
    HostBuffer check(n, false);
    DeviceBuffer<float> dev(n);
    cudaStream_t s = bench_stream();
    auto copy = [&] {
      if (h2d) CUDA_CHECK(cudaMemcpyAsync(dev.get(), host.p, bytes, cudaMemcpyHostToDevice, s));
      else CUDA_CHECK(cudaMemcpyAsync(host.p, dev.get(), bytes, cudaMemcpyDeviceToHost, s));
    };
    if (h2d) {
      std::memcpy(host.p, src.a.data(), bytes);
      CUDA_CHECK(cudaMemsetAsync(dev.get(), 0xFF, bytes, s));
      copy();
      CUDA_CHECK(cudaMemcpyAsync(check.p, dev.get(), bytes, cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
    } else {
      CUDA_CHECK(cudaMemcpy(dev.get(), src.a.data(), bytes, cudaMemcpyHostToDevice));
      poison(host.p, n);
      copy();
      CUDA_CHECK(cudaStreamSynchronize(s));
      std::memcpy(check.p, host.p, bytes);
    }
    if (std::memcmp(check.p, src.a.data(), bytes) != 0) {
      fail(state, "the copied data differs from the source");
      return;
    }
    copy();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    GpuTimer t;
    for (auto _ : state) {
      t.start(s);
      copy();
      state.SetIterationTime(t.stop(s));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
  } catch (const std::exception& e) {
    fail(state, e.what());
  }
}

}  // namespace

void register_transfers() {
  for (bool h2d : {true, false})
    for (bool pinned : {false, true}) {
      const std::string name = std::string("Transfer/") + (h2d ? "h2d" : "d2h") + "_" +
                               (pinned ? "pinned" : "pageable");
      auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_transfer, h2d, pinned);
      b->ArgName("bytes")->UseManualTime()->Unit(benchmark::kMicrosecond);
      for (auto n : vector_sizes()) b->Arg(n * static_cast<std::int64_t>(sizeof(float)));
    }
}

}  // namespace cudabench::bench
