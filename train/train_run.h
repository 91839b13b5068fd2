// What `train` does with its options: decide the device and the launch
// once, load the data, train and evaluate epoch by epoch, print, and write
// the JSON summary. main() (train_main.cpp) is parse + run_train.
#pragma once

#include <cstdint>
#include <functional>

#include "train_options.h"
#include "trainer.h"

namespace cudabench::models {

// Seams for test programs (tests/train/train_perturbed.cpp), never set by train.
struct TrainHooks {
  // Data-parallel runs: called after every step, before the replica check.
  std::function<void(Trainer& trainer, int rank, int64_t step)> after_step;
};

// The exit code: 0 done, 1 a wrong result (diverged, replicas differ),
// 2 bad input, 3 anything else that stopped the run.
int run_train(TrainOptions o, const TrainHooks& hooks = {});

}  // namespace cudabench::models
