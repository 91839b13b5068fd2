// What --benchmark_filter selects. Google Benchmark matches its filter with
// std::regex, which backtracks: '(.*)*z' or six '.*' against a 60-character
// name run for minutes. bench matches the filter itself with RE2 (linear
// time, POSIX syntax as Google Benchmark's std::regex::extended) against
// the names results carry (stable_name: no "/min_time:" part), then hands
// Google Benchmark the exact names chosen, an alternation of literals that
// std::regex matches at once.
#pragma once

#include <string>
#include <vector>

namespace cudabench::bench {

// "" when `filter` (a leading '-' negates) is a regular expression RE2
// compiles, else RE2's reason.
std::string filter_problem(const std::string& filter);
// The registered benchmarks' names as Google Benchmark gives them (listed,
// not run).
std::vector<std::string> registered_names();
// The names of `registered` whose stable name `filter` matches.
std::vector<std::string> selected(const std::string& filter, const std::vector<std::string>& registered);
// A Google Benchmark spec that selects exactly `names`.
std::string exact_spec(const std::vector<std::string>& names);

}  // namespace cudabench::bench
