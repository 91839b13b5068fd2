// The MNIST-style CNN of the seed script, with its two bugs fixed:
//   conv 1->16 3x3, ReLU, conv 16->32 3x3, ReLU, max-pool 2, dropout2d 0.25,
//   flatten, fc 32*12*12 -> 128, ReLU, dropout 0.5, fc 128 -> 10, log_softmax.
// The seed declared fc1 as 32*5*5, which cannot take 28x28 inputs (28 -> 26
// -> 24 -> pool -> 12, so 32*12*12 = 4608 features), and fed log_softmax
// output to CrossEntropyLoss (a softmax twice); here the loss is NLL on the
// log-probabilities.
#pragma once

#include <torch/torch.h>

namespace cudabench::models {

constexpr int64_t kImageSide = 28;
constexpr int64_t kClasses = 10;
constexpr int64_t kFc1In = 32 * 12 * 12;

struct MnistCnnImpl : torch::nn::Module {
  MnistCnnImpl();
  torch::Tensor forward(torch::Tensor x);  // [N,1,28,28] -> [N,10] log-probabilities

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Dropout2d dropout1{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout dropout2{nullptr};
};
TORCH_MODULE(MnistCnn);

}  // namespace cudabench::models
