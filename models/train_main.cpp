// train: trains MnistCnn on an MNIST-format dataset (Fashion-MNIST from
// Debian by default) on the CPU or a GPU, like the seed script and better:
// per-epoch train loss, test loss, accuracy, epoch time and images/s, a
// progress line, and a JSON summary written whole or not at all.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <regex>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "atomic_file.h"
#include "cli_support.h"
#include "env/probe.h"
#include "env/report.h"
#include "idx_reader.h"
#include "trainer.h"

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
  app.add_flag("--quiet", quiet, "no progress line");
  app.add_flag("--debug", debug, "on an internal error, print LibTorch's whole message (with its backtrace)");
  if (auto rc = parse_command_line(app, argc, argv, "train")) return *rc;
  if (!tf32.empty()) cfg.tf32 = tf32 == "on";

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
    if (cfg.device.has_index() && cfg.device.index() >= count) {
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

  try {
    models::Trainer trainer(cfg);
    const auto train = models::to_dataset(train_split, cfg.device, limit);
    const auto test = models::to_dataset(test_split, cfg.device, test_limit);
    std::cout << "train: " << train.size() << " training and " << test.size() << " test images from " << dir
              << " on " << cfg.device << " (" << torch::get_num_threads() << " CPU threads), batch "
              << cfg.batch_size << ", lr " << cfg.lr << ", momentum " << cfg.momentum << ", " << cfg.epochs
              << " epochs" << (cfg.cuda_graph ? ", CUDA graph" : "") << (cfg.bf16 ? ", bf16" : "")
              << (cfg.channels_last ? ", channels-last" : "") << "\n";
    const bool tty = ::isatty(STDERR_FILENO);
    nlohmann::json epochs = nlohmann::json::array();
    double total_seconds = 0;
    models::EvalStats last{};
    for (int e = 1; e <= cfg.epochs; ++e) {
      auto progress = [&](int64_t b, int64_t nb, double loss) {
        if (quiet) return;
        std::cerr << (tty ? "\r" : "") << "  epoch " << e << " [" << b * cfg.batch_size << "/" << train.size()
                  << "] loss " << std::fixed << std::setprecision(4) << loss << (tty ? "   " : "\n") << std::flush;
        (void)nb;
      };
      const auto st = trainer.train_epoch(train, e, progress, tty ? 50 : 300);
      if (tty && !quiet) std::cerr << "\r" << std::string(60, ' ') << "\r";
      last = trainer.evaluate(test);
      total_seconds += st.seconds;
      std::cout << "epoch " << e << "/" << cfg.epochs << "  train loss " << std::fixed << std::setprecision(4)
                << st.train_loss << "  test loss " << last.loss << "  test acc " << std::setprecision(2)
                << 100.0 * last.accuracy << "%  " << std::setprecision(2) << st.seconds << " s  "
                << std::setprecision(0) << st.images_per_second << " img/s" << std::endl;
      if (!std::isfinite(st.train_loss) || !std::isfinite(last.loss)) {
        // NaN results are a wrong result, not numbers to save (JSON would hold nulls).
        std::cerr << "train: epoch " << e << ": the loss is not a finite number (training diverged; try a lower "
                  << "--lr than " << short_number(cfg.lr) << "); nothing written\n";
        return kExitWrongResult;
      }
      epochs.push_back({{"epoch", e},
                        {"train_loss", st.train_loss},
                        {"test_loss", last.loss},
                        {"test_accuracy", last.accuracy},
                        {"seconds", st.seconds},
                        {"images_per_second", st.images_per_second}});
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
                          {"train_seconds", total_seconds},
                          {"final_test_accuracy", last.accuracy},
                          {"final_test_loss", last.loss},
                          {"per_epoch", epochs},
                          {"environment", env::to_json(env::collect())}};
      if (std::string why; !data::write_file_atomically(json_out, j.dump(2) + "\n", &why)) {
        std::cerr << "train: --json " << json_out << ": cannot write: " << why << "\n";
        return kExitFailed;
      }
    }
  } catch (const std::exception& e) {
    // LibTorch's message carries a C++ backtrace: one line, unless --debug.
    std::cerr << "train: stopped: " << (debug ? std::string(e.what()) : models::error_line(e)) << "\n";
    return kExitFailed;
  }
  return kExitOk;
}
