// The CNN and its trainer: shapes, determinism, a short real training run on
// Fashion-MNIST that only a learning network passes, and (on a GPU) the
// CUDA-graph step against the eager step.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "env/probe.h"
#include "data/idx_reader.h"
#include "train/trainer.h"

#ifdef CUDABENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cmath>

using namespace cudabench;
using models::TrainConfig;
using models::Trainer;

TEST(MnistCnn, ShapesAndLogProbabilities) {
  torch::manual_seed(0);
  models::MnistCnn m;
  EXPECT_EQ(m->fc1->options.in_features(), 32 * 12 * 12);
  EXPECT_EQ(m->fc2->options.out_features(), 10);
  m->eval();
  const auto out = m->forward(torch::randn({7, 1, 28, 28}));
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{7, 10}));
  // log_softmax: each row's probabilities sum to one.
  EXPECT_TRUE(torch::allclose(out.exp().sum(1), torch::ones({7}), 1e-5, 1e-5));
  int64_t params = 0;
  for (const auto& p : m->parameters()) params += p.numel();
  // conv1 160 + conv2 4640 + fc1 589952 + fc2 1290.
  EXPECT_EQ(params, 160 + 4640 + 589952 + 1290);
  // The seed's 32*5*5 fc1 could not take these inputs; ours rejects others.
  EXPECT_THROW(m->forward(torch::randn({1, 1, 20, 20})), c10::Error);
}

namespace {
const data::MnistSplit& train_split() {
  static const data::MnistSplit s = data::load_mnist_split(data::find_dataset_dir(), "train");
  return s;
}
const data::MnistSplit& test_split() {
  static const data::MnistSplit s = data::load_mnist_split(data::find_dataset_dir(), "t10k");
  return s;
}
}  // namespace

TEST(Trainer, SameSeedSameLosses) {
  const auto ds = models::to_dataset(train_split(), torch::kCPU, 640);
  TrainConfig cfg;
  // Two whole runs one after the other: weights, shuffle and dropout all
  // follow the seed.
  Trainer a(cfg);
  const auto sa = a.train_epoch(ds, 1);
  Trainer b(cfg);
  const auto sb = b.train_epoch(ds, 1);
  EXPECT_DOUBLE_EQ(sa.train_loss, sb.train_loss);
  EXPECT_GT(sa.images_per_second, 0);
  cfg.seed = 2;
  Trainer c(cfg);
  EXPECT_NE(c.train_epoch(ds, 1).train_loss, sa.train_loss);
}

TEST(Trainer, NormalizesWithSeedConstants) {
  const auto ds = models::to_dataset(train_split(), torch::kCPU, 100);
  EXPECT_EQ(ds.images.sizes(), (std::vector<int64_t>{100, 1, 28, 28}));
  EXPECT_EQ(ds.labels.dtype(), torch::kInt64);
  const float px0 = static_cast<float>(train_split().images.pixels[0]);
  EXPECT_NEAR(ds.images[0][0][0][0].item<float>(), (px0 / 255.f - 0.1307f) / 0.3081f, 1e-5);
}

TEST(Trainer, LearnsFashionMnistSlice) {
  // 1 epoch on 6000 real images: a learning network gets well above the
  // 10% of guessing on 2000 test images (about 65% seen); an untrained or
  // broken one does not.
  const auto train = models::to_dataset(train_split(), torch::kCPU, 6000);
  const auto test = models::to_dataset(test_split(), torch::kCPU, 2000);
  Trainer t(TrainConfig{});
  const double before = t.evaluate(test).accuracy;
  const auto st = t.train_epoch(train, 1);
  const auto ev = t.evaluate(test);
  EXPECT_LT(before, 0.3);
  EXPECT_GT(ev.accuracy, 0.55) << "train loss " << st.train_loss;
  EXPECT_LT(st.train_loss, 2.2);
}

TEST(Trainer, ChannelsLastComputesTheSameStep) {
  const auto ds = models::to_dataset(train_split(), torch::kCPU, 64);
  TrainConfig a, b;
  b.channels_last = true;
  Trainer ta(a), tb(b);
  ta.model()->eval();  // no dropout: the two steps see identical inputs
  tb.model()->eval();
  const double la = ta.step(ds.images, ds.labels).item<double>();
  const double lb = tb.step(ds.images, ds.labels).item<double>();
  EXPECT_NEAR(la, lb, 1e-5);
}

TEST(Trainer, GraphNeedsCuda) {
  TrainConfig cfg;
  cfg.cuda_graph = true;
  EXPECT_THROW(Trainer t(cfg), std::invalid_argument);
}

TEST(TrainerGpu, CudaGraphStepMatchesEagerStep) {
  const auto& r = env::collect();
  if (!r.status.usable) GTEST_SKIP() << "no usable GPU: " << r.status.reason;
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no GPU";
  const torch::Device dev(torch::kCUDA, 0);
  const auto ds = models::to_dataset(train_split(), dev, 64 * 8);
  TrainConfig eager, graph;
  eager.device = graph.device = dev;
  eager.tf32 = graph.tf32 = false;
  graph.cuda_graph = true;
  Trainer te(eager), tg(graph);
  te.model()->eval();  // dropout off so both see the same function
  tg.model()->eval();
  auto batch = [&](int i) { return std::make_pair(ds.images.slice(0, i * 64, i * 64 + 64), ds.labels.slice(0, i * 64, i * 64 + 64)); };
  // The graph trainer runs kGraphWarmup eager steps on the first batch before
  // capturing; give the eager trainer the same history.
  auto [x0, y0] = batch(0);
  for (int i = 0; i < Trainer::kGraphWarmup; ++i) te.step(x0, y0);
  double le = 0, lg = 0;
  for (int i = 0; i < 4; ++i) {
    auto [x, y] = batch(i);
    lg = tg.step(x, y).item<double>();  // i == 0: warm-up, capture, first replay
    le = te.step(x, y).item<double>();
    EXPECT_NEAR(le, lg, 1e-4 * std::max(1.0, std::abs(le))) << "step " << i;
  }
  const auto pe = te.model()->parameters(), pg = tg.model()->parameters();
  for (size_t i = 0; i < pe.size(); ++i) EXPECT_TRUE(torch::allclose(pe[i], pg[i], 1e-4, 1e-5)) << "param " << i;
}

TEST(Trainer, Tf32SettingIsApplied) {
  const bool cublas = at::globalContext().allowTF32CuBLAS();
  TrainConfig cfg;
  cfg.tf32 = !cublas;
  Trainer t(cfg);
  EXPECT_EQ(at::globalContext().allowTF32CuBLAS(), !cublas);
  models::set_tf32(cublas);
  EXPECT_EQ(at::globalContext().allowTF32CuBLAS(), cublas);
}

#ifdef CUDABENCH_TORCH_CUDA
namespace {
bool gpu_or_skip(std::string* why) {
  const auto& r = env::collect();
  if (!r.status.usable) *why = "no usable GPU: " + r.status.reason;
  else if (!torch::cuda::is_available()) *why = "LibTorch sees no GPU";
  return why->empty();
}
bool capturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  return st != cudaStreamCaptureStatusNone;
}
}  // namespace

TEST(TrainerGpu, AFailedCaptureLeavesTheStreamUsable) {
  std::string why;
  if (!gpu_or_skip(&why)) GTEST_SKIP() << why;
  c10::cuda::CUDAGuard device(0);
  const auto side = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard on_side(side);
  auto x = torch::zeros({1024}, torch::TensorOptions().device(torch::kCUDA, 0));
  // An exception in the captured code...
  {
    at::cuda::CUDAGraph g;
    EXPECT_THROW(models::capture_graph(g, [&] {
                   x.add_(1);
                   throw std::runtime_error("planted");
                 }),
                 std::runtime_error);
  }
  EXPECT_FALSE(capturing(side.stream()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // ...and a capture invalidated by a synchronising call (item()).
  {
    at::cuda::CUDAGraph g;
    EXPECT_ANY_THROW(models::capture_graph(g, [&] {
      x.add_(1);
      (void)x.sum().item<float>();
    }));
  }
  EXPECT_FALSE(capturing(side.stream()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // The stream works, and nothing captured ever ran.
  x.add_(1);
  torch::cuda::synchronize(0);
  EXPECT_EQ(x.sum().item<float>(), 1024.0f);
  // LibTorch's allocator left capture mode: a capture that allocates works
  // and replays, and emptyCache (which asserts no capture is under way) runs.
  at::cuda::CUDAGraph ok;
  torch::Tensor y;
  models::capture_graph(ok, [&] {
    x.add_(1);
    y = x * 2;
  });
  ok.replay();
  ok.replay();
  torch::cuda::synchronize(0);
  EXPECT_EQ(x.sum().item<float>(), 3 * 1024.0f);
  EXPECT_EQ(y.sum().item<float>(), 6 * 1024.0f);
  EXPECT_NO_THROW(c10::cuda::CUDACachingAllocator::emptyCache());
}

// The captured loss is kept detached: after graph replays, an epoch's last,
// short batch (an eager step on the main stream) meets no AccumulateGrad
// node of the capture's stream. The H200 runs warned of exactly that.
TEST(TrainerGpu, AnEagerStepAfterTheGraphWarnsOfNoStreamMismatch) {
  std::string why;
  if (!gpu_or_skip(&why)) GTEST_SKIP() << why;
  struct Collect : c10::WarningHandler {
    std::vector<std::string> seen;
    void process(const c10::Warning& w) override { seen.push_back(w.msg()); }
  } collect;
  c10::WarningUtils::WarningHandlerGuard handler(&collect);
  c10::WarningUtils::WarnAlways always;  // a TORCH_WARN_ONCE too
  const torch::Device dev(torch::kCUDA, 0);
  const auto ds = models::to_dataset(train_split(), dev, 64 * 4);
  TrainConfig cfg;
  cfg.device = dev;
  cfg.cuda_graph = true;
  Trainer t(cfg);
  for (int i = 0; i < 3; ++i) t.step(ds.images.slice(0, i * 64, i * 64 + 64), ds.labels.slice(0, i * 64, i * 64 + 64));
  t.step(ds.images.slice(0, 192, 224), ds.labels.slice(0, 192, 224)).item<double>();  // 32 images: eager
  for (const auto& m : collect.seen) EXPECT_EQ(m.find("AccumulateGrad"), std::string::npos) << m;
}

TEST(TrainerGpu, TrainsWithAGraphOnTheLastDeviceWhateverIsCurrent) {
  std::string why;
  if (!gpu_or_skip(&why)) GTEST_SKIP() << why;
  const auto last = static_cast<c10::DeviceIndex>(torch::cuda::device_count() - 1);
  c10::cuda::CUDAGuard current(0);  // the caller's current device is 0
  const torch::Device dev(torch::kCUDA, last);
  const auto ds = models::to_dataset(train_split(), dev, 64 * 6);
  TrainConfig cfg;
  cfg.device = dev;
  cfg.cuda_graph = true;
  Trainer t(cfg);
  for (int i = 0; i < 6; ++i) {
    const auto loss = t.step(ds.images.slice(0, i * 64, i * 64 + 64), ds.labels.slice(0, i * 64, i * 64 + 64));
    EXPECT_EQ(loss.device(), dev);
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << "step " << i;
  }
  for (const auto& p : t.model()->parameters()) EXPECT_EQ(p.device(), dev);
  // "cuda" without an index is pinned to the device current when made.
  TrainConfig plain;
  plain.device = torch::Device(torch::kCUDA);
  EXPECT_EQ(Trainer(plain).config().device, torch::Device(torch::kCUDA, 0));
}
#endif
