// VectorAdd/cuda_v1..v8 (the variant table), VectorAdd/cublas_geam,
// VectorAdd/thrust, the device copies (Copy/cuda_kernel, BabelStream's;
// Copy/cuda_float4; Copy/cuda_memcpy: gpu_rows.cu), and the seed's whole flow
// VectorAddFlow/<pageable|pinned> (copy a and b in, add with the seed's
// <<<512,512>>> launch made correct, copy c out; its host side on the GPU's
// CPUs), and the launch overhead as rows, Launch/empty_kernel.
#include <cublas_v2.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "bench/bench_support.h"
#include "bench/cublas_shape.h"
#include "kernels/cuda_check.h"
#include "bench/gpu_support.h"
#include "bench/family.h"
#include "bench/gpu_rows.h"
#include "kernels/vector_add.cuh"

namespace cudabench::bench {
namespace {

constexpr unsigned kBlock = 256;

// One handle per device (a handle belongs to the device current when it is
// made).
cublasHandle_t cublas() {
  static std::map<int, cublasHandle_t> per_device;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  auto it = per_device.find(dev);
  if (it == per_device.end()) {
    cublasHandle_t t{};
    if (cublasCreate(&t) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    it = per_device.emplace(dev, t).first;
  }
  return it->second;
}

// C = A + B with each array as the matrix geam_shape(n) says, the rest in
// a second call: what cuBLAS's geam is for.
GpuAdd cublas_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int) {
  const GeamShape g = geam_shape(n);
  if (g.rows > INT32_MAX || g.cols > INT32_MAX) throw std::invalid_argument("cublasSgeam takes int sizes");
  cublasHandle_t h = cublas();
  if (cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSetStream failed");
  const auto geam = [h](const float* a, const float* b, float* c, std::size_t rows, std::size_t cols) {
    const float one = 1.0f;
    const int m = static_cast<int>(rows);
    const cublasStatus_t st = cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, static_cast<int>(cols), &one, a, m, &one,
                                          b, m, c, m);
    if (st != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error(std::string("cublasSgeam failed: ") + cublasGetStatusString(st));
  };
  const std::size_t done = g.rows * g.cols;
  return [=] {
    if (done) geam(a, b, c, g.rows, g.cols);
    if (g.rest) geam(a + done, b + done, c + done, g.rest, 1);
  };
}

GpuAdd thrust_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int) {
  return [=] {
    thrust::transform(thrust::cuda::par_nosync.on(s), a, a + n, b, c, thrust::plus<float>());
    CUDA_CHECK(cudaGetLastError());
  };
}

// The seed's flow's buffers: host a, b, c of one kind and device a, b, c.
struct FlowBuffers {
  HostBuffer ha, hb, hc;
  DeviceBuffer<float> da, db, dc;
  FlowBuffers(std::size_t n, bool pinned)
      : ha(n * sizeof(float), pinned), hb(n * sizeof(float), pinned), hc(n * sizeof(float), pinned),
        da(n), db(n), dc(n) {
    const HostInputs& h = host_inputs(n);
    std::copy(h.a.begin(), h.a.end(), ha.get());
    std::copy(h.b.begin(), h.b.end(), hb.get());
  }
};

void BM_flow(benchmark::State& state, int dev, bool pinned) {
  try {
    const auto n = static_cast<std::size_t>(state.range(0));
    use_device(dev);
    const NearGpuCpus near(dev);
    const std::size_t bytes = n * sizeof(float);
    static OneSlotCache<FlowBuffers> cache;
    const std::string key = std::to_string(n) + (pinned ? " pinned" : " pageable") + " dev=" + std::to_string(dev);
    FlowBuffers& f = cache.get(key, [&] { return std::make_unique<FlowBuffers>(n, pinned); });
    cudaStream_t s = bench_stream();
    auto flow = [&] {
      CUDA_CHECK(cudaMemcpyAsync(f.da.get(), f.ha.get(), bytes, cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(f.db.get(), f.hb.get(), bytes, cudaMemcpyHostToDevice, s));
      vector_add::vector_add(vector_add::kSeedVariant, f.da.get(), f.db.get(), f.dc.get(), n, vector_add::kSeedBlock, s);
      CUDA_CHECK(cudaMemcpyAsync(f.hc.get(), f.dc.get(), bytes, cudaMemcpyDeviceToHost, s));
    };
    const bool good = check_once("flow " + key, [&] {
      const HostInputs& h = host_inputs(n);
      poison(f.hc.get(), n);
      CUDA_CHECK(cudaMemsetAsync(f.dc.get(), 0xFF, bytes, s));
      flow();
      CUDA_CHECK(cudaStreamSynchronize(s));
      return check_vector_add(state, "seed flow", h.a.data(), h.b.data(), f.hc.get(), n);
    });
    if (!good) return;
    flow();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    // A pageable copy blocks the host while it stages the data: no gate.
    Timing timing;
    timing.cover = pinned ? Cover::Gate : Cover::Delay;
    timing.label = near.label();
    timed_gpu_loop(state, dev, s, flow, timing);
    // 12 bytes per element cross the bus: a and b in, c out.
    set_vector_add_counters(state, n);
  } catch (const std::exception& e) {
    fail_gpu(state, e);
  }
}

// Launch/empty_kernel/launches:L: L kernels that do nothing between two
// events (gated), the time per launch: one launch's turnaround (L = 1),
// or the gap from one launch to the next (back to back), which the
// VectorAdd and Copy rows' times include (launch_overhead). Nothing is
// computed, so there is nothing to check.
void register_launch_rows(const RunOptions& run) {
  register_per_device(
      run, "Launch/empty_kernel", "launches", {1, kBackToBackLaunches},
      [](benchmark::State& state, int dev) {
        try {
          const int launches = static_cast<int>(state.range(0));
          use_device(dev);
          cudaStream_t s = bench_stream();
          Timing timing;
          timing.launches = launches;
          timing.label = launches > 1 ? kIncludesGap : kIncludesTurnaround;
          empty_launches(s, launches);  // loaded before it is timed
          timed_gpu_loop(state, dev, s, [s, launches] { empty_launches(s, launches); }, timing);
          set_rates(state, 0, launches);
        } catch (const std::exception& e) {
          fail_gpu(state, e);
        }
      },
      [run](Registered* b, std::int64_t launches, int dev) {
        b->UseManualTime()->Unit(benchmark::kMicrosecond);
        bound_wall_time(run, b, 2e-6, static_cast<double>(launches) * kKernelEnqueue + kLaunchSyncOverhead,
                        static_cast<int>(launches));
      });
}

}  // namespace

// The variant table, cuBLAS, Thrust, the device copies, the seed's flow, the launch overhead.
std::string add_gpu_vector_add(const RunOptions& run, const Usable&) {
  for (const auto& v : vector_add::gpu_variants()) {
    const int id = v.id;
    register_vector_add_rows(
        run, v.name,
        [id](const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int) -> GpuAdd {
          return [=] { vector_add::vector_add(id, a, b, c, n, kBlock, s); };
        },
        kKernelEnqueue);
  }
  register_vector_add_rows(run, "cublas_geam", cublas_add, kLibraryEnqueue, geam_label);
  register_vector_add_rows(run, "thrust", thrust_add, kLibraryEnqueue,
                           [](std::size_t) { return "thrust::transform(par_nosync, plus)"; });
  register_gpu_copies(run);
  register_launch_rows(run);
  for (bool pinned : {false, true}) {
    register_per_device(
        run, pinned ? "VectorAddFlow/pinned" : "VectorAddFlow/pageable", "n", vector_sizes(),
        [pinned](benchmark::State& st, int dev) { BM_flow(st, dev, pinned); },
        [run](Registered* b, std::int64_t n, int dev) {
          b->UseManualTime()->Unit(benchmark::kMicrosecond);
          // 12 bytes per element cross PCIe.
          bound_wall_time(run, b, pcie_time_estimate(static_cast<double>(n) * vector_add::kBytesPerElement, dev),
                          kEnqueueCover + kLaunchSyncOverhead);
        });
  }
  return "";
}

// Every kernel variant is gated (cuda_v<N>: a new one of the table too).
CUDABENCH_FAMILY(vector_add_gpu, 20, Needs::Gpu, add_gpu_vector_add,
                 {.default_rows = "(VectorAdd|Copy)/(cuda_[^/]+|cublas_geam|thrust)/" CUDABENCH_DEFAULT_SIZES
                                  "|VectorAddFlow/[^/]+/" CUDABENCH_DEFAULT_SIZES,
                  .gate_gpu = "VectorAdd/(cuda_v[0-9]+|cublas_geam)/n:(10000000|134217728)/"});

}  // namespace cudabench::bench
