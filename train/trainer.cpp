#include "trainer.h"

#include "distributed.h"
#include "torch_versions.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>
#include <stdexcept>

#ifdef CUDABENCH_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#include <torch/cuda.h>

namespace cudabench::models {
namespace {

void sync(const torch::Device& d) {
#ifdef CUDABENCH_TORCH_CUDA
  if (d.is_cuda()) torch::cuda::synchronize(d.index() < 0 ? 0 : d.index());
#else
  (void)d;
#endif
}

// bf16 autocast for the forward pass, restored afterwards.
class Autocast {
 public:
  Autocast(bool on, torch::DeviceType type) : on_(on), type_(type) {
    if (!on_) return;
    prev_ = at::autocast::is_autocast_enabled(type_);
    prev_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, at::kBFloat16);
  }
  ~Autocast() {
    if (!on_) return;
    at::autocast::set_autocast_enabled(type_, prev_);
    at::autocast::set_autocast_dtype(type_, prev_dtype_);
    at::autocast::clear_cache();
  }

 private:
  bool on_, prev_ = false;
  torch::DeviceType type_;
  at::ScalarType prev_dtype_ = at::kFloat;
};

}  // namespace

#ifdef CUDABENCH_TORCH_CUDA
void capture_graph(at::cuda::CUDAGraph& graph, const std::function<void()>& body) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // Our own pool id, so that a failed capture can hand it back.
  const auto pool = at::cuda::graph_pool_handle();
  graph.capture_begin(pool);
  try {
    body();
  } catch (...) {
    // capture_end ends the capture, stops routing allocations to the pool
    // and takes charge of it; it throws on an invalidated capture at its
    // first step, before any of that.
    try {
      graph.capture_end();
    } catch (...) {
    }
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream.stream(), &g);
      if (g) cudaGraphDestroy(g);
    }
    // pool() answers only once capture_end got that far; then the graph's
    // reset() releases the pool. Otherwise do what capture_end and reset()
    // would have: LibTorch's allocators must not stay in capture mode.
    bool owned = false;
    try {
      (void)graph.pool();
      owned = true;
    } catch (...) {
    }
    if (!owned) {
      const auto dev = stream.device_index();
      std::vector<std::function<void()>> steps{
          [&] { c10::cuda::CUDACachingAllocator::endAllocateToPool(dev, pool); },
          [&] { c10::cuda::CUDACachingAllocator::releasePool(dev, pool); }};
#if CUDABENCH_TORCH_HOST_POOLS
      auto* host = at::getHostAllocator(at::kCUDA);
      steps.insert(steps.begin() + 1, [&] { host->end_allocate_to_pool(pool); });
      steps.push_back([&] { host->release_pool(pool); });
#endif
      for (const auto& step : steps) {
        try {
          step();  // a step already done by capture_end throws: nothing to undo
        } catch (...) {
        }
      }
    }
    (void)cudaGetLastError();
    throw;
  }
  graph.capture_end();
}
#endif

void set_tf32(bool on) {
  at::globalContext().setAllowTF32CuBLAS(on);
  at::globalContext().setAllowTF32CuDNN(on);
}

Dataset to_dataset(const data::MnistSplit& split, torch::Device device, int64_t limit) {
  const auto& im = split.images;
  if (im.rows != kImageSide || im.cols != kImageSide)
    throw std::invalid_argument("images are " + std::to_string(im.rows) + "x" + std::to_string(im.cols) +
                                ", the model takes 28x28");
  const int64_t n = limit >= 0 ? std::min<int64_t>(limit, im.count) : im.count;
  auto pixels = torch::from_blob(const_cast<uint8_t*>(im.pixels.data()), {n, 1, im.rows, im.cols}, torch::kUInt8);
  auto labels = torch::from_blob(const_cast<uint8_t*>(split.labels.labels.data()), {n}, torch::kUInt8);
  Dataset d;
  d.images = pixels.to(device).to(torch::kFloat32).div_(255.0).sub_(kMean).div_(kStd);
  d.labels = labels.to(device).to(torch::kInt64);
  return d;
}

struct Trainer::Graph {
#ifdef CUDABENCH_TORCH_CUDA
  at::cuda::CUDAGraph graph;
#endif
  torch::Tensor x, y, loss;
};

// torch::manual_seed, without asking the driver on a CPU run: it seeds
// every CUDA generator too, and counting the GPUs calls cuInit, which a
// stuck GPU never returns from.
void Trainer::seed_generators(uint64_t seed) const {
  auto cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_current_seed(seed);
  }
  if (cfg_.device.is_cuda()) torch::cuda::manual_seed_all(seed);
}

Trainer::Trainer(const TrainConfig& cfg) : cfg_(cfg) {
  if (cfg_.device.is_cuda()) {
#ifndef CUDABENCH_TORCH_CUDA
    throw std::runtime_error("this LibTorch has no CUDA");
#endif
    // "cuda" is the device current now (0 in a fresh process): pin it.
    if (!cfg_.device.has_index())
      cfg_.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(c10::cuda::current_device()));
  }
  if ((cfg_.cuda_graph) && !cfg_.device.is_cuda())
    throw std::invalid_argument("--cuda-graph needs --device cuda");
  seed_generators(cfg_.seed);
  model_ = MnistCnn();  // initial weights follow the seed
  if (!cfg_.dropout) {
    model_->dropout1->options.p(0.0);
    model_->dropout2->options.p(0.0);
  }
  if (cfg_.tf32) set_tf32(*cfg_.tf32);
  model_->to(cfg_.device);
  if (cfg_.channels_last)
    for (auto& p : model_->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  opt_ = std::make_unique<FusedSgd>(model_->parameters(), cfg_.lr, cfg_.momentum);
}

Trainer::~Trainer() = default;

void Trainer::enable_data_parallel(DistContext& ctx, int64_t bucket_bytes) {
  if (cfg_.cuda_graph) throw std::invalid_argument("data-parallel training cannot replay a CUDA graph");
  dist_ = &ctx;
  dp_ = std::make_unique<DataParallel>(ctx, model_->parameters(), bucket_bytes);
  // Rank 0 keeps the seed's stream (one rank trains as a plain run does).
  if (ctx.rank() > 0) seed_generators(cfg_.seed + 1000003ull * static_cast<uint64_t>(ctx.rank()));
}

torch::Tensor Trainer::prepare(const torch::Tensor& x) const {
  return cfg_.channels_last ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
}

torch::Tensor Trainer::eager_step(const torch::Tensor& x, const torch::Tensor& y) {
  // Gradients to none, so backward writes them fresh instead of adding to
  // zeros filled for it; with data-parallel they must start from zero: the
  // Reducer copies each one into its bucket as autograd finishes it.
  opt_->zero_grad(/*set_to_none=*/!dp_);
  if (dp_) dp_->before_forward();
  torch::Tensor loss;
  {
    Autocast ac(cfg_.bf16, cfg_.device.type());
    loss = torch::nll_loss(model_->forward(prepare(x)).to(torch::kFloat32), y);
  }
  if (dp_) dp_->before_backward();
  loss.backward();
  opt_->step();
  return loss.detach();
}

torch::Tensor Trainer::graph_step(const torch::Tensor& x, const torch::Tensor& y) {
#ifdef CUDABENCH_TORCH_CUDA
  if (!graph_) {
    // Built aside and kept only once captured: after any failure the next
    // step starts again from warm-up.
    auto g = std::make_unique<Graph>();
    g->x = prepare(x).clone();
    g->y = y.clone();
    // Warm up on a side stream (the LibTorch CUDA-graphs pattern), so that
    // lazy initialisation (cuDNN plans, momentum buffers) is not captured.
    auto main = c10::cuda::getCurrentCUDAStream();
    auto side = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent ready;
    ready.record(main);
    ready.block(side);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < kGraphWarmup; ++i) eager_step(g->x, g->y);
      // Gradients set to none: the captured backward then allocates them
      // from the graph's pool and writes them fresh on every replay.
      opt_->zero_grad(/*set_to_none=*/true);
      capture_graph(g->graph, [&] {
        torch::Tensor loss;
        {
          Autocast ac(cfg_.bf16, cfg_.device.type());
          loss = torch::nll_loss(model_->forward(g->x).to(torch::kFloat32), g->y);
        }
        loss.backward();
        opt_->step();
        // Kept detached: the captured autograd graph (its AccumulateGrad
        // nodes, made on the capture's side stream) dies here, so an eager
        // step on the main stream later (an epoch's last, short batch)
        // builds its own instead of meeting them.
        g->loss = loss.detach();
      });
    }
    at::cuda::CUDAEvent captured;
    captured.record(side);
    captured.block(main);
    graph_ = std::move(g);
  }
  graph_->x.copy_(prepare(x));
  graph_->y.copy_(y);
  graph_->graph.replay();
  return graph_->loss;
#else
  (void)x;
  (void)y;
  throw std::runtime_error("CUDA graphs need a CUDA LibTorch");
#endif
}

torch::Tensor Trainer::step(const torch::Tensor& x, const torch::Tensor& y) {
#ifdef CUDABENCH_TORCH_CUDA
  // On cuda:N the step's streams (the capture's, the current one) must be
  // device N's, whichever device the caller left current.
  c10::cuda::OptionalCUDAGuard guard(cfg_.device.is_cuda() ? std::optional<torch::Device>(cfg_.device)
                                                          : std::nullopt);
#endif
  const bool full = x.size(0) == cfg_.batch_size;
  if (cfg_.cuda_graph && full) return graph_step(x, y);
  return eager_step(x, y);
}

EpochStats Trainer::train_epoch(const Dataset& train, int epoch,
                                const std::function<void(int64_t, int64_t, double)>& progress,
                                int64_t progress_every) {
  model_->train();
  // A seeded shuffle per epoch, drawn on the CPU so every device (and every
  // rank) sees the same order, then moved to the device where the batches
  // are cut.
  auto gen = at::detail::createCPUGenerator(cfg_.seed * 1000003ull + static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(train.size(), gen, torch::TensorOptions().dtype(torch::kInt64));
  const int world = dist_ ? dist_->world() : 1;
  if (world > 1) {
    // This rank's shard: every world-th image from its rank on, the order
    // padded from its start so that every rank takes as many steps.
    const int64_t total = (train.size() + world - 1) / world * world;
    perm = perm.repeat({(total + train.size() - 1) / train.size()}).slice(0, 0, total);
    perm = perm.slice(0, dist_->rank(), total, world).contiguous();
  }
  perm = perm.to(cfg_.device);
  const int64_t n = perm.size(0);
  const int64_t batches = (n + cfg_.batch_size - 1) / cfg_.batch_size;
  sync(cfg_.device);
  const auto t0 = std::chrono::steady_clock::now();
  torch::Tensor total = torch::zeros({}, torch::TensorOptions().device(cfg_.device));
  for (int64_t b = 0; b < batches; ++b) {
    const auto idx = perm.slice(0, b * cfg_.batch_size, std::min(n, (b + 1) * cfg_.batch_size));
    const auto loss = step(train.images.index_select(0, idx), train.labels.index_select(0, idx));
    total.add_(loss);
    ++steps_;
    if (after_step_) after_step_(steps_);
    if (progress && (b + 1) % progress_every == 0) progress(b + 1, batches, loss.item<double>());
  }
  sync(cfg_.device);
  EpochStats s;
  s.epoch = epoch;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.steps = batches;
  s.images = n * world;
  if (dist_) {
    dist_->all_reduce_sum(total);
    const auto secs = dist_->all_gather(static_cast<int64_t>(s.seconds * 1e9));
    s.seconds = static_cast<double>(*std::max_element(secs.begin(), secs.end())) / 1e9;
  }
  s.train_loss = total.item<double>() / static_cast<double>(batches * world);
  s.images_per_second = static_cast<double>(s.images) / s.seconds;
  return s;
}

EvalStats Trainer::evaluate(const Dataset& test, int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model_->eval();
  sync(cfg_.device);
  const auto t0 = std::chrono::steady_clock::now();
  torch::Tensor loss = torch::zeros({}, torch::TensorOptions().device(cfg_.device).dtype(torch::kFloat64));
  torch::Tensor correct = torch::zeros({}, torch::TensorOptions().device(cfg_.device).dtype(torch::kInt64));
  const int64_t n = test.size();
  // Data-parallel: each rank evaluates its contiguous share; the sums are
  // then added over the ranks.
  const int world = dist_ ? dist_->world() : 1, rank = dist_ ? dist_->rank() : 0;
  const int64_t begin = n * rank / world, end = n * (rank + 1) / world;
  for (int64_t s = begin; s < end; s += batch_size) {
    const auto x = test.images.slice(0, s, std::min(end, s + batch_size));
    const auto y = test.labels.slice(0, s, std::min(end, s + batch_size));
    torch::Tensor out;
    {
      Autocast ac(cfg_.bf16, cfg_.device.type());
      out = model_->forward(prepare(x)).to(torch::kFloat32);
    }
    loss.add_(torch::nll_loss(out, y, {}, at::Reduction::Sum).to(torch::kFloat64));
    correct.add_(out.argmax(1).eq(y).sum());
  }
  if (dist_) {
    dist_->all_reduce_sum(loss);
    dist_->all_reduce_sum(correct);
  }
  sync(cfg_.device);
  model_->train();
  EvalStats e;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  e.loss = loss.item<double>() / static_cast<double>(n);
  e.accuracy = static_cast<double>(correct.item<int64_t>()) / static_cast<double>(n);
  return e;
}

}  // namespace cudabench::models
