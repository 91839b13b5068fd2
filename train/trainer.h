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

#include "data/idx_reader.h"
#include "models/mnist_cnn.h"
#include "sgd.h"

namespace cudabench::models {

class DistContext;
class DataParallel;

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
  bool dropout = true;         // off: every step is deterministic (N ranks then reproduce one)
};

// Images as float [N,1,28,28] normalized with (x/255 - mean)/std, labels int64.
struct Dataset {
  torch::Tensor images, labels;
  int64_t size() const { return images.size(0); }
};
Dataset to_dataset(const data::MnistSplit& split, torch::Device device, int64_t limit = -1);

struct EpochStats {
  int epoch = 0;
  double train_loss = 0;  // mean over the epoch's batches (of every rank)
  double seconds = 0;     // data-parallel: the slowest rank's
  int64_t images = 0;     // trained on, over all ranks (a sharded epoch pads to equal shards)
  int64_t steps = 0;      // optimizer steps of each rank
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

  // Data-parallel from now on (c10d, see distributed.h): every rank takes
  // rank 0's weights; gradients are all-reduced in buckets of at most
  // `bucket_bytes` during backward; each epoch trains this rank's shard of
  // one seeded permutation (strided, as DistributedSampler does, padded to
  // equal shards), so the global batch b holds the same images as batch b
  // of one process with the global batch size; evaluation is sharded and
  // summed. Dropout draws a stream per rank. Not with --cuda-graph.
  void enable_data_parallel(DistContext& ctx, int64_t bucket_bytes);
  DataParallel* data_parallel() { return dp_.get(); }
  // Called after every step with the step's number in the run (1, 2, ...).
  void set_after_step(std::function<void(int64_t)> f) { after_step_ = std::move(f); }

 private:
  void seed_generators(uint64_t seed) const;
  torch::Tensor eager_step(const torch::Tensor& x, const torch::Tensor& y);
  torch::Tensor graph_step(const torch::Tensor& x, const torch::Tensor& y);
  torch::Tensor prepare(const torch::Tensor& x) const;

  TrainConfig cfg_;
  MnistCnn model_{nullptr};  // made in the constructor, after seeding
  std::unique_ptr<FusedSgd> opt_;
  struct Graph;
  std::unique_ptr<Graph> graph_;
  DistContext* dist_ = nullptr;
  std::unique_ptr<DataParallel> dp_;
  std::function<void(int64_t)> after_step_;
  int64_t steps_ = 0;
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
