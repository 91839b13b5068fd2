// bench: cudabench's entry point. Our own flags (--env, --check, ...) are
// parsed here; everything else goes to Google Benchmark, so every
// --benchmark_* flag works as documented there.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "atomic_file.h"
#include "env/probe.h"
#include "env/report.h"
#include "registry.h"
#include "stable_names.h"

namespace {

constexpr const char* kBenchmarkFlags = R"(
Google Benchmark flags (all of them work; the common ones):
  --benchmark_filter=REGEX        e.g. VectorAdd/cpu, VectorAdd/cuda_v4, Transfer, MnistTrain
  --benchmark_list_tests          list the benchmarks and exit
  --benchmark_min_time=SECONDS    minimum time per benchmark (e.g. 0.1)
  --benchmark_repetitions=N       repeat, then report mean/median/stddev/cv
  --benchmark_out=FILE            also write results (written whole: temp file, then renamed)
  --benchmark_out_format=json|console|csv
  --benchmark_format=console|json|csv
)";

}  // namespace

int main(int argc, char** argv) {
  namespace env = cudabench::env;
  CLI::App app{"cudabench: CUDA vector-add, copy and LibTorch training benchmarks, and an "
               "environment report of every CUDA version in play"};
  app.allow_extras();
  app.footer(kBenchmarkFlags);
  std::string env_format;
  std::string env_out;
  std::string devices_spec, l2_flush = "read";
  bool check = false, require_gpu = false;
  app.add_option("--env", env_format,
                 "print the environment report and exit: text (default) or json")
      ->expected(0, 1)
      ->default_str("text")
      ->check(CLI::IsMember({"", "text", "json"}));
  app.add_option("--env-out", env_out, "with --env: write the report to FILE instead of stdout");
  app.add_flag("--check", check, "with --env: exit 1 when any verdict is an error");
  app.add_flag("--require-gpu", require_gpu,
               "exit 1 when no GPU is usable (with --env, or before benchmarks)");
  app.add_option("--devices", devices_spec,
                 "GPUs to run the GPU benchmarks on: 'all' or CUDA ordinals such as 0,2 (default 0); with "
                 "more than one, names end in /dev:N");
  app.add_option("--l2-flush", l2_flush,
                 "what evicts the L2 cache before each timed GPU kernel: read (a kernel reads 2x L2, "
                 "leaving clean lines), memset (writes it, leaving dirty lines) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"read", "memset", "none"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; any misuse is 2
  }
  const bool want_env = app.count("--env") > 0;
  if (!want_env && (check || !env_out.empty())) {
    std::cerr << "bench: --check and --env-out go with --env\n";
    return 2;
  }

  const env::Report& report = env::collect();
  if (want_env) {
    const std::string text = env_format == "json" ? env::to_json(report).dump(2) + "\n"
                                                  : env::to_text(report);
    if (env_out.empty()) {
      std::cout << text;
    } else if (!cudabench::data::write_file_atomically(env_out, text)) {
      std::cerr << "bench: cannot write " << env_out << "\n";
      return 2;
    }
    if (check && env::has_errors(report)) return 1;
    if (require_gpu && !report.status.usable) return 1;
    return 0;
  }
  if (require_gpu && !report.status.usable) {
    std::cerr << "bench: --require-gpu: " << report.status.reason << "\n";
    return 1;
  }
  auto& opt = cudabench::bench::options();
  opt.l2_flush = *cudabench::bench::parse_l2_flush(l2_flush);
  if (report.status.usable) {
    // A GPU in compute mode Prohibited can run nothing: "all" and the
    // default leave it out, naming it is an error.
    std::vector<int> runnable;
    for (const auto& g : report.gpus)
      if (g.nvml.compute_mode != 2) runnable.push_back(g.index);
    opt.devices = {runnable.front()};  // usable: at least one
    if (!devices_spec.empty()) {
      try {
        const auto chosen = cudabench::bench::parse_devices(devices_spec, static_cast<int>(report.gpus.size()));
        opt.devices.clear();
        for (int d : chosen) {
          if (std::find(runnable.begin(), runnable.end(), d) != runnable.end()) opt.devices.push_back(d);
          else if (devices_spec != "all")
            throw std::invalid_argument("--devices " + devices_spec + ": GPU " + std::to_string(d) +
                                        " is in compute mode Prohibited");
        }
      } catch (const std::invalid_argument& e) {
        std::cerr << "bench: " << e.what() << "\n";
        return 2;
      }
    }
  } else if (!devices_spec.empty() && devices_spec != "all") {
    std::cerr << "bench: --devices " << devices_spec << ": no GPU is usable: " << report.status.reason << "\n";
    return 2;
  }

  // Google Benchmark gets argv[0] and whatever we did not parse.
  std::vector<std::string> rest = app.remaining();
  std::string out_path, out_tmp;
  for (auto& a : rest) {
    if (a.rfind("--benchmark_min_time", 0) == 0) opt.user_min_time = true;
    if (a.rfind("--benchmark_out=", 0) == 0) {
      out_path = a.substr(16);
      out_tmp = out_path + ".tmp." + std::to_string(::getpid());
      a = "--benchmark_out=" + out_tmp;
    }
  }
  std::vector<char*> args{argv[0]};
  for (auto& a : rest) args.push_back(a.data());
  int bargc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 2;

  // The flat facts go into the context here; the whole report is added to
  // a JSON output file as an object after the run (on the console it would
  // bury the table).
  for (const auto& [k, v] : env::context_entries(report, opt.devices.front()))
    benchmark::AddCustomContext(k, v);
  if (report.status.usable) {
    std::string devs;
    for (int d : opt.devices) devs += (devs.empty() ? "" : ",") + std::to_string(d);
    benchmark::AddCustomContext("gpu_devices", devs);
    benchmark::AddCustomContext("l2_flush", cudabench::bench::l2_flush_name(opt.l2_flush));
  }

  cudabench::bench::register_cpu_vector_add();
  if (report.status.usable) {
#ifdef CUDABENCH_HAVE_CUDA  // usable implies it; without CUDA these do not exist
    cudabench::bench::register_gpu_vector_add();
    cudabench::bench::register_transfers();
#endif
  } else {
    std::cerr << "cudabench: GPU benchmarks not run: " << report.status.reason << "\n";
  }
  cudabench::bench::register_torch(report.status.usable);

  // Reporters that keep names free of the per-benchmark minimum time.
  std::string out_format = "json";
  bool list_only = false;
  for (const auto& a : rest) {
    if (a.rfind("--benchmark_out_format=", 0) == 0) out_format = a.substr(23);
    if (a.rfind("--benchmark_list_tests", 0) == 0) {
      const auto eq = a.find('=');
      const std::string v = eq == std::string::npos ? "true" : a.substr(eq + 1);
      list_only = !(v == "false" || v == "0" || v == "no" || v == "n" || v == "f" || v == "off");
    }
  }
  auto display = cudabench::bench::stable_display_reporter();
  std::unique_ptr<benchmark::BenchmarkReporter> file;
  if (!out_tmp.empty()) {
    file = cudabench::bench::stable_file_reporter(out_format);
    if (!file) {
      std::cerr << "bench: --benchmark_out_format=" << out_format << ": expected json, console or csv\n";
      return 2;
    }
  }
  std::ostringstream listing;
  if (list_only) display->SetOutputStream(&listing);
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::Shutdown();
  if (list_only) {
    std::istringstream lines(listing.str());
    for (std::string line; std::getline(lines, line);) std::cout << cudabench::bench::stable_name(line) << "\n";
  }
  if (!out_tmp.empty() && std::filesystem::exists(out_tmp)) {
    if (out_format == "json") {
      // Add the environment report to the file's context, then write it whole.
      try {
        std::ifstream in(out_tmp);
        nlohmann::json j = nlohmann::json::parse(in);
        j["context"]["cudabench_env"] = env::to_json(report);
        if (!cudabench::data::write_file_atomically(out_tmp, j.dump(2) + "\n")) throw std::runtime_error("write failed");
      } catch (const std::exception& e) {
        std::cerr << "bench: cannot add the environment to " << out_path << ": " << e.what() << "\n";
      }
    }
    std::error_code ec;
    std::filesystem::rename(out_tmp, out_path, ec);
    if (ec) {
      std::cerr << "bench: cannot move results to " << out_path << ": " << ec.message() << "\n";
      return 2;
    }
  }
  return cudabench::bench::any_failure() ? 1 : 0;
}
