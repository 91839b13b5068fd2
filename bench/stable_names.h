// Google Benchmark writes a benchmark's own minimum time into its name
// ("VectorAdd/cuda_v4/n:4096/min_time:0.013/manual_time"). bench gives each
// GPU benchmark one (bound_wall_time) that depends on the device, so the
// names in results would change from machine to machine and break history
// and comparison; --benchmark_min_time=100x (Iterations(100) for the 1.7
// library) adds "/iterations:100", which Google Benchmark 1.8's flag does
// not. These reporters clear those parts of the name before the
// reporter they wrap sees a run, as BenchmarkName is meant to be used, and
// apply --benchmark_time_unit to every run (each family registers its own
// unit, which Google Benchmark 1.7's flag does not override).
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace cudabench::bench {

class StableNames : public benchmark::BenchmarkReporter {
 public:
  explicit StableNames(std::unique_ptr<benchmark::BenchmarkReporter> inner);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;
  // Output to `os` instead of the stream Google Benchmark gives (bench keeps
  // the file's text in memory and writes it whole at the end).
  void pin_output(std::ostream* os) { pinned_ = os; }
  // Called once, just before the context is reported: when Google
  // Benchmark has found benchmarks to run.
  void before_context(std::function<void()> f) { before_context_ = std::move(f); }
  // Called after each finished benchmark's runs are reported, with its name.
  void after_runs(std::function<void(const std::string&)> f) { after_runs_ = std::move(f); }
  // Times in `unit` whatever unit a benchmark registered (--benchmark_time_unit).
  void time_unit(benchmark::TimeUnit unit) { unit_ = unit; }

 private:
  void share_streams();  // the streams Google Benchmark gave us go to the inner reporter
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::ostream* pinned_ = nullptr;
  std::function<void()> before_context_;
  std::function<void(const std::string&)> after_runs_;
  std::optional<benchmark::TimeUnit> unit_;
};

// The display reporter --benchmark_format asks for, with stable names.
std::unique_ptr<StableNames> stable_display_reporter();
// A file reporter for --benchmark_out_format (json, console or csv), with
// stable names; nullptr for an unknown format.
std::unique_ptr<StableNames> stable_file_reporter(const std::string& format);
// A benchmark name without its "/min_time:..." and "/iterations:..." parts.
std::string stable_name(const std::string& name);
// --benchmark_time_unit's unit: "ns", "us", "ms" or "s"; nullopt for anything else.
std::optional<benchmark::TimeUnit> time_unit_named(const std::string& name);

}  // namespace cudabench::bench
