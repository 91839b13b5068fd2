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
  std::vector<torch::Tensor> params, grads, buffers;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    if (!g.defined()) continue;
    params.push_back(params_[i]);
    grads.push_back(g);
    if (!with_momentum) continue;
    if (!momentum_buffers_[i].defined()) momentum_buffers_[i] = torch::empty_like(g);  // filled by the first step
    buffers.push_back(momentum_buffers_[i]);
  }
  if (params.empty()) return;
  at::_fused_sgd_(params, grads, buffers, /*weight_decay=*/0.0, momentum_, lr_, /*dampening=*/0.0,
                  /*nesterov=*/false, /*maximize=*/false, /*is_first_step=*/with_momentum && !started_);
  started_ = true;
}

}  // namespace cudabench::models
