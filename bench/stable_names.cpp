#include "stable_names.h"

#include <regex>

namespace cudabench::bench {

StableNames::StableNames(std::unique_ptr<benchmark::BenchmarkReporter> inner) : inner_(std::move(inner)) {}

void StableNames::share_streams() {
  inner_->SetOutputStream(pinned_ ? pinned_ : &GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
}

bool StableNames::ReportContext(const Context& context) {
  if (before_context_) {
    auto f = std::move(before_context_);
    before_context_ = nullptr;
    f();
  }
  share_streams();
  return inner_->ReportContext(context);
}

void StableNames::ReportRuns(const std::vector<Run>& runs) {
  share_streams();
  std::vector<Run> stable = runs;
  for (auto& r : stable) {
    r.run_name.min_time.clear();
    r.run_name.iterations.clear();
    if (unit_) r.time_unit = *unit_;
  }
  inner_->ReportRuns(stable);
  if (after_runs_ && !stable.empty()) after_runs_(stable.front().benchmark_name());
}

void StableNames::Finalize() {
  share_streams();
  inner_->Finalize();
}

std::unique_ptr<StableNames> stable_display_reporter() {
  return std::make_unique<StableNames>(std::unique_ptr<benchmark::BenchmarkReporter>(
      benchmark::CreateDefaultDisplayReporter()));
}

std::unique_ptr<StableNames> stable_file_reporter(const std::string& format) {
  std::unique_ptr<benchmark::BenchmarkReporter> inner;
  if (format == "json") inner = std::make_unique<benchmark::JSONReporter>();
  else if (format == "console") inner = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  else if (format == "csv") inner = std::make_unique<benchmark::CSVReporter>();
  else return nullptr;
  return std::make_unique<StableNames>(std::move(inner));
}

std::string stable_name(const std::string& name) {
  static const std::regex per_run(R"(/(min_time:[0-9.]+|iterations:[0-9]+))");
  return std::regex_replace(name, per_run, "");
}

std::optional<benchmark::TimeUnit> time_unit_named(const std::string& name) {
  if (name == "ns") return benchmark::kNanosecond;
  if (name == "us") return benchmark::kMicrosecond;
  if (name == "ms") return benchmark::kMillisecond;
  if (name == "s") return benchmark::kSecond;
  return std::nullopt;
}

}  // namespace cudabench::bench
