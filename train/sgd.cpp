#include "sgd.h"

#include <utility>

namespace cudabench::models {

FusedSgd::FusedSgd(std::vector<torch::Tensor> params, double lr, double momentum)
    : params_(std::move(params)), momentum_buffers_(params_.size()), lr_(lr), momentum_(momentum) {}

void FusedSgd::zero_grad(bool set_to_none) {
  for (auto& p : params_) {
    auto& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) g.reset();
    else g.zero_();
  }
}

void FusedSgd::step() {
  torch::NoGradGuard no_grad;
  const bool with_momentum = momentum_ != 0;
  // Two groups: parameters whose momentum has a history, and those at their
  // first step (the buffer becomes the gradient), each one fused call.
  std::vector<torch::Tensor> params[2], grads[2], buffers[2];
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i];
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    // The fused CPU kernel walks param, grad and buffer as one layout.
    if (g.strides() != p.strides()) g = torch::empty_like(p).copy_(g);
    const bool first = with_momentum && !momentum_buffers_[i].defined();
    if (first) momentum_buffers_[i] = torch::empty_like(p);  // filled by the first step
    params[first].push_back(p);
    grads[first].push_back(g);
    if (with_momentum) buffers[first].push_back(momentum_buffers_[i]);
  }
  for (int first : {0, 1})
    if (!params[first].empty())
      at::_fused_sgd_(params[first], grads[first], buffers[first], /*weight_decay=*/0.0, momentum_, lr_,
                      /*dampening=*/0.0, /*nesterov=*/false, /*maximize=*/false, /*is_first_step=*/first == 1);
}

}  // namespace cudabench::models
