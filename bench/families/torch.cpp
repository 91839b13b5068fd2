// LibTorch benchmarks:
//   VectorAdd/torch_cpu, VectorAdd/torch_cuda: LibTorch's add in the same
//     table as the raw kernels, checked like them.
//   MnistTrain/<variant>/batch:B: one training step (forward, backward, SGD)
//     on real Fashion-MNIST batches cut on the device; items = images.
//     Variants: cpu, cuda (LibTorch's defaults), cuda_graph (the whole step
//     in a CUDA graph), cuda_bf16 (autocast), cuda_channels_last,
//     cuda_tf32_on, cuda_tf32_off. Each is checked to learn before timing.
//   MnistEval/<cpu|cuda>/batch:1000: inference throughput on the test set.
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "bench/bench_support.h"
#include "common/cli.h"
#include "data/idx_reader.h"
#include "bench/family.h"
#include "train/trainer.h"

#if defined(CUDABENCH_HAVE_CUDA) && defined(CUDABENCH_TORCH_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "bench/gpu_support.h"
#include "bench/gpu_rows.h"
#define CUDABENCH_TORCH_GPU 1
#endif

namespace cudabench::bench {
namespace {

using models::Dataset;
using models::TrainConfig;
using models::Trainer;

// ---- VectorAdd through LibTorch ----
void BM_torch_add_cpu(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const HostInputs& in = host_inputs(n);
  auto a = torch::from_blob(const_cast<float*>(in.a.data()), {static_cast<int64_t>(n)});
  auto b = torch::from_blob(const_cast<float*>(in.b.data()), {static_cast<int64_t>(n)});
  auto c = torch::from_blob(host_output(n).data(), {static_cast<int64_t>(n)});
  poison(c.data_ptr<float>(), n);
  torch::add_out(c, a, b);
  if (!check_vector_add(state, "torch::add_out (CPU)", in.a.data(), in.b.data(), c.data_ptr<float>(), n)) return;
  for (auto _ : state) {
    torch::add_out(c, a, b);
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  set_vector_add_counters(state, n);
}

// ---- the dataset, loaded once ----
struct Data {
  data::MnistSplit train, test;
  std::string dir;
};
// `bad_input`: the error is the dataset's (IdxError: missing, damaged),
// not the machine's (out of memory).
const Data* dataset(std::string* why, bool* bad_input = nullptr) {
  static std::unique_ptr<Data> d;
  static std::string error;
  static bool idx_error = false;
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      auto x = std::make_unique<Data>();
      x->dir = data::find_dataset_dir();
      x->train = data::load_mnist_split(x->dir, "train");
      x->test = data::load_mnist_split(x->dir, "t10k");
      d = std::move(x);
    } catch (const data::IdxError& e) {
      error = e.what();
      idx_error = true;
    } catch (const std::exception& e) {
      error = error_line(e);
    }
  }
  if (why) *why = error;
  if (bad_input) *bad_input = idx_error;
  return d.get();
}

const Dataset& device_dataset(bool train, torch::Device dev) {
  static std::map<std::pair<bool, std::string>, Dataset> cache;
  auto key = std::make_pair(train, dev.str());
  auto it = cache.find(key);
  if (it == cache.end()) {
    const Data* d = dataset(nullptr);
    it = cache.emplace(key, models::to_dataset(train ? d->train : d->test, dev)).first;
  }
  return it->second;
}

// The TF32 variants change LibTorch's global flags; put them back after each
// benchmark so the next one runs with what it asked for.
class Tf32Restore {
 public:
  Tf32Restore()
      : cublas_(at::globalContext().allowTF32CuBLAS()), cudnn_(at::globalContext().allowTF32CuDNN()) {}
  ~Tf32Restore() {
    at::globalContext().setAllowTF32CuBLAS(cublas_);
    at::globalContext().setAllowTF32CuDNN(cudnn_);
  }

 private:
  bool cublas_, cudnn_;
};

// Mean NLL of the model (eval mode) on a fixed probe batch.
double probe_loss(Trainer& t, const Dataset& ds) {
  torch::NoGradGuard ng;
  t.model()->eval();
  const auto x = ds.images.slice(0, 0, 512), y = ds.labels.slice(0, 0, 512);
  const double l = torch::nll_loss(t.model()->forward(x).to(torch::kFloat32), y).item<double>();
  t.model()->train();
  return l;
}

// The check before timing: 40 steps on real data must cut the probe loss by
// at least 10%; a variant that does not learn is a failed benchmark.
bool check_learns(benchmark::State& state, const std::string& what, Trainer& t, const Dataset& ds) {
  const double before = probe_loss(t, ds);
  const int64_t bs = t.config().batch_size;
  for (int64_t i = 0; i < 40; ++i) {
    const int64_t s = (i * bs) % (ds.size() - bs);
    t.step(ds.images.slice(0, s, s + bs), ds.labels.slice(0, s, s + bs));
  }
  const double after = probe_loss(t, ds);
  if (!(after < 0.9 * before)) {
    fail(state, what + " does not learn: probe loss " + std::to_string(before) + " -> " + std::to_string(after) +
                    " after 40 steps");
    return false;
  }
  return true;
}

// Times `step` once per iteration: for a GPU device, CUDA events on the
// device's current stream in the shared GPU loop (manual time, telemetry);
// the wall clock otherwise.
template <typename Step>
void timed_loop(benchmark::State& state, const torch::Device& dev, Step&& step) {
#ifdef CUDABENCH_TORCH_GPU
  if (dev.is_cuda()) {
    torch::cuda::synchronize(dev.index());
    // No cover: the host's share of a training step is part of its cost.
    Timing timing;
    timing.cover = Cover::None;
    timed_gpu_loop(state, dev.index(), c10::cuda::getCurrentCUDAStream(dev.index()).stream(), [&] { step(); }, timing);
    return;
  }
#else
  (void)dev;
#endif
  for (auto _ : state) benchmark::DoNotOptimize(step());
}

// A benchmark's trainer, kept across Google Benchmark's growth steps and
// repetitions so that it is built and checked once.
struct TrainRun {
  Trainer trainer;
  torch::Tensor perm;
  int64_t cursor = 0;
  explicit TrainRun(const TrainConfig& cfg) : trainer(cfg) {}
};

#ifdef CUDABENCH_TORCH_GPU
// Makes `dev` current while a benchmark runs (a CUDA graph is captured on,
// and the events recorded in, the current device's stream).
using DeviceGuard = c10::cuda::OptionalCUDAGuard;
std::optional<torch::Device> cuda_only(const torch::Device& d) {
  return d.is_cuda() ? std::optional<torch::Device>(d) : std::nullopt;
}
#endif

void BM_train(benchmark::State& state, TrainConfig cfg, std::string what) {
  Tf32Restore keep;
  try {
    cfg.batch_size = state.range(0);
#ifdef CUDABENCH_TORCH_GPU
    DeviceGuard guard(cuda_only(cfg.device));
#endif
    const Dataset& ds = device_dataset(true, cfg.device);
    static OneSlotCache<TrainRun> cache;
    const std::string key = what + " batch=" + std::to_string(cfg.batch_size) + " on " + cfg.device.str();
    TrainRun& run = cache.get(key, [&] { return std::make_unique<TrainRun>(cfg); });
    if (!check_once(key, [&] { return check_learns(state, what, run.trainer, ds); })) return;
    // TF32 is global: the trainer set it when it was made; set it again for
    // a later growth step, after another benchmark restored the default.
    if (cfg.tf32) models::set_tf32(*cfg.tf32);
    const int64_t bs = cfg.batch_size;
    if (!run.perm.defined())
      run.perm = torch::randperm(ds.size(), torch::TensorOptions().dtype(torch::kInt64)).to(cfg.device);
    auto next = [&] {
      if (run.cursor + bs > ds.size()) run.cursor = 0;
      auto idx = run.perm.slice(0, run.cursor, run.cursor + bs);
      run.cursor += bs;
      return run.trainer.step(ds.images.index_select(0, idx), ds.labels.index_select(0, idx));
    };
    for (int i = 0; i < 5; ++i) next();  // warm-up
    timed_loop(state, cfg.device, next);
    set_rates(state, 0, static_cast<double>(bs));
  } catch (const std::exception& e) {
#ifdef CUDABENCH_TORCH_GPU
    if (cfg.device.is_cuda()) return fail_gpu(state, e, what + ": ");
#endif
    fail_run(state, what + ": " + error_line(e));
  }
}

void BM_eval(benchmark::State& state, torch::Device dev) {
  try {
#ifdef CUDABENCH_TORCH_GPU
    DeviceGuard guard(cuda_only(dev));
#endif
    TrainConfig cfg;
    cfg.device = dev;
    static OneSlotCache<TrainRun> cache;
    const std::string key = "MnistEval on " + dev.str();
    Trainer& t = cache.get(key, [&] { return std::make_unique<TrainRun>(cfg); }).trainer;
    const Dataset& train = device_dataset(true, dev);
    const Dataset& test = device_dataset(false, dev);
    // Check: a briefly trained model beats chance (10%) on 2000 test images
    // (the whole test set took a second of each process of a default run).
    const bool good = check_once(key, [&] {
      for (int64_t i = 0; i < 100; ++i)
        t.step(train.images.slice(0, i * 64, i * 64 + 64), train.labels.slice(0, i * 64, i * 64 + 64));
      const int64_t k = std::min<int64_t>(2000, test.size());
      const auto acc = t.evaluate(Dataset{test.images.slice(0, 0, k), test.labels.slice(0, 0, k)}).accuracy;
      if (acc > 0.5) return true;
      fail(state, "evaluation after 100 steps gives accuracy " + std::to_string(acc) + ", no better than guessing");
      return false;
    });
    if (!good) return;
    const int64_t bs = state.range(0);
    torch::NoGradGuard ng;
    t.model()->eval();
    int64_t cursor = 0;
    auto next = [&] {
      if (cursor + bs > test.size()) cursor = 0;
      auto out = t.model()->forward(test.images.slice(0, cursor, cursor + bs)).argmax(1);
      cursor += bs;
      return out;
    };
    for (int i = 0; i < 3; ++i) next();
    timed_loop(state, dev, next);
    set_rates(state, 0, static_cast<double>(bs));
  } catch (const std::exception& e) {
#ifdef CUDABENCH_TORCH_GPU
    if (dev.is_cuda()) return fail_gpu(state, e, "MnistEval: ");
#endif
    fail_run(state, std::string("MnistEval: ") + error_line(e));
  }
}

#ifdef CUDABENCH_TORCH_GPU
// VectorAdd/torch_cuda's launch: torch::add_out on the benchmark stream. The
// tensors (from_blob queries each pointer's attributes) and the stream
// wrapper are made here, outside the timed region.
GpuAdd torch_add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int dev) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA, static_cast<c10::DeviceIndex>(dev));
  const int64_t m = static_cast<int64_t>(n);
  const auto ta = torch::from_blob(const_cast<float*>(a), {m}, opts);
  const auto tb = torch::from_blob(const_cast<float*>(b), {m}, opts);
  auto tc = torch::from_blob(c, {m}, opts);
  const auto stream = c10::cuda::getStreamFromExternal(s, static_cast<c10::DeviceIndex>(dev));
  return [=]() mutable {
    c10::cuda::CUDAStreamGuard g(stream);
    torch::add_out(tc, ta, tb);
  };
}
#endif

// VectorAdd/torch_cpu, and VectorAdd/torch_cuda where LibTorch sees the GPU.
void register_torch_add(const RunOptions& run, bool gpu) {
  auto* b = benchmark::RegisterBenchmark("VectorAdd/torch_cpu", BM_torch_add_cpu);
  with_iterations(run, b)->ArgName("n")->Unit(benchmark::kMicrosecond)->UseRealTime();
  for (auto n : vector_sizes()) b->Arg(n);
#ifdef CUDABENCH_TORCH_GPU
  if (gpu)
    register_vector_add_rows(run, "torch_cuda", torch_add, kTorchEnqueue,
                             [](std::size_t) { return "torch::add_out on the bench stream"; });
#else
  (void)run;
  (void)gpu;
#endif
}

// MnistTrain/<variant>/batch:B and MnistEval/<device>/batch:1000: the CPU
// ones once, the GPU ones per selected device.
void register_mnist(const RunOptions& run, bool gpu) {
  // GPU work is timed with CUDA events (manual time), CPU work by the clock.
  const std::vector<int64_t> batches{64, 128, 256, 512, 1024};
  auto* train_cpu = benchmark::RegisterBenchmark("MnistTrain/cpu", BM_train, TrainConfig{}, "MnistTrain/cpu");
  with_iterations(run, train_cpu)->ArgName("batch")->Unit(benchmark::kMillisecond)->UseRealTime();
  for (auto bs : batches) train_cpu->Arg(bs);
  with_iterations(run, benchmark::RegisterBenchmark("MnistEval/cpu", BM_eval, torch::Device(torch::kCPU)))
      ->ArgName("batch")->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
  if (!gpu) return;
  // Each GPU variant: LibTorch's defaults with one thing changed, on every
  // selected device. The timed region is the whole step, so the measured
  // time is about the wall time and the budget applies as it is.
  const std::vector<std::pair<std::string, std::function<void(TrainConfig&)>>> variants = {
      {"cuda", [](TrainConfig&) {}},
      {"cuda_graph", [](TrainConfig& c) { c.cuda_graph = true; }},
      {"cuda_bf16", [](TrainConfig& c) { c.bf16 = true; }},
      {"cuda_channels_last", [](TrainConfig& c) { c.channels_last = true; }},
      {"cuda_tf32_on", [](TrainConfig& c) { c.tf32 = true; }},
      {"cuda_tf32_off", [](TrainConfig& c) { c.tf32 = false; }},
  };
  auto gpu_settings = [run](Registered* b, int64_t, int) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    bound_wall_time(run, b, 1.0, 0.0);
  };
  auto on = [](int dev) { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(dev)); };
  for (const auto& [name, change] : variants) {
    TrainConfig cfg;
    change(cfg);
    const std::string what = "MnistTrain/" + name;
    register_per_device(
        run, what, "batch", batches,
        [cfg, what, on](benchmark::State& st, int dev) {
          TrainConfig c = cfg;
          c.device = on(dev);
          BM_train(st, c, what);
        },
        gpu_settings);
  }
  register_per_device(
      run, "MnistEval/cuda", "batch", {1000}, [on](benchmark::State& st, int dev) { BM_eval(st, on(dev)); },
      gpu_settings);
}

}  // namespace

// Returns "" or, when $CUDABENCH_DATA_DIR names a folder without the
// dataset, the one line that says so (bad input).
std::string add_torch(const RunOptions& run, const Usable& usable) {
  const bool gpu_usable = usable.gpu && usable.torch_gpu;
  const bool gpu = gpu_usable && torch::cuda::is_available();
  register_torch_add(run, gpu);
  if (gpu_usable && !gpu) add_note("cudabench: LibTorch GPU benchmarks not run: LibTorch sees no GPU");
  std::string why;
  bool bad_input = false;
  if (!dataset(&why, &bad_input)) {
    // A folder the user named that does not hold the dataset is bad input;
    // Debian's dataset simply not installed only leaves these out.
    if (const char* e = std::getenv("CUDABENCH_DATA_DIR"); e && *e && bad_input) return why;
    add_note("cudabench: Mnist benchmarks not run: " + why);
    return "";
  }
  register_mnist(run, gpu);
  return "";
}

CUDABENCH_FAMILY(torch, 40, Needs::Nothing, add_torch,
                 {.default_rows = "VectorAdd/torch_[^/]+/" CUDABENCH_DEFAULT_SIZES
                                  "|MnistTrain/(cpu|cuda)/batch:64/|MnistEval/(cpu|cuda)/",
                  .gate_cpu = "MnistTrain/cpu/batch:64/",
                  .gate_gpu = "MnistTrain/cuda(_graph)?/batch:64/"});

}  // namespace cudabench::bench
