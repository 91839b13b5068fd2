// FusedSgd (train/sgd.h) against torch::optim::SGD, the optimizer it
// replaces, step by step: momentum and none, a parameter whose first
// gradient comes late, one without a gradient, and a gradient whose layout
// is not its parameter's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "train/sgd.h"

using cudabench::models::FusedSgd;

namespace {

// Two copies of the same parameters, one per optimizer.
std::vector<torch::Tensor> params(int64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({3, 4}).requires_grad_(), torch::randn({5}).requires_grad_(),
          torch::randn({2, 3, 4, 4}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_()};
}

// Gradients for step k: parameter 1's only from step 2 on; the third's in
// the default layout, not its parameter's channels-last one.
void set_grads(std::vector<torch::Tensor>& ps, int k) {
  torch::manual_seed(100 + k);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    auto g = torch::randn(ps[i].sizes());
    ps[i].mutable_grad() = (i == 1 && k < 2) ? torch::Tensor() : g;
  }
}

void expect_same_steps(double momentum) {
  auto a = params(7), b = params(7);
  torch::optim::SGD reference(a, torch::optim::SGDOptions(0.01).momentum(momentum));
  FusedSgd fused(b, 0.01, momentum);
  for (int k = 0; k < 5; ++k) {
    set_grads(a, k);
    set_grads(b, k);
    reference.step();
    fused.step();
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-7)) << "momentum " << momentum << ", step " << k << ", param "
                                                             << i << ": " << (a[i] - b[i]).abs().max().item<float>();
  }
}

}  // namespace

TEST(FusedSgd, StepsAsTorchOptimSgdWithMomentum) { expect_same_steps(0.5); }

TEST(FusedSgd, StepsAsTorchOptimSgdWithoutMomentum) { expect_same_steps(0.0); }

TEST(FusedSgd, ZeroGradToNoneOrToZero) {
  auto ps = params(3);
  FusedSgd opt(ps, 0.01, 0.5);
  set_grads(ps, 3);
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(ps[0].grad().defined() && ps[0].grad().abs().sum().item<float>() == 0);
  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(ps[0].grad().defined());
  const auto before = ps[0].clone();
  opt.step();  // no gradient: nothing moves
  EXPECT_TRUE(torch::equal(before, ps[0]));
}
