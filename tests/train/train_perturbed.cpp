// train with a fault for the data-parallel tests: CUDABENCH_TEST_PERTURB=
// RANK:STEP makes that rank nudge a weight after that step, so that the
// replica check has a differing replica to catch. Otherwise it is train.
#include <cstdlib>
#include <iostream>
#include <regex>
#include <string>

#include "common/cli.h"
#include "process/ending.h"
#include "train/train_options.h"
#include "train/train_run.h"

int main(int argc, char** argv) {
  using namespace cudabench;
  process::arm_ending_handlers();  // as train's main: an output in progress is removed on a signal
  models::TrainOptions options;
  if (auto rc = models::parse_train_options(argc, argv, &options)) return *rc;
  models::TrainHooks hooks;
  if (const char* p = std::getenv("CUDABENCH_TEST_PERTURB"); p && *p) {
    static const std::regex re(R"(([0-9]{1,6}):([0-9]{1,12}))");
    std::smatch m;
    const std::string v = p;
    if (!std::regex_match(v, m, re)) {
      std::cerr << "train: CUDABENCH_TEST_PERTURB=" << v << ": expected RANK:STEP\n";
      return kExitBadInput;
    }
    const int rank = std::stoi(m[1]);
    const int64_t step = std::stoll(m[2]);
    hooks.after_step = [rank, step](models::Trainer& trainer, int r, int64_t s) {
      if (r != rank || s != step) return;
      torch::NoGradGuard ng;
      trainer.model()->parameters()[0].add_(1e-3);
    };
  }
  return models::run_train(options, hooks);
}
