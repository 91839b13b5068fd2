// SGD with momentum (the seed's optimizer) as one call over every
// parameter: LibTorch's fused kernel, at::_fused_sgd_, which
// torch.optim.SGD(fused=True) calls, not torch::optim::SGD's loop of three
// ops a parameter (24 kernels a step for this model on a GPU, 24 ops'
// dispatch on a CPU). Same arithmetic: the first step's momentum buffer is
// the gradient, then buf = momentum x buf + grad and p -= lr x buf.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace cudabench::models {

class FusedSgd {
 public:
  FusedSgd(std::vector<torch::Tensor> params, double lr, double momentum);
  // Gradients to none (the next backward writes them fresh), or to zero in
  // place (what a data-parallel reducer that copies into them needs).
  void zero_grad(bool set_to_none);
  // One step over the parameters that have a gradient; a parameter's first
  // starts its momentum from its gradient, as torch::optim::SGD does.
  void step();

 private:
  std::vector<torch::Tensor> params_, momentum_buffers_;  // a buffer is made at its parameter's first step
  double lr_, momentum_;
};

}  // namespace cudabench::models
