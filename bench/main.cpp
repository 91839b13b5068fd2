// bench: cudabench's entry point. Its own flags (--env, --explain, ...) and
// what it reads of Google Benchmark's are parsed once (options.h); the rest
// goes to Google Benchmark, so every --benchmark_* flag works as documented
// there. main() reads as its steps: options, the environment (the doctor's
// examined report), the devices, registration, the run, the results file.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.h"
#include "common/atomic_file.h"
#include "common/cli.h"
#include "process/ending.h"
#include "process/stall_watchdog.h"
#include "common/standard_output.h"
#include "doctor/doctor.h"
#include "doctor/explain.h"
#include "env/report.h"
#include "filter.h"
#include "kernels/vector_add.cuh"
#include "options.h"
#include "family.h"
#include "results_file.h"
#include "stable_names.h"

namespace {

using namespace cudabench;
using bench::BenchOptions;
using bench::RunOptions;

// --require-gpu: exit 3, saying why, when no GPU is usable.
int require_gpu(const BenchOptions& o, const env::Report& report) {
  if (!o.require_gpu || report.status.usable) return kExitOk;
  std::cerr << "bench: --require-gpu: " << report.status.reason << "\n";
  return kExitFailed;
}

// bench --env: the report as text or JSON, to stdout or --env-out.
int print_env(const BenchOptions& o, const env::Report& report) {
  const std::string text = *o.env_format == "json"
                               ? env::to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                               : env::to_text(report);
  if (o.env_out.empty()) {
    std::cout << text;
  } else if (std::string why; !write_file_atomically(o.env_out, text, &why)) {
    std::cerr << "bench: --env-out=" << visible(o.env_out) << ": cannot write: " << why << "\n";
    return kExitFailed;
  }
  if (!o.check.empty() && env::has_errors(report, o.check == "python")) return kExitWrongResult;
  return require_gpu(o, report);
}

// The GPUs the GPU families run on. A GPU in compute mode Prohibited can run
// nothing: "all" and the default leave it out, naming it is an error.
int choose_devices(const BenchOptions& o, const env::Report& report, RunOptions* run) {
  const std::string& spec = o.devices;
  if (!report.status.usable) {
    if (spec.empty() || spec == "all") return kExitOk;
    std::cerr << "bench: --devices " << visible(spec) << ": no GPU is usable: " << report.status.reason << "\n";
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
    std::cerr << "bench: " << visible(e.what()) << "\n";
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
void add_context(const env::Report& report, const RunOptions& run, const bench::BenchmarkFlags& flags) {
  for (const auto& [k, v] : env::context_entries(report, run.devices.front())) benchmark::AddCustomContext(k, v);
  for (const auto& [k, v] : flags.context) benchmark::AddCustomContext(k, v);  // the user's own keys
  // What the CPU rows run on (OMP_NUM_THREADS, the affinity mask): compare.py names it as a cause.
  benchmark::AddCustomContext("cpu_threads_used", std::to_string(vector_add::cpu_threads()));
  if (!report.status.usable) return;
  std::string devs;
  for (int d : run.devices) devs += (devs.empty() ? "" : ",") + std::to_string(d);
  benchmark::AddCustomContext("gpu_devices", devs);
  benchmark::AddCustomContext("l2_flush", bench::l2_flush_name(run.l2_flush));
}

// Every family this run can use (family.h); "" or the one line of a bad
// input. What is left out is said once, here.
std::string register_benchmarks(const env::Report& report, const RunOptions& run) {
  if (!report.status.usable) bench::add_note("cudabench: GPU benchmarks not run: " + report.status.reason);
  // LibTorch's CUDA may differ from the kernels' (docs/stacks.md). Its GPU
  // rows need both: bench times them with this build's runtime (events,
  // buffers, the L2 flush). Each reason is said once.
  const env::GpuStatus& t = report.torch_status;
  if (!report.torch.compiled_in)
    bench::add_note("cudabench: LibTorch benchmarks not built: this build has no LibTorch (see the configure "
                    "messages and docs/building.md: LibTorch)");
  else if (!t.usable && t.reason != report.status.reason)
    bench::add_note("cudabench: LibTorch GPU benchmarks not run: " + t.reason);
  else if (t.usable && !report.status.usable)
    bench::add_note("cudabench: LibTorch GPU benchmarks not run either: bench times them with this build's "
                    "CUDA runtime (a toolkit this driver runs fixes both: docs/stacks.md)");
  return bench::register_families(run, {.gpu = report.status.usable, .torch_gpu = t.usable});
}

void say_notes() {
  for (const auto& n : bench::notes()) std::cerr << n << "\n";
}

// Runs (or lists) what the filter selects (matched by RE2: filter.h). The
// console table goes to stdout; with --benchmark_out, `results` takes the
// file's text after each benchmark. Returns how many benchmarks matched.
std::size_t run_selected(const bench::BenchmarkFlags& flags, double stall_seconds, bench::ResultsFile* results) {
  const std::vector<std::string> chosen = bench::selected(flags.filter, bench::registered_names());
  if (chosen.empty() || flags.list_only) {
    if (!chosen.empty()) say_notes();
    for (const auto& name : chosen) std::cout << bench::stable_name(name) << "\n";
    return chosen.size();
  }
  // Reporters that keep names free of the per-benchmark minimum time.
  auto display = bench::stable_display_reporter();
  std::unique_ptr<bench::StableNames> file;
  if (results) {
    file = bench::stable_file_reporter(flags.out_format);  // the format was checked
    file->pin_output(results->sink());
    file->after_runs([results](const std::string&) { results->update(); });
  }
  if (const auto unit = bench::time_unit_named(flags.time_unit)) {
    display->time_unit(*unit);
    if (file) file->time_unit(*unit);
  }
  // The notes wait until benchmarks are about to run; each row is shown as it
  // finishes (stdout is buffered: a stop would lose what is held). A row
  // that never finishes (a stuck GPU) ends the run at --stall-seconds.
  StallWatchdog watchdog(stall_seconds, "bench: ", "benchmark finished", "the results file keeps every finished row");
  display->before_context(say_notes);
  display->after_runs([&watchdog](const std::string& name) {
    std::cout.flush();
    watchdog.progress(bench::stable_name(name));
  });
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get(), bench::exact_spec(chosen));
  benchmark::Shutdown();
  return chosen.size();
}

int run_benchmarks(const BenchOptions& o, const env::Report& report, const char* argv0) {
  RunOptions run;
  run.l2_flush = o.l2_flush;
  run.user_min_time = o.benchmark.user_min_time;
  run.iterations = o.benchmark.iterations;
  if (const int rc = choose_devices(o, report, &run)) return rc;
  if (const int rc = init_google_benchmark(argv0, o.benchmark.pass_on)) return rc;
  add_context(report, run, o.benchmark);
  if (const std::string err = register_benchmarks(report, run); !err.empty()) {
    std::cerr << "bench: " << err << "\n";
    return kExitBadInput;
  }
  std::optional<bench::ResultsFile> results;
  if (!o.benchmark.out_path.empty() && !o.benchmark.list_only)
    results.emplace(o.benchmark.out_path, o.benchmark.out_format, report);
  if (run_selected(o.benchmark, o.stall_seconds, results ? &*results : nullptr) == 0) {
    // Without a usable GPU its families are not registered: say why, since
    // a GPU-only filter is the likely cause.
    std::cerr << "bench: --benchmark_filter=" << shown(o.benchmark.filter) << " matches no benchmark"
              << (report.status.usable ? " (see --benchmark_list_tests)"
                                       : " here: GPU benchmarks are not registered: " + report.status.reason)
              << "\n";
    return kExitBadInput;
  }
  if (results)
    if (const std::string why = results->finish(); !why.empty()) {
      std::cerr << "bench: --benchmark_out=" << visible(o.benchmark.out_path) << ": cannot write: " << why << "\n";
      return kExitFailed;
    }
  if (bench::any_failure()) return kExitWrongResult;
  return bench::any_run_failure() ? kExitFailed : kExitOk;
}

// The run itself; main() maps what escapes it to exit 3.
int run(int argc, char** argv, StandardOutput* out) {
  BenchOptions o;
  if (auto rc = bench::parse_options(argc, argv, &o)) return *rc;
  out->keep_going_on_epipe(!o.benchmark.out_path.empty() || !o.env_out.empty());
  if (!o.rows.empty()) {
    std::cout << bench::rows_filter(o.rows) << "\n";
    return kExitOk;
  }
  if (o.explain || o.env_format) {
    const auto scan = env::PythonScanInput::from_process(o.python, o.import, doctor::examine().torch);
    const env::Report with_python = doctor::examine_with_python(scan);
    return o.explain ? doctor::explain_command({*o.explain, !o.check.empty(), o.here, o.explain_json}, with_python)
                     : print_env(o, with_python);
  }
  const env::Report& report = doctor::examine();
  if (const int rc = require_gpu(o, report)) return rc;
  return run_benchmarks(o, report, argv[0]);
}

}  // namespace

int main(int argc, char** argv) {
  auto& out = cudabench::StandardOutput::install();
  cudabench::process::arm_ending_handlers();  // an output file in progress is removed on a signal
  int rc = cudabench::kExitFailed;
  try {
    rc = run(argc, argv, &out);
  } catch (const std::bad_alloc&) {
    std::cerr << "bench: stopped: out of host memory (std::bad_alloc); the results file keeps every benchmark "
                 "that finished\n";
  } catch (const std::exception& e) {
    std::cerr << "bench: stopped: " << cudabench::first_line(e.what()) << "\n";
  }
  if (const std::string why = out.finish(); !why.empty() && rc == cudabench::kExitOk) {
    std::cerr << "bench: standard output: cannot write: " << why << "\n";
    rc = cudabench::kExitFailed;
  }
  return rc;
}
