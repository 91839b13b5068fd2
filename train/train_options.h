// train's command line, parsed once into a value (parse_train_options) that
// run_train() takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainer.h"

namespace cudabench::models {

struct TrainOptions {
  std::string device = "cpu";  // as given: cpu, cuda or cuda:N
  TrainConfig cfg;             // the hyper-parameters and variants (its device is set by run_train)
  std::string data_dir, json_out;
  int threads = 0;
  int64_t limit = -1, test_limit = -1;
  bool quiet = false, debug = false;
  double stall_seconds = 600;  // a step or evaluation that takes longer ends the run (0: no limit)
  // Data-parallel runs (launched by torchrun or srun).
  std::string backend = "auto";
  double dist_timeout = 120, bucket_mb = 25;
  int64_t lr_batch = 0;
  bool check_sync = false;
};

// nullopt to go on, else the exit code: 0 after --help, 2 for a misuse
// (said in one line).
std::optional<int> parse_train_options(int argc, char** argv, TrainOptions* o);

}  // namespace cudabench::models
