// bench: cudabench's entry point. Its own flags (--env, --explain, ...) and
// what it reads of Google Benchmark's are parsed once (options.h); the rest
// goes to Google Benchmark, so every --benchmark_* flag works as documented
// there. main() reads as its steps: options, the environment (the doctor's
// examined report), the devices, registration, the run, the results file.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "common/atomic_file.h"
#include "common/cli.h"
#include "doctor/doctor.h"
#include "doctor/explain.h"
#include "env/report.h"
#include "kernels/vector_add.cuh"
#include "options.h"
#include "registry.h"
#include "stable_names.h"

namespace {

using namespace cudabench;
using bench::BenchOptions;
using bench::RunOptions;

// bench --env: the report as text or JSON, to stdout or --env-out.
int print_env(const BenchOptions& o, const env::Report& report) {
  const std::string text = *o.env_format == "json" ? env::to_json(report).dump(2) + "\n" : env::to_text(report);
  if (o.env_out.empty()) {
    std::cout << text;
  } else if (std::string why; !write_file_atomically(o.env_out, text, &why)) {
    std::cerr << "bench: --env-out=" << o.env_out << ": cannot write: " << why << "\n";
    return kExitFailed;
  }
  if (o.check && env::has_errors(report)) return kExitWrongResult;
  if (o.require_gpu && !report.status.usable) return kExitWrongResult;
  return kExitOk;
}

// The GPUs the GPU families run on. A GPU in compute mode Prohibited can run
// nothing: "all" and the default leave it out, naming it is an error.
int choose_devices(const BenchOptions& o, const env::Report& report, RunOptions* run) {
  const std::string& spec = o.devices;
  if (!report.status.usable) {
    if (spec.empty() || spec == "all") return kExitOk;
    std::cerr << "bench: --devices " << spec << ": no GPU is usable: " << report.status.reason << "\n";
    return kExitBadInput;
  }
  std::vector<int> runnable;
  for (const auto& g : report.gpus)
    if (g.nvml.compute_mode != 2) runnable.push_back(g.index);
  run->devices = {runnable.front()};  // usable: at least one
  if (spec.empty()) return kExitOk;
  try {
    run->devices.clear();
    for (int d : bench::parse_devices(spec, static_cast<int>(report.gpus.size()))) {
      if (std::find(runnable.begin(), runnable.end(), d) != runnable.end()) run->devices.push_back(d);
      else if (spec != "all")
        throw std::invalid_argument("--devices " + spec + ": GPU " + std::to_string(d) +
                                    " is in compute mode Prohibited");
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "bench: " << e.what() << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

// Hands Google Benchmark argv[0] and what bench did not parse; a flag
// neither knows is a usage error.
int init_google_benchmark(const char* argv0, std::vector<std::string> pass_on) {
  std::vector<char*> args{const_cast<char*>(argv0)};
  for (auto& a : pass_on) args.push_back(a.data());
  int argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&argc, args.data());
  if (argc > 1) {  // the first unknown one, in one line
    std::cerr << "bench: unknown flag or argument " << args[1] << " (see --help)\n";
    return kExitBadInput;
  }
  return kExitOk;
}

// The flat facts go into the context here; the whole report is added to a
// JSON output file after the run (on the console it would bury the table).
void add_context(const env::Report& report, const RunOptions& run) {
  for (const auto& [k, v] : env::context_entries(report, run.devices.front())) benchmark::AddCustomContext(k, v);
  // What the CPU rows run on (OMP_NUM_THREADS, the affinity mask): compare.py names it as a cause.
  benchmark::AddCustomContext("cpu_threads_used", std::to_string(vector_add::cpu_threads()));
  if (!report.status.usable) return;
  std::string devs;
  for (int d : run.devices) devs += (devs.empty() ? "" : ",") + std::to_string(d);
  benchmark::AddCustomContext("gpu_devices", devs);
  benchmark::AddCustomContext("l2_flush", bench::l2_flush_name(run.l2_flush));
}

// Every family, for this run; "" or the one line of a bad input.
std::string register_benchmarks(const env::Report& report, const RunOptions& run) {
  bench::register_cpu_vector_add();
  if (report.status.usable) {
#ifdef CUDABENCH_HAVE_CUDA  // usable implies it; without CUDA these do not exist
    bench::register_gpu_vector_add(run);
    bench::register_transfers(run);
#endif
  } else {
    bench::add_note("cudabench: GPU benchmarks not run: " + report.status.reason);
  }
  // LibTorch's CUDA may differ from the kernels' (docs/stacks.md). Its GPU
  // rows need both: bench times them with this build's runtime (events,
  // buffers, the L2 flush). Each reason is said once.
  const env::GpuStatus& t = report.torch_status;
  if (report.torch.compiled_in && !t.usable && t.reason != report.status.reason)
    bench::add_note("cudabench: LibTorch GPU benchmarks not run: " + t.reason);
  else if (report.torch.compiled_in && t.usable && !report.status.usable)
    bench::add_note("cudabench: LibTorch GPU benchmarks not run either: bench times them with this build's "
                    "CUDA runtime (a toolkit this driver runs fixes both: docs/stacks.md)");
  return bench::register_torch(run, t.usable && report.status.usable);
}

void say_notes() {
  for (const auto& n : bench::notes()) std::cerr << n << "\n";
}

// Runs (or lists) what the filter selects. The console table goes to
// stdout; with --benchmark_out the file's text is kept in `file_text`.
// Returns how many benchmarks matched.
std::size_t run_selected(const bench::BenchmarkFlags& flags, std::ostringstream* file_text) {
  // Reporters that keep names free of the per-benchmark minimum time.
  auto display = bench::stable_display_reporter();
  std::unique_ptr<bench::StableNames> file;
  if (!flags.out_path.empty()) {
    file = bench::stable_file_reporter(flags.out_format);  // the format was checked
    file->pin_output(file_text);
  }
  // The notes wait until benchmarks are about to run: a filter that
  // matches nothing is said alone. Google Benchmark's own error line for it
  // is replaced by bench's.
  std::ostringstream held_errors, listing;
  display->SetErrorStream(&held_errors);
  display->before_context([&] {
    display->SetErrorStream(&std::cerr);
    say_notes();
  });
  if (flags.list_only) display->SetOutputStream(&listing);
  const std::size_t matched = benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::Shutdown();
  if (matched > 0 && flags.list_only) {
    say_notes();
    std::istringstream lines(listing.str());
    for (std::string line; std::getline(lines, line);) std::cout << bench::stable_name(line) << "\n";
  }
  return matched;
}

// --benchmark_out, written whole; a JSON file gets the environment report
// in its context.
int write_results(const bench::BenchmarkFlags& flags, std::string text, const env::Report& report) {
  if (flags.out_format == "json") {
    nlohmann::json j = nlohmann::json::parse(bench::bare_nonfinite_to_null(text));
    j["context"]["cudabench_env"] = env::to_json(report);
    text = j.dump(2) + "\n";
  }
  if (std::string why; !write_file_atomically(flags.out_path, text, &why)) {
    std::cerr << "bench: --benchmark_out=" << flags.out_path << ": cannot write: " << why << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

int run_benchmarks(const BenchOptions& o, const env::Report& report, const char* argv0) {
  RunOptions run;
  run.l2_flush = o.l2_flush;
  run.user_min_time = o.benchmark.user_min_time;
  if (const int rc = choose_devices(o, report, &run)) return rc;
  if (const int rc = init_google_benchmark(argv0, o.benchmark.pass_on)) return rc;
  add_context(report, run);
  if (const std::string err = register_benchmarks(report, run); !err.empty()) {
    std::cerr << "bench: " << err << "\n";
    return kExitBadInput;
  }
  std::ostringstream file_text;
  if (run_selected(o.benchmark, &file_text) == 0) {
    // Without a usable GPU its families are not registered: say why, since
    // a GPU-only filter is the likely cause.
    std::cerr << "bench: --benchmark_filter=" << shown(o.benchmark.filter) << " matches no benchmark"
              << (report.status.usable ? " (see --benchmark_list_tests)"
                                       : " here: GPU benchmarks are not registered: " + report.status.reason)
              << "\n";
    return kExitBadInput;
  }
  if (!o.benchmark.out_path.empty() && !o.benchmark.list_only)
    if (const int rc = write_results(o.benchmark, file_text.str(), report)) return rc;
  if (bench::any_failure()) return kExitWrongResult;
  return bench::any_run_failure() ? kExitFailed : kExitOk;
}

// The run itself; main() maps what escapes it to exit 3.
int run(int argc, char** argv) {
  BenchOptions o;
  if (auto rc = bench::parse_options(argc, argv, &o)) return *rc;
  if (o.explain || o.env_format) {
    const auto scan = env::PythonScanInput::from_process(o.python, o.import, doctor::examine().torch);
    const env::Report with_python = doctor::examine_with_python(scan);
    return o.explain ? doctor::explain_command(*o.explain, with_python) : print_env(o, with_python);
  }
  const env::Report& report = doctor::examine();
  if (o.require_gpu && !report.status.usable) {
    std::cerr << "bench: --require-gpu: " << report.status.reason << "\n";
    return kExitWrongResult;
  }
  return run_benchmarks(o, report, argv[0]);
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
