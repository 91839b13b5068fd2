// train's run, as steps: plan (the launch, the backend, the device: each
// decided once), load the data, then train with every epoch printed, and
// the JSON summary written whole or not at all. Launched by torchrun or
// srun, each process is one rank of a data-parallel run over c10d (Gloo on
// CPUs, NCCL on GPUs); rank 0 prints and writes.
#include "train_run.h"

#include <sys/resource.h>
#include <unistd.h>

#include <c10/util/Logging.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "common/atomic_file.h"
#include "process/stall_watchdog.h"
#include "common/cli.h"
#include "data/idx_reader.h"
#include "distributed.h"
#include "doctor/doctor.h"
#include "env/report.h"
#include "launch.h"

#ifdef CUDABENCH_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace cudabench::models {
namespace {

// A 64-bit hash as 16 hex digits.
std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// A data-parallel rank's last word when a background thread throws (NCCL's
// watchdog does, on a timeout or a peer's error, by default): the lost rank
// in one line, exit 3, instead of "terminate called" and a backtrace.
DistContext* g_dist = nullptr;
std::string g_who = "train: ";

[[noreturn]] void on_terminate() {
  std::string msg = "an error in a background thread";
  if (const auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      msg = error_line(x);
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
  std::_Exit(kExitFailed);
}

// What is decided before anything is loaded, each thing once.
struct Plan {
  std::optional<Launch> launch;  // a rank of a data-parallel run
  int rank = 0, world = 1;
  bool lead = true;              // rank 0: prints the run and writes the JSON
  std::string who = "train: ";   // how this process names itself in errors
  std::string backend;           // data-parallel: gloo or nccl
  double base_lr = 0;            // --lr, before the linear scaling rule
  int64_t global_batch = 0, lr_ref = 0;
};

// --device as this program can train on it, built here: LibTorch's own
// parser throws on "cuda:01" and wraps indices past 127.
int parse_device(const std::string& device, torch::Device* out) {
  static const std::regex device_re(R"(cpu|cuda(?::(0|[1-9][0-9]?|1[01][0-9]|12[0-7]))?)");
  std::smatch dm;
  if (!std::regex_match(device, dm, device_re)) {
    std::cerr << "train: --device " << device << ": expected cpu, cuda or cuda:N (N in 0..127)\n";
    return kExitBadInput;
  }
  *out = device == "cpu"   ? torch::Device(torch::kCPU)
         : dm[1].matched ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(dm[1])))
                         : torch::Device(torch::kCUDA);
  return kExitOk;
}

// A rank of a data-parallel run: what this build and these flags allow, and
// the backend; also the process-wide settings a rank needs.
// Gloo and the store hold sockets to every peer besides LibTorch's own
// files: under a small `ulimit -n` Gloo fails with "Cannot resolve
// 127.0.0.1 to a (local) address". The soft limit is raised where the hard
// one allows; else the limit is named.
int enough_open_files(const Plan& p) {
  const std::string bad = open_files_problem(256 + 16 * static_cast<rlim_t>(p.world),
                                             "data-parallel training over " + std::to_string(p.world) + " ranks");
  if (!bad.empty()) std::cerr << p.who << bad << "\n";
  return bad.empty() ? kExitOk : kExitBadInput;
}

int plan_data_parallel(const TrainOptions& o, Plan* p) {
  const std::string as = " (launched by " + p->launch->launcher + " as rank " + std::to_string(p->rank) + " of " +
                         std::to_string(p->world) + ")";
  if (!have_data_parallel()) {
    std::cerr << p->who << "this build has no data-parallel training" << as
              << ": configure found no Gloo headers (install libgloo-dev, then rebuild)\n";
    return kExitBadInput;
  }
  const bool cuda = o.cfg.device.is_cuda();
  p->backend = o.backend == "auto" ? (cuda ? "nccl" : "gloo") : o.backend;
  if (p->backend == "nccl" && !cuda) {
    std::cerr << p->who << "--backend nccl needs --device cuda (NCCL runs on GPUs; Gloo on CPUs)\n";
    return kExitBadInput;
  }
  if (p->backend == "nccl" && !have_nccl()) {
    std::cerr << p->who << "--backend nccl: this build has no NCCL (its LibTorch has no CUDA, or nccl.h was not found)\n";
    return kExitBadInput;
  }
  if (o.cfg.cuda_graph) {
    std::cerr << p->who << "--cuda-graph: not with data-parallel training" << as
              << " (c10d's reducer runs hooks in backward)\n";
    return kExitBadInput;
  }
  if (const int rc = enough_open_files(*p)) return rc;
  g_who = p->who;
  std::set_terminate(on_terminate);
  if (p->backend == "nccl") {
    // No flight-recorder dump or C++ stack on a timeout: the error is one
    // line (the user's own settings win).
    ::setenv("TORCH_NCCL_DUMP_ON_TIMEOUT", "0", 0);
    ::setenv("TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN", "0", 0);
  }
  // c10d logs each socket error with a C++ backtrace; the error that
  // matters reaches the user as one line. TORCH_CPP_LOG_LEVEL or --debug
  // bring them back.
  if (!o.debug && !std::getenv("TORCH_CPP_LOG_LEVEL")) FLAGS_caffe2_log_level = 3;  // FATAL only
  return kExitOk;
}

// The GPU to train on, decided here once: the one --device names, else a
// rank's LOCAL_RANK (srun with one GPU per task: device 0), checked against
// what the driver and LibTorch see.
int choose_gpu(const TrainOptions& o, const Plan& p, torch::Device* device) {
  const auto& rep = doctor::examine();
  if (!rep.torch_status.usable) {  // LibTorch's CUDA against the driver, not the kernels'
    std::cerr << "train: --device " << o.device << " unavailable: " << rep.torch_status.reason << "\n";
    return kExitBadInput;
  }
  // A CUDA graph and a data-parallel run's GPU timing call this build's own
  // CUDA runtime (events, capture), which may be another major than LibTorch's.
  if ((o.cfg.cuda_graph || p.launch) && !rep.status.usable) {
    std::cerr << "train: --device " << o.device << (o.cfg.cuda_graph ? " --cuda-graph" : " data-parallel")
              << " unavailable: " << rep.status.reason << " (plain --device " << o.device << " runs: docs/stacks.md)\n";
    return kExitBadInput;
  }
  if (!torch::cuda::is_available()) {
    std::cerr << "train: --device " << o.device << " unavailable: LibTorch sees no GPU\n";
    return kExitBadInput;
  }
  const auto count = static_cast<int>(torch::cuda::device_count());
  const bool from_local_rank = p.launch && !device->has_index();
  if (from_local_rank)
    // srun --gpus-per-task=1 (or a gres with ConstrainDevices) leaves each
    // task its own GPU as device 0.
    *device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(
                                              p.launch->launcher == "srun" && count == 1
                                                  ? 0
                                                  : std::min(p.launch->local_rank, 127)));
  if (device->has_index() && device->index() >= count) {
    if (from_local_rank)
      std::cerr << p.who << "LOCAL_RANK " << p.launch->local_rank << " has no GPU of its own (" << count
                << " usable: 0.." << count - 1 << "); launch at most " << count << " ranks per node\n";
    else
      std::cerr << "train: --device " << o.device << ": there is no GPU " << static_cast<int>(device->index())
                << " (" << count << " usable: 0.." << count - 1 << ")\n";
    return kExitBadInput;
  }
  return kExitOk;
}

// Everything decided before the data is loaded; `o` gets its device, the
// scaled learning rate, and loses its --json on ranks other than 0.
int plan_run(TrainOptions* o, Plan* p) {
  if (const int rc = parse_device(o->device, &o->cfg.device)) return rc;
  try {
    p->launch = launch_from_env([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
  } catch (const LaunchError& e) {
    std::cerr << "train: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (p->launch) {
    p->rank = p->launch->rank;
    p->world = p->launch->world;
    p->lead = p->rank == 0;
    p->who = "train: rank " + std::to_string(p->rank) + ": ";
    if (const int rc = plan_data_parallel(*o, p)) return rc;
  }
  // The linear scaling rule (Goyal et al. 2017): the rate grows with the
  // global batch, from --lr at a global batch of --lr-batch.
  p->base_lr = o->cfg.lr;
  p->global_batch = o->cfg.batch_size * p->world;
  p->lr_ref = o->lr_batch > 0 ? o->lr_batch : o->cfg.batch_size;
  o->cfg.lr = p->base_lr * static_cast<double>(p->global_batch) / static_cast<double>(p->lr_ref);
  if (!p->lead) o->json_out.clear();  // rank 0 writes it, whole
  // Checked now, not after the whole run.
  if (std::string why; !o->json_out.empty() && !check_writable(o->json_out, &why)) {
    std::cerr << "train: --json " << visible(o->json_out) << ": cannot write: " << why << "\n";
    return kExitBadInput;
  }
  // The environment, where the run needs it, before any thread starts (its
  // driver probe forks a child).
  if (!o->json_out.empty() || o->cfg.device.is_cuda()) doctor::examine();
  if (o->cfg.device.is_cuda())
    if (const int rc = choose_gpu(*o, *p, &o->cfg.device)) return rc;
  if (o->threads > 0) torch::set_num_threads(o->threads);
  return kExitOk;
}

struct Data {
  std::string dir;
  data::MnistSplit train, test;
};

int load_data(const TrainOptions& o, Data* d) {
  try {
    d->dir = data::find_dataset_dir(o.data_dir);
    if (const std::string input = data::dataset_file_named(o.json_out, d->dir); !input.empty()) {
      std::cerr << "train: --json " << visible(o.json_out) << ": that is the dataset's " << input
                << ", an input: give another file\n";
      return kExitBadInput;
    }
    d->train = data::load_mnist_split(d->dir, "train");
    d->test = data::load_mnist_split(d->dir, "t10k");
  } catch (const data::IdxError& e) {
    std::cerr << "train: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "train: out of memory reading the dataset in " << (d->dir.empty() ? o.data_dir : d->dir) << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

void print_header(const TrainOptions& o, const Plan& p, const Data& d, int64_t train_images, int64_t test_images,
                  const DistContext* dist) {
  const TrainConfig& cfg = o.cfg;
  std::cout << "train: " << train_images << " training and " << test_images << " test images from " << d.dir
            << " on " << cfg.device << " (" << torch::get_num_threads() << " CPU threads), batch " << cfg.batch_size
            << ", lr " << cfg.lr << ", momentum " << cfg.momentum << ", " << cfg.epochs << " epochs"
            << (cfg.cuda_graph ? ", CUDA graph" : "") << (cfg.bf16 ? ", bf16" : "")
            << (cfg.channels_last ? ", channels-last" : "") << (cfg.dropout ? "" : ", no dropout") << "\n";
  if (dist)
    std::cout << "train: data-parallel over " << p.world << " ranks (" << p.launch->launcher << ", " << p.backend
              << ", rendezvous " << dist->store_address()
              << "): global batch " << p.global_batch << " = " << p.world << " x " << cfg.batch_size << "; lr "
              << cfg.lr << " = " << p.base_lr << " x " << p.global_batch << " / " << p.lr_ref
              << " (linear scaling rule); buckets of " << short_number(o.bucket_mb) << " MiB\n";
}

// What the epochs gave: every epoch's numbers, the time, the last evaluation.
struct Outcome {
  nlohmann::json epochs = nlohmann::json::array();
  double train_seconds = 0;
  EvalStats last{};
};

// Trains and evaluates epoch by epoch, printing each. A loss that is not a
// finite number is a wrong result (exit 1), not numbers to save: every rank
// sees the same (summed) losses and stops.
int run_epochs(const TrainOptions& o, const Plan& p, Trainer& trainer, const Dataset& train, const Dataset& test,
               Outcome* out) {
  const TrainConfig& cfg = o.cfg;
  const bool tty = ::isatty(STDERR_FILENO);
  const bool show = !o.quiet && p.lead;
  StallWatchdog watchdog(o.stall_seconds, g_who, "progress", "nothing written");
  for (int e = 1; e <= cfg.epochs; ++e) {
    auto progress = [&](int64_t b, int64_t, double loss) {
      watchdog.progress("epoch " + std::to_string(e) + " batch " + std::to_string(b));
      if (!show) return;
      std::cerr << (tty ? "\r" : "") << "  epoch " << e << " [" << b * cfg.batch_size * p.world << "/" << train.size()
                << "] loss " << std::fixed << std::setprecision(4) << loss << (tty ? "   " : "\n") << std::flush;
    };
    const auto st = trainer.train_epoch(train, e, progress, tty ? 50 : 300);
    if (tty && show) std::cerr << "\r" << std::string(60, ' ') << "\r";
    watchdog.progress("epoch " + std::to_string(e) + "'s training");
    out->last = trainer.evaluate(test);
    watchdog.progress("epoch " + std::to_string(e) + "'s evaluation");
    out->train_seconds += st.seconds;
    if (p.lead)
      std::cout << "epoch " << e << "/" << cfg.epochs << "  train loss " << std::fixed << std::setprecision(4)
                << st.train_loss << "  test loss " << out->last.loss << "  test acc " << std::setprecision(2)
                << 100.0 * out->last.accuracy << "%  " << std::setprecision(2) << st.seconds << " s  "
                << std::setprecision(0) << st.images_per_second << " img/s" << std::endl;
    if (!std::isfinite(st.train_loss) || !std::isfinite(out->last.loss)) {
      if (p.lead)
        std::cerr << "train: epoch " << e << ": the loss is not a finite number (training diverged; try a lower "
                  << "--lr than " << short_number(cfg.lr) << "); nothing written\n";
      return kExitWrongResult;
    }
    out->epochs.push_back({{"epoch", e}, {"train_loss", st.train_loss}, {"test_loss", out->last.loss},
                           {"test_accuracy", out->last.accuracy}, {"seconds", st.seconds}, {"images", st.images},
                           {"steps", st.steps}, {"images_per_second", st.images_per_second}});
  }
  return kExitOk;
}

// The end of a data-parallel run: the replicas checked once more, each
// rank's hash printed, the gradients' all-reduce timed; the JSON's part.
nlohmann::json finish_data_parallel(const TrainOptions& o, const Plan& p, DistContext& dist, Trainer& trainer,
                                    int64_t checked_steps) {
  const auto hash = dist.check_replicas(trainer.model()->parameters(), "the last step");
  const auto buckets = trainer.data_parallel()->bucket_bytes();
  // One rank reduces nothing: its "all-reduce" is not timed, and says so.
  const bool reduced = p.world > 1;
  const auto ar = reduced ? dist.time_allreduce(buckets, 20) : AllreduceTiming{};
  const std::string hex = hex64(hash);
  std::cout << "train: rank " << p.rank << " of " << p.world << ": parameters fnv1a64 " << hex << std::endl;
  if (p.lead && reduced)
    std::cout << "train: all-reduce of the gradients (" << ar.buckets << " buckets, " << std::setprecision(2)
              << ar.bytes / 1e6 << " MB): " << std::setprecision(3) << ar.seconds * 1e3 << " ms per step, algbw "
              << ar.algbw / 1e9 << " GB/s, busbw " << ar.busbw / 1e9 << " GB/s (algbw x 2(n-1)/n)" << std::endl;
  if (p.lead && !reduced)
    std::cout << "train: all-reduce of the gradients: n/a (one rank: nothing is reduced)" << std::endl;
  double bytes = 0;
  for (const auto b : buckets) bytes += static_cast<double>(b);
  const auto timed = [reduced](double x) { return reduced ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"launcher", p.launch->launcher},
                      {"backend", p.backend},
                      {"world_size", p.world},
                      {"master", dist.store_address()},
                      {"global_batch", p.global_batch},
                      {"lr_rule", "linear: lr = base_lr x global_batch / lr_batch"},
                      {"base_lr", p.base_lr},
                      {"lr_batch", p.lr_ref},
                      {"bucket_mb", o.bucket_mb},
                      {"bucket_bytes", buckets},
                      {"timeout_seconds", o.dist_timeout},
                      {"parameter_hash", hex},
                      {"replicas_identical", true},
                      {"replicas_checked_after_steps", o.check_sync ? checked_steps : 0},
                      {"allreduce",
                       {{"bytes", reduced ? ar.bytes : bytes},
                        {"buckets", static_cast<int>(buckets.size())},
                        {"seconds_per_step", timed(ar.seconds)},  // null at one rank
                        {"algbw_bytes_per_second", timed(ar.algbw)},
                        {"busbw_bytes_per_second", timed(ar.busbw)}}}};
  dist.finish();
  return j;
}

int write_summary(const TrainOptions& o, const Plan& p, const Data& d, int64_t train_images, int64_t test_images,
                  const Outcome& out, const nlohmann::json& distributed) {
  const TrainConfig& cfg = o.cfg;
  nlohmann::json j = {{"device", cfg.device.str()},
                      {"dataset", d.dir},
                      {"train_images", train_images},
                      {"test_images", test_images},
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
                      {"world_size", p.world},
                      {"train_seconds", out.train_seconds},
                      {"final_test_accuracy", out.last.accuracy},
                      {"final_test_loss", out.last.loss},
                      {"per_epoch", out.epochs},
                      {"environment", env::to_json(doctor::examine())}};
  if (!distributed.is_null()) j["distributed"] = distributed;
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::string why; !write_file_atomically(o.json_out, text, &why)) {
    std::cerr << "train: --json " << visible(o.json_out) << ": cannot write: " << why << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

// FNV-1a over a split's images and labels: two datasets of one size
// (MNIST and Fashion-MNIST) are told apart.
std::string split_hash(const data::MnistSplit& split) {
  const auto& px = split.images.pixels;
  const auto& lb = split.labels.labels;
  const uint64_t h = fnv1a64(lb.data(), lb.size(), fnv1a64(px.data(), px.size()));
  return std::to_string(split.images.count) + " images, fnv1a64 " + hex64(h);
}

// What every rank must be given alike: one table, compared at the
// rendezvous (a rank with another --test-limit would skew rank 0's sums).
Settings settings_that_must_agree(const TrainOptions& o, const Plan& p, const Data& d) {
  const TrainConfig& c = o.cfg;
  auto num = [](double x) {  // every digit: 0.0100000001 is not 0.01
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  auto yes = [](bool b) { return std::string(b ? "on" : "off"); };
  return {{"--device", c.device.is_cuda() ? "cuda" : "cpu"},
          {"--backend", p.backend},
          {"--epochs", std::to_string(c.epochs)},
          {"--batch-size", std::to_string(c.batch_size)},
          {"--lr", num(p.base_lr)},
          {"--lr-batch", std::to_string(o.lr_batch)},
          {"--momentum", num(c.momentum)},
          {"--seed", std::to_string(c.seed)},
          {"--limit", std::to_string(o.limit)},
          {"--test-limit", std::to_string(o.test_limit)},
          {"--bucket-mb", num(o.bucket_mb)},
          {"--dist-timeout", num(o.dist_timeout)},
          {"--check-sync", yes(o.check_sync)},
          {"--bf16", yes(c.bf16)},
          {"--channels-last", yes(c.channels_last)},
          {"--cuda-graph", yes(c.cuda_graph)},
          {"--tf32", c.tf32 ? yes(*c.tf32) : "default"},
          {"--no-dropout", yes(!c.dropout)},
          {"the training set (--data-dir)", split_hash(d.train)},
          {"the test set (--data-dir)", split_hash(d.test)}};
}

// The training itself, inside the group when data-parallel. `dist` is the
// caller's, so that its catch can ask the group who was lost.
int train(const TrainOptions& o, const Plan& p, const Data& d, const TrainHooks& hooks,
          std::unique_ptr<DistContext>& dist) {
  if (p.launch) {
#ifdef CUDABENCH_TORCH_CUDA
    if (o.cfg.device.is_cuda()) c10::cuda::set_device(o.cfg.device.index());
#endif
    dist = std::make_unique<DistContext>(
        *p.launch, p.backend, o.cfg.device,
        std::chrono::milliseconds(static_cast<int64_t>(std::ceil(o.dist_timeout * 1000))),
        settings_that_must_agree(o, p, d));
    g_dist = dist.get();
  }
  Trainer trainer(o.cfg);
  int64_t checked_steps = 0;
  if (dist) {
    trainer.enable_data_parallel(*dist, static_cast<int64_t>(o.bucket_mb * 1024 * 1024));
    trainer.set_after_step([&](int64_t step) {
      if (hooks.after_step) hooks.after_step(trainer, p.rank, step);
      if (o.check_sync) {
        dist->check_replicas(trainer.model()->parameters(), "step " + std::to_string(step));
        checked_steps = step;
      }
    });
  }
  const auto train_set = to_dataset(d.train, o.cfg.device, o.limit);
  const auto test_set = to_dataset(d.test, o.cfg.device, o.test_limit);
  if (p.lead) print_header(o, p, d, train_set.size(), test_set.size(), dist.get());
  Outcome out;
  if (const int rc = run_epochs(o, p, trainer, train_set, test_set, &out)) return rc;
  const nlohmann::json distributed = dist ? finish_data_parallel(o, p, *dist, trainer, checked_steps) : nlohmann::json();
  if (o.json_out.empty()) return kExitOk;
  return write_summary(o, p, d, train_set.size(), test_set.size(), out, distributed);
}

}  // namespace

int run_train(TrainOptions o, const TrainHooks& hooks) {
  Plan p;
  if (const int rc = plan_run(&o, &p)) return rc;
  Data d;
  if (const int rc = load_data(o, &d)) return rc;
  std::unique_ptr<DistContext> dist;
  // The terminate handler never reaches a group that is gone: cleared
  // before `dist` is destroyed, however this returns.
  struct ForgetGroup {
    ~ForgetGroup() { g_dist = nullptr; }
  } forget;
  try {
    return train(o, p, d, hooks, dist);
  } catch (const ReplicasDiffer& e) {
    std::cerr << p.who << e.what() << "\n";
    return kExitWrongResult;
  } catch (const GroupBadInput& e) {  // thrown before the group exists: nothing to tear down
    std::cerr << p.who << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    const std::string msg = o.debug ? std::string(e.what()) : error_line(e);
    if (!p.launch) {
      // LibTorch's message carries a C++ backtrace: one line, unless --debug.
      std::cerr << "train: stopped: " << msg << "\n";
      return kExitFailed;
    }
    // A failed collective leaves the group's threads and sockets in no
    // state to tear down: say who was lost, then leave at once.
    g_dist = nullptr;  // diagnosed here, once
    const std::string lost = dist ? dist->diagnose() : "";
    std::cerr << p.who << "stopped: " << (lost.empty() ? "" : "lost " + lost + ": ") << msg << std::endl;
    std::cout << std::flush;
    std::_Exit(kExitFailed);
  }
}

}  // namespace cudabench::models
