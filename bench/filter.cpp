#include "filter.h"

#include <benchmark/benchmark.h>
#include <re2/re2.h>

#include <memory>
#include <sstream>

#include "stable_names.h"

// Google Benchmark's --benchmark_list_tests, as its flag: the listing pass
// sets it around one RunSpecifiedBenchmarks call (the library has no other
// way to list without running).
namespace benchmark {
extern bool FLAGS_benchmark_list_tests;
}

namespace cudabench::bench {
namespace {

RE2::Options options() {
  RE2::Options o;
  o.set_posix_syntax(true);  // extended POSIX, as Google Benchmark's std::regex
  o.set_perl_classes(true);  // \d, \w and \s too
  o.set_word_boundary(true);
  o.set_log_errors(false);
  return o;
}

std::string without_negation(const std::string& filter) {
  return !filter.empty() && filter[0] == '-' ? filter.substr(1) : filter;
}

// A name as a literal of std::regex::extended.
std::string escaped(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string(".[]()*+?{}|^$\\").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string filter_problem(const std::string& filter) {
  const RE2 re(without_negation(filter), options());
  return re.ok() ? "" : re.error();
}

std::vector<std::string> registered_names() {
  // Its own reporter (the default display reporter is one static object).
  auto lister = std::make_unique<benchmark::ConsoleReporter>();
  std::ostringstream listing, ignored;
  lister->SetOutputStream(&listing);
  lister->SetErrorStream(&ignored);
  const bool was = benchmark::FLAGS_benchmark_list_tests;
  benchmark::FLAGS_benchmark_list_tests = true;
  benchmark::RunSpecifiedBenchmarks(lister.get(), nullptr, ".");
  benchmark::FLAGS_benchmark_list_tests = was;
  std::vector<std::string> names;
  std::istringstream lines(listing.str());
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

std::vector<std::string> selected(const std::string& filter, const std::vector<std::string>& registered) {
  const RE2 re(without_negation(filter), options());
  const bool negate = !filter.empty() && filter[0] == '-';
  std::vector<std::string> out;
  for (const auto& name : registered)
    if (RE2::PartialMatch(stable_name(name), re) != negate) out.push_back(name);
  return out;
}

std::string exact_spec(const std::vector<std::string>& names) {
  std::string spec;
  for (const auto& name : names) spec += (spec.empty() ? "" : "|") + escaped(name);
  return "^(" + spec + ")$";
}

}  // namespace cudabench::bench
