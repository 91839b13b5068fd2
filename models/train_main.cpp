// train: trains MnistCnn on an MNIST-format dataset (Fashion-MNIST from
// Debian by default) on the CPU or a GPU, like the seed script and better:
// per-epoch train loss, test loss, accuracy, epoch time and images/s, a
// progress line, and a JSON summary written whole or not at all.
// Launched by torchrun or srun, each process is one rank of a data-parallel
// run over c10d (Gloo on CPUs, NCCL on GPUs); rank 0 prints and writes.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <c10/util/Logging.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <regex>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "atomic_file.h"
#include "cli_support.h"
#include "distributed.h"
#include "launch.h"
#include "env/probe.h"
#include "env/report.h"
#include "idx_reader.h"
#include "trainer.h"

#ifdef CUDABENCH_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace {

// A data-parallel rank's last word when a background thread throws (NCCL's
// watchdog does, on a timeout or a peer's error, by default): the lost rank
// in one line, exit 3, instead of "terminate called" and a backtrace.
cudabench::models::DistContext* g_dist = nullptr;
std::string g_who = "train: ";

[[noreturn]] void on_terminate() {
  std::string msg = "an error in a background thread";
  if (const auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      msg = cudabench::models::error_line(x);
    } catch (...) {
    }
  }
  std::string lost;
  if (g_dist) {
    try {
      lost = g_dist->diagnose();
    } catch (...) {
    }
  }
  std::cerr << g_who << "stopped: " << (lost.empty() ? "" : "lost " + lost + ": ") << msg << std::endl;
  std::_Exit(cudabench::kExitFailed);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cudabench;
  CLI::App app{"train: the MNIST-style CNN on CPU or GPU (LibTorch)"};
  std::string device = "cpu", data_dir, json_out, tf32;
  models::TrainConfig cfg;
  int threads = 0;
  int64_t limit = -1, test_limit = -1;
  bool quiet = false, debug = false;
  app.add_option("--device", device, "cpu or cuda (cuda:N for another GPU)")->capture_default_str();
  app.add_option("--epochs", cfg.epochs, "epochs")->capture_default_str()->check(int_range(1, 10000));
  app.add_option("--batch-size", cfg.batch_size, "batch size")->capture_default_str()->check(int_range(1, 1 << 20));
  app.add_option("--lr", cfg.lr, "SGD learning rate")->capture_default_str()->check(finite_range(0, 1e6, true));
  app.add_option("--momentum", cfg.momentum, "SGD momentum")->capture_default_str()->check(finite_range(0, 1));
  app.add_option("--seed", cfg.seed, "seed for weights and shuffling")->capture_default_str();
  app.add_option("--threads", threads, "CPU threads for LibTorch (0 = its default)")->check(int_range(0, 1 << 16));
  app.add_option("--data-dir", data_dir,
                 "folder of MNIST IDX files (default: $CUDABENCH_DATA_DIR, then " +
                     std::string(data::kDebianFashionMnist) + ")");
  app.add_option("--json", json_out, "write a JSON summary to FILE");
  app.add_option("--limit", limit, "train on the first N images only")->check(int_range(1, int64_t{1} << 40));
  app.add_option("--test-limit", test_limit, "evaluate on the first N test images only")
      ->check(int_range(1, int64_t{1} << 40));
  app.add_flag("--bf16", cfg.bf16, "bf16 autocast");
  app.add_flag("--channels-last", cfg.channels_last, "channels-last memory format");
  app.add_flag("--cuda-graph", cfg.cuda_graph, "capture the whole training step in a CUDA graph");
  app.add_option("--tf32", tf32, "TF32 for cuBLAS/cuDNN: on or off")->check(CLI::IsMember({"on", "off"}));
  std::string backend = "auto";
  double dist_timeout = 120, bucket_mb = 25;
  int64_t lr_batch = 0;
  bool check_sync = false;
  app.add_option("--backend", backend, "data-parallel backend: auto (NCCL on GPUs, Gloo on CPUs), gloo or nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--lr-batch", lr_batch,
                 "the global batch that --lr is for; the rate used is lr x global batch / this (the linear "
                 "scaling rule). Default: --batch-size, so N ranks train at N x lr")
      ->check(int_range(1, int64_t{1} << 40));
  app.add_option("--dist-timeout", dist_timeout,
                 "data-parallel: seconds to wait for a rank (rendezvous, each collective) before naming it lost")
      ->capture_default_str()
      ->check(finite_range(0, 86400, true));
  app.add_option("--bucket-mb", bucket_mb, "data-parallel: gradient bucket size in MiB (DDP's bucket_cap_mb)")
      ->capture_default_str()
      ->check(finite_range(0, 1024, true));
  bool no_dropout = false;
  app.add_flag("--no-dropout", no_dropout,
               "train without dropout: every step is then deterministic, so N ranks with a global batch B "
               "reproduce one rank with batch B up to rounding");
  app.add_flag("--check-sync", check_sync,
               "data-parallel: after every step, check that all ranks hold identical parameters (a hash)");
  app.add_flag("--quiet", quiet, "no progress line");
  app.add_flag("--debug", debug, "on an internal error, print LibTorch's whole message (with its backtrace)");
  if (auto rc = parse_command_line(app, argc, argv, "train")) return *rc;
  if (!tf32.empty()) cfg.tf32 = tf32 == "on";
  cfg.dropout = !no_dropout;

  // Only the devices this program can train on reach LibTorch, built here:
  // its own parser throws on "cuda:01" and wraps indices past 127.
  static const std::regex device_re(R"(cpu|cuda(?::(0|[1-9][0-9]?|1[01][0-9]|12[0-7]))?)");
  std::smatch dm;
  if (!std::regex_match(device, dm, device_re)) {
    std::cerr << "train: --device " << device << ": expected cpu, cuda or cuda:N (N in 0..127)\n";
    return kExitBadInput;
  }
  cfg.device = device == "cpu"   ? torch::Device(torch::kCPU)
               : dm[1].matched ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(dm[1])))
                               : torch::Device(torch::kCUDA);
  // One rank of a data-parallel run? (torchrun's or srun's variables)
  std::optional<models::Launch> launch;
  try {
    launch = models::launch_from_env([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
  } catch (const models::LaunchError& e) {
    std::cerr << "train: " << e.what() << "\n";
    return kExitBadInput;
  }
  const bool dp = launch.has_value();
  const int rank = dp ? launch->rank : 0, world = dp ? launch->world : 1;
  const bool lead = rank == 0;  // prints the run and writes the JSON
  const std::string who = dp ? "train: rank " + std::to_string(rank) + ": " : "train: ";
  bool device_from_local_rank = false;
  std::optional<std::pair<int, int64_t>> perturb;  // a test's fault: RANK:STEP
  if (dp) {
    const std::string as = " (launched by " + launch->launcher + " as rank " + std::to_string(rank) + " of " +
                           std::to_string(world) + ")";
    if (!models::have_data_parallel()) {
      std::cerr << who << "this build has no data-parallel training" << as
                << ": configure found no Gloo headers (install libgloo-dev, then rebuild)\n";
      return kExitBadInput;
    }
    if (backend == "auto") backend = cfg.device.is_cuda() ? "nccl" : "gloo";
    if (backend == "nccl" && !cfg.device.is_cuda()) {
      std::cerr << who << "--backend nccl needs --device cuda (NCCL runs on GPUs; Gloo on CPUs)\n";
      return kExitBadInput;
    }
    if (backend == "nccl" && !models::have_nccl()) {
      std::cerr << who << "--backend nccl: this build has no NCCL (its LibTorch has no CUDA, or nccl.h was not found)\n";
      return kExitBadInput;
    }
    if (cfg.cuda_graph) {
      std::cerr << who << "--cuda-graph: not with data-parallel training" << as
                << " (c10d's reducer runs hooks in backward)\n";
      return kExitBadInput;
    }
    g_who = who;
    std::set_terminate(on_terminate);
    if (backend == "nccl") {
      // No flight-recorder dump or C++ stack on a timeout: the error is one
      // line (the user's own settings win).
      ::setenv("TORCH_NCCL_DUMP_ON_TIMEOUT", "0", 0);
      ::setenv("TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN", "0", 0);
    }
    // c10d logs each socket error with a C++ backtrace; the error that
    // matters reaches the user as one line. TORCH_CPP_LOG_LEVEL or --debug
    // bring them back.
    if (!debug && !std::getenv("TORCH_CPP_LOG_LEVEL")) FLAGS_caffe2_log_level = 3;  // FATAL only
    if (cfg.device.is_cuda() && !cfg.device.has_index()) {
      cfg.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::min(launch->local_rank, 127)));
      device_from_local_rank = true;
    }
    if (const char* p = std::getenv("CUDABENCH_TEST_PERTURB"); p && *p) {
      std::smatch m;
      const std::string v = p;
      static const std::regex re(R"(([0-9]{1,6}):([0-9]{1,12}))");
      if (!std::regex_match(v, m, re)) {
        std::cerr << who << "CUDABENCH_TEST_PERTURB=" << v << ": expected RANK:STEP\n";
        return kExitBadInput;
      }
      perturb = std::make_pair(std::stoi(m[1]), std::stoll(m[2]));
    }
  }
  // The linear scaling rule (Goyal et al. 2017): the rate grows with the
  // global batch, from --lr at a global batch of --lr-batch.
  const double base_lr = cfg.lr;
  const int64_t global_batch = cfg.batch_size * world;
  const int64_t lr_ref = lr_batch > 0 ? lr_batch : cfg.batch_size;
  cfg.lr = base_lr * static_cast<double>(global_batch) / static_cast<double>(lr_ref);
  if (!lead) json_out.clear();  // rank 0 writes it, whole
  // Checked now, not after the whole run.
  if (std::string why; !json_out.empty() && !data::check_writable(json_out, &why)) {
    std::cerr << "train: --json " << json_out << ": cannot write: " << why << "\n";
    return kExitBadInput;
  }
  if (cfg.device.is_cuda()) {
    const auto& rep = env::collect();
    if (!rep.status.usable) {
      std::cerr << "train: --device " << device << " unavailable: " << rep.status.reason << "\n";
      return kExitBadInput;
    }
    if (!torch::cuda::is_available()) {
      std::cerr << "train: --device " << device << " unavailable: LibTorch sees no GPU\n";
      return kExitBadInput;
    }
    const auto count = static_cast<int>(torch::cuda::device_count());
    // srun --gpus-per-task=1 (or a gres with ConstrainDevices) leaves each
    // task its own GPU as device 0.
    if (device_from_local_rank && launch->launcher == "srun" && count == 1)
      cfg.device = torch::Device(torch::kCUDA, 0);
    if (cfg.device.has_index() && cfg.device.index() >= count) {
      if (device_from_local_rank)
        std::cerr << who << "LOCAL_RANK " << launch->local_rank << " has no GPU of its own (" << count
                  << " usable: 0.." << count - 1 << "); launch at most " << count << " ranks per node\n";
      else
        std::cerr << "train: --device " << device << ": there is no GPU " << static_cast<int>(cfg.device.index())
                  << " (" << count << " usable: 0.." << count - 1 << ")\n";
      return kExitBadInput;
    }
  }
  if (threads > 0) torch::set_num_threads(threads);

  data::MnistSplit train_split, test_split;
  std::string dir;
  try {
    dir = data::find_dataset_dir(data_dir);
    train_split = data::load_mnist_split(dir, "train");
    test_split = data::load_mnist_split(dir, "t10k");
  } catch (const data::IdxError& e) {
    std::cerr << "train: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "train: out of memory reading the dataset in " << (dir.empty() ? data_dir : dir) << "\n";
    return kExitFailed;
  }

  // Declared before the try: its catch asks the group who was lost.
  std::unique_ptr<models::DistContext> dist;
  try {
    if (dp) {
#ifdef CUDABENCH_TORCH_CUDA
      if (cfg.device.is_cuda()) c10::cuda::set_device(cfg.device.index());
#endif
      dist = std::make_unique<models::DistContext>(
          *launch, backend, cfg.device,
          std::chrono::milliseconds(static_cast<int64_t>(std::ceil(dist_timeout * 1000))));
      g_dist = dist.get();
    }
    models::Trainer trainer(cfg);
    if (dist) trainer.enable_data_parallel(*dist, static_cast<int64_t>(bucket_mb * 1024 * 1024));
    int64_t checked_steps = 0;
    if (dist) {
      trainer.set_after_step([&](int64_t step) {
        if (perturb && perturb->first == rank && perturb->second == step) {
          torch::NoGradGuard ng;
          trainer.model()->parameters()[0].add_(1e-3);
        }
        if (check_sync) {
          dist->check_replicas(trainer.model()->parameters(), "step " + std::to_string(step));
          checked_steps = step;
        }
      });
    }
    const auto train = models::to_dataset(train_split, cfg.device, limit);
    const auto test = models::to_dataset(test_split, cfg.device, test_limit);
    if (lead) {
      std::cout << "train: " << train.size() << " training and " << test.size() << " test images from " << dir
                << " on " << cfg.device << " (" << torch::get_num_threads() << " CPU threads), batch "
                << cfg.batch_size << ", lr " << cfg.lr << ", momentum " << cfg.momentum << ", " << cfg.epochs
                << " epochs" << (cfg.cuda_graph ? ", CUDA graph" : "") << (cfg.bf16 ? ", bf16" : "")
                << (cfg.channels_last ? ", channels-last" : "") << (cfg.dropout ? "" : ", no dropout") << "\n";
      if (dist)
        std::cout << "train: data-parallel over " << world << " ranks (" << launch->launcher << ", " << backend
                  << ", rendezvous " << dist->launch().master_addr << ":" << launch->master_port
                  << "): global batch " << global_batch << " = " << world << " x " << cfg.batch_size << "; lr "
                  << cfg.lr << " = " << base_lr << " x " << global_batch << " / " << lr_ref
                  << " (linear scaling rule); buckets of " << short_number(bucket_mb) << " MiB\n";
    }
    const bool tty = ::isatty(STDERR_FILENO);
    nlohmann::json epochs = nlohmann::json::array();
    double total_seconds = 0;
    models::EvalStats last{};
    for (int e = 1; e <= cfg.epochs; ++e) {
      auto progress = [&](int64_t b, int64_t nb, double loss) {
        if (quiet || !lead) return;
        std::cerr << (tty ? "\r" : "") << "  epoch " << e << " [" << b * cfg.batch_size * world << "/"
                  << train.size() << "] loss " << std::fixed << std::setprecision(4) << loss
                  << (tty ? "   " : "\n") << std::flush;
        (void)nb;
      };
      const auto st = trainer.train_epoch(train, e, progress, tty ? 50 : 300);
      if (tty && !quiet && lead) std::cerr << "\r" << std::string(60, ' ') << "\r";
      last = trainer.evaluate(test);
      total_seconds += st.seconds;
      if (lead)
        std::cout << "epoch " << e << "/" << cfg.epochs << "  train loss " << std::fixed << std::setprecision(4)
                  << st.train_loss << "  test loss " << last.loss << "  test acc " << std::setprecision(2)
                  << 100.0 * last.accuracy << "%  " << std::setprecision(2) << st.seconds << " s  "
                  << std::setprecision(0) << st.images_per_second << " img/s" << std::endl;
      if (!std::isfinite(st.train_loss) || !std::isfinite(last.loss)) {
        // NaN results are a wrong result, not numbers to save (JSON would hold nulls).
        // Every rank sees the same (summed) losses and stops here.
        if (lead)
          std::cerr << "train: epoch " << e << ": the loss is not a finite number (training diverged; try a lower "
                    << "--lr than " << short_number(cfg.lr) << "); nothing written\n";
        return kExitWrongResult;
      }
      epochs.push_back({{"epoch", e},
                        {"train_loss", st.train_loss},
                        {"test_loss", last.loss},
                        {"test_accuracy", last.accuracy},
                        {"seconds", st.seconds},
                        {"images", st.images},
                        {"steps", st.steps},
                        {"images_per_second", st.images_per_second}});
    }
    nlohmann::json dist_json;
    if (dist) {
      const auto params = trainer.model()->parameters();
      const auto hash = dist->check_replicas(params, "the last step");
      const auto buckets = trainer.data_parallel()->bucket_bytes();
      const auto ar = dist->time_allreduce(buckets, 20);
      char hex[32];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
      std::cout << "train: rank " << rank << " of " << world << ": parameters fnv1a64 " << hex << std::endl;
      if (lead)
        std::cout << "train: all-reduce of the gradients (" << ar.buckets << " buckets, " << std::setprecision(2)
                  << ar.bytes / 1e6 << " MB): " << std::setprecision(3) << ar.seconds * 1e3 << " ms per step, algbw "
                  << ar.algbw / 1e9 << " GB/s, busbw " << ar.busbw / 1e9 << " GB/s (algbw x 2(n-1)/n)"
                  << std::endl;
      dist_json = {{"launcher", launch->launcher},
                   {"backend", backend},
                   {"world_size", world},
                   {"master", dist->launch().master_addr + ":" + std::to_string(launch->master_port)},
                   {"global_batch", global_batch},
                   {"lr_rule", "linear: lr = base_lr x global_batch / lr_batch"},
                   {"base_lr", base_lr},
                   {"lr_batch", lr_ref},
                   {"bucket_mb", bucket_mb},
                   {"bucket_bytes", buckets},
                   {"timeout_seconds", dist_timeout},
                   {"parameter_hash", hex},
                   {"replicas_identical", true},
                   {"replicas_checked_after_steps", check_sync ? checked_steps : 0},
                   {"allreduce",
                    {{"bytes", ar.bytes},
                     {"buckets", ar.buckets},
                     {"seconds_per_step", ar.seconds},
                     {"algbw_bytes_per_second", ar.algbw},
                     {"busbw_bytes_per_second", ar.busbw}}}};
      dist->finish();
    }
    if (!json_out.empty()) {
      nlohmann::json j = {{"device", cfg.device.str()},
                          {"dataset", dir},
                          {"train_images", train.size()},
                          {"test_images", test.size()},
                          {"epochs", cfg.epochs},
                          {"batch_size", cfg.batch_size},
                          {"lr", cfg.lr},
                          {"momentum", cfg.momentum},
                          {"seed", cfg.seed},
                          {"threads", torch::get_num_threads()},
                          {"bf16", cfg.bf16},
                          {"channels_last", cfg.channels_last},
                          {"cuda_graph", cfg.cuda_graph},
                          {"dropout", cfg.dropout},
                          {"world_size", world},
                          {"train_seconds", total_seconds},
                          {"final_test_accuracy", last.accuracy},
                          {"final_test_loss", last.loss},
                          {"per_epoch", epochs},
                          {"environment", env::to_json(env::collect())}};
      if (dist) j["distributed"] = dist_json;
      if (std::string why; !data::write_file_atomically(json_out, j.dump(2) + "\n", &why)) {
        std::cerr << "train: --json " << json_out << ": cannot write: " << why << "\n";
        return kExitFailed;
      }
    }
  } catch (const models::ReplicasDiffer& e) {
    std::cerr << who << e.what() << "\n";
    return kExitWrongResult;
  } catch (const std::exception& e) {
    const std::string msg = debug ? std::string(e.what()) : models::error_line(e);
    if (!dp) {
      // LibTorch's message carries a C++ backtrace: one line, unless --debug.
      std::cerr << "train: stopped: " << msg << "\n";
      return kExitFailed;
    }
    // A failed collective leaves the group's threads and sockets in no
    // state to tear down: say who was lost, then leave at once.
    g_dist = nullptr;  // diagnosed here, once
    const std::string lost = dist ? dist->diagnose() : "";
    std::cerr << who << "stopped: " << (lost.empty() ? "" : "lost " + lost + ": ") << msg << std::endl;
    std::cout << std::flush;
    std::_Exit(kExitFailed);
  }
  return kExitOk;
}
