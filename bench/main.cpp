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
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "atomic_file.h"
#include "cli_support.h"
#include "env/doctor.h"
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
  --benchmark_out=FILE            also write results (written whole at the end, or not at all)
  --benchmark_out_format=json|console|csv
  --benchmark_format=console|json|csv
)";

}  // namespace

namespace {

// bench --explain: the scenarios the message names, and this machine's
// verdicts on their causes.
int explain(std::string text) {
  namespace env = cudabench::env;
  using namespace cudabench;
  if (text == "-") {
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  }
  const auto matched = env::match_scenarios(text);
  if (matched.empty()) {
    std::cerr << "bench: --explain: not a CUDA set-up error I know\n";
    return kExitBadInput;
  }
  env::Report r = env::collect();
  // A library the message names: does the loader find it here? Names of
  // one library ("Unable to load any of {libcudnn_ops.so.9.1.0,
  // libcudnn_ops.so.9, libcudnn_ops.so}") are alternatives: one found is
  // enough.
  for (const auto* s : matched)
    if (s->id == "library_not_found") {
      const auto dirs = env::library_search_dirs(r.toolkits, r.loaded);
      std::map<std::string, std::vector<env::LibraryLookup>> by_library;
      for (const auto& name : env::libraries_named(text))
        by_library[name.substr(0, name.find(".so"))].push_back(env::look_up_library(name, "the pasted error", dirs));
      for (const auto& [base, lookups] : by_library) {
        const auto found = std::find_if(lookups.begin(), lookups.end(),
                                        [](const env::LibraryLookup& l) { return !l.resolved.empty(); });
        const auto elsewhere = std::find_if(lookups.begin(), lookups.end(),
                                            [](const env::LibraryLookup& l) { return !l.elsewhere.empty(); });
        r.verdicts.push_back(env::library_verdict(found != lookups.end() ? *found
                                                  : elsewhere != lookups.end() ? *elsewhere
                                                                               : lookups.front()));
      }
    }
  const env::Explanation e = env::explain(text, r);
  std::cout << env::explanation_text(e);
  return e.cause_found ? kExitOk : kExitWrongResult;
}

// The run itself; main() maps what escapes it to exit 3.
int run(int argc, char** argv) {
  namespace env = cudabench::env;
  using namespace cudabench;
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
  std::string explain_text;
  app.add_option("--explain", explain_text,
                 "name the CUDA set-up failure behind a pasted error message ('-': read it from stdin) and check "
                 "this machine for its cause: exit 0 when a cause shows here, 1 when none does, 2 when the "
                 "message is not one cudabench knows");
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
  if (auto rc = parse_command_line(app, argc, argv, "bench")) return *rc;
  const bool want_env = app.count("--env") > 0;
  if (!want_env && (check || !env_out.empty())) {
    std::cerr << "bench: --check and --env-out go with --env\n";
    return kExitBadInput;
  }
  if (app.count("--explain") > 0) {
    if (want_env || !app.remaining().empty() || require_gpu) {
      std::cerr << "bench: --explain takes only the message\n";
      return kExitBadInput;
    }
    return explain(explain_text);
  }

  // Everything the user gave is checked before anything runs or is written.
  std::vector<std::string> rest = app.remaining();
  if (const std::string err = bench::check_benchmark_flags(rest); !err.empty()) {
    std::cerr << "bench: " << err << "\n";
    return kExitBadInput;
  }
  std::string out_path, out_format = "json", filter = ".";
  bool list_only = false, user_min_time = false;
  for (auto& a : rest) {
    if (a.rfind("--benchmark_filter=", 0) == 0) filter = a.substr(19);
    if (a.rfind("--benchmark_min_time", 0) == 0) user_min_time = true;
    if (a.rfind("--benchmark_out=", 0) == 0) {
      // Google Benchmark's own file is a sink: the results are kept in
      // memory and written whole at the end (no partial or empty file).
      out_path = a.substr(16);
      a = "--benchmark_out=/dev/null";
    }
    if (a.rfind("--benchmark_out_format=", 0) == 0) out_format = a.substr(23);
    if (a == "--benchmark_list_tests" || a.rfind("--benchmark_list_tests=", 0) == 0) {
      const auto eq = a.find('=');
      list_only = *bench::parse_benchmark_bool(eq == std::string::npos ? "" : a.substr(eq + 1));  // checked above
    }
  }
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--benchmark_out", out_path},
                                   {"--env-out", env_out}}) {
    if (std::string why; !path.empty() && !data::check_writable(path, &why)) {
      std::cerr << "bench: " << flag << "=" << path << ": cannot write: " << why << "\n";
      return kExitBadInput;
    }
  }

  const env::Report& report = env::collect();
  if (want_env) {
    const std::string text = env_format == "json" ? env::to_json(report).dump(2) + "\n"
                                                  : env::to_text(report);
    if (env_out.empty()) {
      std::cout << text;
    } else if (std::string why; !data::write_file_atomically(env_out, text, &why)) {
      std::cerr << "bench: --env-out=" << env_out << ": cannot write: " << why << "\n";
      return kExitFailed;
    }
    if (check && env::has_errors(report)) return kExitWrongResult;
    if (require_gpu && !report.status.usable) return kExitWrongResult;
    return kExitOk;
  }
  if (require_gpu && !report.status.usable) {
    std::cerr << "bench: --require-gpu: " << report.status.reason << "\n";
    return kExitWrongResult;
  }
  auto& opt = bench::options();
  opt.l2_flush = *bench::parse_l2_flush(l2_flush);
  if (report.status.usable) {
    // A GPU in compute mode Prohibited can run nothing: "all" and the
    // default leave it out, naming it is an error.
    std::vector<int> runnable;
    for (const auto& g : report.gpus)
      if (g.nvml.compute_mode != 2) runnable.push_back(g.index);
    opt.devices = {runnable.front()};  // usable: at least one
    if (!devices_spec.empty()) {
      try {
        const auto chosen = bench::parse_devices(devices_spec, static_cast<int>(report.gpus.size()));
        opt.devices.clear();
        for (int d : chosen) {
          if (std::find(runnable.begin(), runnable.end(), d) != runnable.end()) opt.devices.push_back(d);
          else if (devices_spec != "all")
            throw std::invalid_argument("--devices " + devices_spec + ": GPU " + std::to_string(d) +
                                        " is in compute mode Prohibited");
        }
      } catch (const std::invalid_argument& e) {
        std::cerr << "bench: " << e.what() << "\n";
        return kExitBadInput;
      }
    }
  } else if (!devices_spec.empty() && devices_spec != "all") {
    std::cerr << "bench: --devices " << devices_spec << ": no GPU is usable: " << report.status.reason << "\n";
    return kExitBadInput;
  }

  // Google Benchmark gets argv[0] and whatever we did not parse.
  opt.user_min_time = user_min_time;
  std::vector<char*> args{argv[0]};
  for (auto& a : rest) args.push_back(a.data());
  int bargc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&bargc, args.data());
  if (bargc > 1) {  // what neither we nor Google Benchmark know: the first, in one line
    std::cerr << "bench: unknown flag or argument " << args[1] << " (see --help)\n";
    return kExitBadInput;
  }

  // The flat facts go into the context here; the whole report is added to
  // a JSON output file as an object after the run (on the console it would
  // bury the table).
  for (const auto& [k, v] : env::context_entries(report, opt.devices.front()))
    benchmark::AddCustomContext(k, v);
  if (report.status.usable) {
    std::string devs;
    for (int d : opt.devices) devs += (devs.empty() ? "" : ",") + std::to_string(d);
    benchmark::AddCustomContext("gpu_devices", devs);
    benchmark::AddCustomContext("l2_flush", bench::l2_flush_name(opt.l2_flush));
  }

  bench::register_cpu_vector_add();
  if (report.status.usable) {
#ifdef CUDABENCH_HAVE_CUDA  // usable implies it; without CUDA these do not exist
    bench::register_gpu_vector_add();
    bench::register_transfers();
#endif
  } else {
    bench::add_note("cudabench: GPU benchmarks not run: " + report.status.reason);
  }
  if (const std::string err = bench::register_torch(report.status.usable); !err.empty()) {
    std::cerr << "bench: " << err << "\n";
    return kExitBadInput;
  }
  auto say_notes = [] {
    for (const auto& n : bench::notes()) std::cerr << n << "\n";
  };

  // Reporters that keep names free of the per-benchmark minimum time.
  auto display = bench::stable_display_reporter();
  std::unique_ptr<bench::StableNames> file;
  std::ostringstream file_text;
  if (!out_path.empty()) {
    file = bench::stable_file_reporter(out_format);  // the format was checked above
    file->pin_output(&file_text);
  }
  // Until benchmarks are about to run, Google Benchmark's own errors (a
  // filter that matches nothing) are held back, to be said in one line.
  std::ostringstream held_errors;
  display->SetErrorStream(&held_errors);
  display->before_context([&] {
    display->SetErrorStream(&std::cerr);
    say_notes();
  });
  std::ostringstream listing;
  if (list_only) display->SetOutputStream(&listing);
  const std::size_t matched = benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::Shutdown();
  if (matched == 0) {
    const std::string held = held_errors.str();
    if (held.find("compile") != std::string::npos)
      std::cerr << "bench: --benchmark_filter=" << filter << ": not a valid regular expression ("
                << first_line(held) << ")\n";
    else
      std::cerr << "bench: --benchmark_filter=" << filter
                << " matches no benchmark (see --benchmark_list_tests)\n";
    return kExitBadInput;
  }
  if (list_only) {
    say_notes();
    std::istringstream lines(listing.str());
    for (std::string line; std::getline(lines, line);) std::cout << bench::stable_name(line) << "\n";
  }
  if (!out_path.empty() && !list_only) {
    std::string text = file_text.str();
    if (out_format == "json") {
      // The environment report goes into the file's context.
      nlohmann::json j = nlohmann::json::parse(text);
      j["context"]["cudabench_env"] = env::to_json(report);
      text = j.dump(2) + "\n";
    }
    if (std::string why; !data::write_file_atomically(out_path, text, &why)) {
      std::cerr << "bench: --benchmark_out=" << out_path << ": cannot write: " << why << "\n";
      return kExitFailed;
    }
  }
  if (bench::any_failure()) return kExitWrongResult;
  return bench::any_run_failure() ? kExitFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench: stopped: " << cudabench::first_line(e.what()) << "\n";
    return cudabench::kExitFailed;
  }
}
