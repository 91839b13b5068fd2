// train: trains MnistCnn on an MNIST-format dataset (Fashion-MNIST from
// Debian by default) on the CPU or a GPU, like the seed's script and
// better: per-epoch train loss, test loss, accuracy, epoch time and
// images/s, a progress line, and a JSON summary written whole or not at
// all. One rank of a data-parallel run when torchrun or srun launches it.
#include "common/cli.h"
#include "common/standard_output.h"
#include "process/ending.h"
#include "train/train_options.h"
#include "train/train_run.h"

int main(int argc, char** argv) {
  auto& out = cudabench::StandardOutput::install();  // a full disk or a closed stdout fails the run
  cudabench::process::arm_ending_handlers();          // an output file in progress is removed on a signal
  cudabench::models::TrainOptions options;
  const auto parsed = cudabench::models::parse_train_options(argc, argv, &options);
  out.keep_going_on_epipe(!options.json_out.empty());
  int rc = parsed ? *parsed : cudabench::models::run_train(options);
  if (const std::string why = out.finish(); !why.empty() && rc == cudabench::kExitOk) {
    std::cerr << "train: standard output: cannot write: " << why << "\n";
    rc = cudabench::kExitFailed;
  }
  return rc;
}
