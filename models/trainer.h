// Training and evaluation of MnistCnn on a dataset held whole in tensors on
// the training device (batches are cut there, so the loop measures training,
// not a data pipeline), with the variants a GPU engineer tries: the whole
// step in a CUDA graph, bf16 autocast, channels-last, TF32 on or off.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#ifdef CUDABENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#endif

#include "idx_reader.h"
#include "mnist_cnn.h"

namespace cudabench::models {

// The seed's hyper-parameters.
constexpr double kLearningRate = 0.01;
constexpr double kMomentum = 0.5;
constexpr int64_t kBatchSize = 64;
constexpr int kEpochs = 10;
constexpr double kMean = 0.1307;
constexpr double kStd = 0.3081;

struct TrainConfig {
  torch::Device device{torch::kCPU};
  int epochs = kEpochs;
  int64_t batch_size = kBatchSize;
  double lr = kLearningRate;
  double momentum = kMomentum;
  uint64_t seed = 1;
  bool bf16 = false;           // autocast to bfloat16 (CUDA only)
  bool channels_last = false;  // NHWC memory format
  bool cuda_graph = false;     // capture one whole step and replay it (CUDA only)
  std::optional<bool> tf32;    // set cuBLAS/cuDNN TF32 on or off; unset = LibTorch's default
};

// Images as float [N,1,28,28] normalized with (x/255 - mean)/std, labels int64.
struct Dataset {
  torch::Tensor images, labels;
  int64_t size() const { return images.size(0); }
};
Dataset to_dataset(const data::MnistSplit& split, torch::Device device, int64_t limit = -1);

// An exception's message for a one-line error: LibTorch's (c10::Error)
// without the C++ backtrace its what() carries, and only the first line.
std::string error_line(const std::exception& e);

struct EpochStats {
  int epoch = 0;
  double train_loss = 0;  // mean over the epoch's batches
  double seconds = 0;
  double images_per_second = 0;
};
struct EvalStats {
  double loss = 0;      // mean NLL per image
  double accuracy = 0;  // fraction correct
  double seconds = 0;
};

class Trainer {
 public:
  // Eager steps run on a side stream before the step is captured.
  static constexpr int kGraphWarmup = 3;
  explicit Trainer(const TrainConfig& cfg);
  ~Trainer();
  MnistCnn& model() { return model_; }
  const TrainConfig& config() const { return cfg_; }

  // One SGD step on a batch already on the device; returns the loss tensor
  // (not synchronized: call .item() only when you need the number).
  torch::Tensor step(const torch::Tensor& x, const torch::Tensor& y);
  // One epoch over `train` in a seeded random order; `progress` (if set) is
  // called every `progress_every` batches with (batch index, batches, loss).
  EpochStats train_epoch(const Dataset& train, int epoch,
                         const std::function<void(int64_t, int64_t, double)>& progress = {},
                         int64_t progress_every = 100);
  EvalStats evaluate(const Dataset& test, int64_t batch_size = 1000);

 private:
  torch::Tensor eager_step(const torch::Tensor& x, const torch::Tensor& y);
  torch::Tensor graph_step(const torch::Tensor& x, const torch::Tensor& y);
  torch::Tensor prepare(const torch::Tensor& x) const;

  TrainConfig cfg_;
  MnistCnn model_{nullptr};  // made in the constructor, after seeding
  std::unique_ptr<torch::optim::SGD> opt_;
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

// Apply the TF32 setting to LibTorch's global context.
void set_tf32(bool on);

#ifdef CUDABENCH_TORCH_CUDA
// Captures what `body` launches on the current stream into `graph`. If
// anything throws between capture_begin and capture_end, the capture is
// ended on every path (the stream leaves capture mode, the runtime's last
// error is cleared) before the exception propagates: the stream stays
// usable, and `graph` must be discarded.
void capture_graph(at::cuda::CUDAGraph& graph, const std::function<void()>& body);
#endif

}  // namespace cudabench::models
