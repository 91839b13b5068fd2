#include "train_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <limits>

#include "common/cli.h"
#include "common/settings.h"
#include "data/idx_reader.h"
#include "env/probe.h"

namespace cudabench::models {
namespace {

void add_training_flags(CLI::App& app, TrainOptions* o, std::string* tf32) {
  TrainConfig& cfg = o->cfg;
  app.add_option("--device", o->device, "cpu or cuda (cuda:N for another GPU)")->capture_default_str();
  app.add_option("--epochs", cfg.epochs, "epochs")->capture_default_str()->check(int_range(1, 10000));
  app.add_option("--batch-size", cfg.batch_size, "batch size")->capture_default_str()->check(int_range(1, 1 << 20));
  app.add_option("--lr", cfg.lr, "SGD learning rate")->capture_default_str()->check(finite_range(0, 1e6, true));
  app.add_option("--momentum", cfg.momentum, "SGD momentum")->capture_default_str()->check(finite_range(0, 1));
  app.add_option("--seed", cfg.seed, "seed for weights and shuffling")
      ->capture_default_str()
      ->check(int_range(0, std::numeric_limits<int64_t>::max()));
  app.add_option("--threads", o->threads, "CPU threads for LibTorch (0 = its default)")->check(int_range(0, 1 << 16));
  app.add_option("--data-dir", o->data_dir,
                 "folder of MNIST IDX files (default: $CUDABENCH_DATA_DIR, then " +
                     std::string(data::kDebianFashionMnist) + ")");
  app.add_option("--json", o->json_out, "write a JSON summary to FILE");
  app.add_option("--stall-seconds", o->stall_seconds,
                 "end the run (exit 3) when training or evaluation makes no progress for this long, as when a "
                 "stuck GPU never answers; 0: no limit")
      ->capture_default_str()
      ->check(finite_range(0, 1e7));
  app.add_option("--limit", o->limit, "train on the first N images only")->check(int_range(1, int64_t{1} << 40));
  app.add_option("--test-limit", o->test_limit, "evaluate on the first N test images only")
      ->check(int_range(1, int64_t{1} << 40));
  app.add_flag("--bf16", cfg.bf16, "bf16 autocast");
  app.add_flag("--channels-last", cfg.channels_last, "channels-last memory format");
  app.add_flag("--cuda-graph", cfg.cuda_graph, "capture the whole training step in a CUDA graph");
  app.add_option("--tf32", *tf32, "TF32 for cuBLAS/cuDNN: on or off")->check(CLI::IsMember({"on", "off"}));
}

void add_data_parallel_flags(CLI::App& app, TrainOptions* o) {
  app.add_option("--backend", o->backend, "data-parallel backend: auto (NCCL on GPUs, Gloo on CPUs), gloo or nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--lr-batch", o->lr_batch,
                 "the global batch that --lr is for; the rate used is lr x global batch / this (the linear "
                 "scaling rule). Default: --batch-size, so N ranks train at N x lr")
      ->check(int_range(1, int64_t{1} << 40));
  app.add_option("--dist-timeout", o->dist_timeout,
                 "data-parallel: seconds to wait for a rank (rendezvous, each collective) before naming it lost")
      ->capture_default_str()
      ->check(finite_range(0, 86400, true));
  app.add_option("--bucket-mb", o->bucket_mb, "data-parallel: gradient bucket size in MiB (DDP's bucket_cap_mb)")
      ->capture_default_str()
      ->check(finite_range(0, 1024, true));
  app.add_flag("--check-sync", o->check_sync,
               "data-parallel: after every step, check that all ranks hold identical parameters (a hash)");
}

}  // namespace

std::optional<int> parse_train_options(int argc, char** argv, TrainOptions* o) {
  CLI::App app{"train: the MNIST-style CNN on CPU or GPU (LibTorch)"};
  std::string tf32;
  bool no_dropout = false;
  add_training_flags(app, o, &tf32);
  add_data_parallel_flags(app, o);
  app.add_flag("--no-dropout", no_dropout,
               "train without dropout: every step is then deterministic, so N ranks with a global batch B "
               "reproduce one rank with batch B up to rounding");
  app.add_flag("--quiet", o->quiet, "no progress line");
  app.add_flag("--debug", o->debug, "on an internal error, print LibTorch's whole message (with its backtrace)");
  if (auto rc = parse_command_line(app, argc, argv, "train")) return rc;
  if (const int rc = check_settings("train")) return rc;
  if (!tf32.empty()) o->cfg.tf32 = tf32 == "on";
  o->cfg.dropout = !no_dropout;
  // More threads than a few per CPU only thrash (65536 took 4 GB and never finished).
  if (o->threads > max_threads()) {
    std::cerr << "train: --threads " << o->threads << ": " << threads_bound() << "\n";
    return kExitBadInput;
  }
  if (const std::string bad = omp_threads_problem(); !bad.empty()) {
    std::cerr << "train: " << bad << "\n";
    return kExitBadInput;
  }
  if (const std::string bad = env::probe_root_problem(); !bad.empty()) {
    std::cerr << "train: " << bad << "\n";
    return kExitBadInput;
  }
  return std::nullopt;
}

}  // namespace cudabench::models
