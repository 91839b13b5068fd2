#include "mnist_cnn.h"

namespace cudabench::models {

MnistCnnImpl::MnistCnnImpl() {
  conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3)));
  conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3)));
  dropout1 = register_module("dropout1", torch::nn::Dropout2d(0.25));
  fc1 = register_module("fc1", torch::nn::Linear(kFc1In, 128));
  dropout2 = register_module("dropout2", torch::nn::Dropout(0.5));
  fc2 = register_module("fc2", torch::nn::Linear(128, kClasses));
}

torch::Tensor MnistCnnImpl::forward(torch::Tensor x) {
  x = torch::relu(conv1->forward(x));
  x = torch::relu(conv2->forward(x));
  x = torch::max_pool2d(x, 2);
  x = dropout1->forward(x);
  x = torch::flatten(x, 1);
  x = torch::relu(fc1->forward(x));
  x = dropout2->forward(x);
  x = fc2->forward(x);
  return torch::log_softmax(x, /*dim=*/1);
}

}  // namespace cudabench::models
