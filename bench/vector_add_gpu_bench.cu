// VectorAdd/cuda_v1..v4, VectorAdd/cublas_geam, VectorAdd/thrust, and the
// seed's whole flow VectorAddFlow/<pageable|pinned> (copy a and b in, add
// with the seed's <<<512,512>>> launch made correct, copy c out).
#include <cublas_v2.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>

#include <memory>
#include <stdexcept>

#include "bench_support.h"
#include "cuda_check.h"
#include "gpu_support.h"
#include "registry.h"
#include "vector_add.cuh"

namespace cudabench::bench {
namespace {

constexpr unsigned kBlock = 256;

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t t{};
    if (cublasCreate(&t) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return t;
  }();
  return h;
}

// C = alpha * A + beta * B with A, B, C as n x 1 column-major matrices.
void cublas_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s) {
  if (n > static_cast<std::size_t>(INT32_MAX)) throw std::invalid_argument("cublasSgeam takes int sizes");
  const float one = 1.0f;
  const int m = static_cast<int>(n);
  cublasSetStream(cublas(), s);
  const cublasStatus_t st = cublasSgeam(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, m, 1, &one, a, m,
                                        &one, b, m, c, m);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cublasSgeam failed: ") + cublasGetStatusString(st));
}

void thrust_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s) {
  thrust::transform(thrust::cuda::par_nosync.on(s), a, a + n, b, c, thrust::plus<float>());
  CUDA_CHECK(cudaGetLastError());
}

void BM_flow(benchmark::State& state, bool pinned) {
  try {
    const auto n = static_cast<std::size_t>(state.range(0));
    const HostInputs& h = host_inputs(n);
    const std::size_t bytes = n * sizeof(float);
    // Host buffers of the chosen kind holding the inputs; c poisoned.
    std::unique_ptr<float, void (*)(float*)> ha(nullptr, [](float*) {}), hb(nullptr, [](float*) {}),
        hc(nullptr, [](float*) {});
    auto alloc = [&](std::unique_ptr<float, void (*)(float*)>& u) {
      float* p = nullptr;
      if (pinned) {
        CUDA_CHECK(cudaMallocHost(&p, bytes));
        u = {p, [](float* q) { cudaFreeHost(q); }};
      } else {
        u = {new float[n], [](float* q) { delete[] q; }};
      }
    };
    alloc(ha);
    alloc(hb);
    alloc(hc);
    std::copy(h.a.begin(), h.a.end(), ha.get());
    std::copy(h.b.begin(), h.b.end(), hb.get());
    DeviceBuffer<float> da(n), db(n), dc(n);
    cudaStream_t s = bench_stream();
    auto flow = [&] {
      CUDA_CHECK(cudaMemcpyAsync(da.get(), ha.get(), bytes, cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(db.get(), hb.get(), bytes, cudaMemcpyHostToDevice, s));
      vector_add::vector_add2(da.get(), db.get(), dc.get(), n, vector_add::kSeedBlock, s);
      CUDA_CHECK(cudaMemcpyAsync(hc.get(), dc.get(), bytes, cudaMemcpyDeviceToHost, s));
    };
    poison(hc.get(), n);
    CUDA_CHECK(cudaMemsetAsync(dc.get(), 0xFF, bytes, s));
    flow();
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (!check_vector_add(state, "seed flow", h.a.data(), h.b.data(), hc.get(), n)) return;
    flow();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(s));
    GpuTimer t;
    for (auto _ : state) {
      t.start(s);
      flow();
      state.SetIterationTime(t.stop(s));
    }
    // 12 bytes per element cross the bus: a and b in, c out.
    set_vector_add_counters(state, n);
  } catch (const std::exception& e) {
    fail(state, e.what());
  }
}

}  // namespace

void register_gpu_vector_add() {
  auto reg = [](const std::string& name, GpuAdd add) {
    auto* b = benchmark::RegisterBenchmark(
        ("VectorAdd/" + name).c_str(),
        [name, add](benchmark::State& st) { run_gpu_vector_add(st, name, add); });
    b->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (auto n : vector_sizes()) b->Arg(n);
  };
  for (const auto& v : vector_add::gpu_variants()) {
    const int id = v.id;
    reg(v.name, [id](const float* a, const float* b, float* c, std::size_t n, cudaStream_t s) {
      vector_add::vector_add(id, a, b, c, n, kBlock, s);
    });
  }
  reg("cublas_geam", cublas_add);
  reg("thrust", thrust_add);
  for (bool pinned : {false, true}) {
    auto* b = benchmark::RegisterBenchmark(pinned ? "VectorAddFlow/pinned" : "VectorAddFlow/pageable",
                                           BM_flow, pinned);
    b->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (auto n : vector_sizes()) b->Arg(n);
  }
}

}  // namespace cudabench::bench
