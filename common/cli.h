// The exit-code contract of bench and train (docs/contributing.md), the
// one-line error text, and the command-line helpers that keep the contract:
// a misuse is one line on stderr that names the flag and what it expects,
// then exit 2; --help is exit 0.
#pragma once

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "utf8.h"

namespace cudabench {

constexpr int kExitOk = 0;
constexpr int kExitWrongResult = 1;  // a failed correctness check or a regression: only that
constexpr int kExitBadInput = 2;     // bad input or usage, one line naming it
constexpr int kExitFailed = 3;       // anything else that stopped the run (I/O, CUDA, internal)

// The first line of a message (one line on stderr, whatever it holds).
inline std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
// An exception's message for a one-line error. LibTorch's (c10::Error) puts
// its C++ backtrace after the message, so the first line is the message.
inline std::string error_line(const std::exception& e) { return first_line(e.what()); }

// A number for messages: 0.5, 1e+06; never 309 digits.
inline std::string short_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "" for a folder, else why `dir` is not one, for a message naming an
// input folder: "no such folder", "not a folder", or the system's reason
// (a symlink loop is not "no such folder").
inline std::string folder_problem(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return "";
  if (ec && ec != std::errc::no_such_file_or_directory) return ec.message();
  return std::filesystem::exists(dir, ec) ? "not a folder" : "no such folder";
}

// A value as messages show it: whole when short, else its start and length
// (a 100,000-character filter must not become a 100,000-character line).
inline std::string shown(const std::string& v) {
  if (v.size() <= 200) return v;
  return v.substr(0, 60) + "...(" + std::to_string(v.size()) + " characters)";
}

// An option whose value is missing: "--flag=" with nothing after the '=',
// or "--flag" followed by another of `app`'s options. CLI11 would take the
// next argument as the value (`--env-out= --check` and `--env-out --check`
// wrote a file named --check). "" when every value is there, else one line.
inline std::string missing_option_value(const CLI::App& app, int argc, char** argv) {
  auto known = [&app](const std::string& a) {
    return a.rfind("--", 0) == 0 && app.get_option_no_throw(a.substr(0, a.find('='))) != nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (!known(a)) continue;
    if (a.back() == '=' && a.find('=') == a.size() - 1) return a + ": empty value (give one after the '=')";
    const CLI::Option* opt = app.get_option_no_throw(a);
    if (opt && opt->get_items_expected_min() > 0 && i + 1 < argc && known(argv[i + 1]))
      return a + ": expects a value, not the option " + argv[i + 1];
  }
  return "";
}

// Parses argv; nullopt to go on, else the exit code (0 after --help).
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  if (const std::string missing = missing_option_value(app, argc, argv); !missing.empty()) {
    std::cerr << tool << ": " << visible(missing) << " (see --help)\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    for (auto& c : what)
      if (c == '\n') c = ' ';
    std::cerr << tool << ": " << visible(what) << " (see --help)\n";  // a value's escapes shown, not obeyed
    return kExitBadInput;
  }
}

// A finite number within [lo, hi] (either bound may be open): NaN and
// infinities are refused, and the bounds are printed short.
inline CLI::Validator finite_range(double lo, double hi, bool lo_open = false) {
  std::string desc = std::string(lo_open ? "(" : "[") + short_number(lo) + ", " + short_number(hi) + "]";
  return CLI::Validator(
      [lo, hi, lo_open, desc](std::string& s) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0') return "'" + s + "' is not a number";
        if (!std::isfinite(x)) return "'" + s + "' is not a finite number";
        if (x < lo || x > hi || (lo_open && x == lo))
          return "'" + s + "' is out of range: expected a number in " + desc;
        return "";
      },
      "NUMBER in " + desc);
}

// A whole number within [lo, hi].
inline CLI::Validator int_range(long long lo, long long hi) {
  const std::string desc = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, desc](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long x = std::strtoll(s.c_str(), &end, 10);
        if (end == s.c_str() || *end != '\0') return "'" + s + "' is not a whole number";
        if (errno == ERANGE || x < lo || x > hi) return "'" + s + "' is out of range: expected " + desc;
        return "";
      },
      "INT in " + desc);
}

// CPU threads: more than a few per CPU only thrash, and tens of thousands
// fail to start (libgomp's "Thread creation failed") or crash.
constexpr int kThreadsPerCpu = 4;
inline int max_threads() { return kThreadsPerCpu * std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }
inline std::string threads_bound() {
  return "at most " + std::to_string(max_threads()) + " (" + std::to_string(kThreadsPerCpu) + " per CPU; this machine has " +
         std::to_string(max_threads() / kThreadsPerCpu) + ")";
}

// "" when $OMP_NUM_THREADS is unset, or a list of thread counts (one per
// nesting level, "4" or "4,2") each within max_threads(); else one line
// naming it.
inline std::string omp_threads_problem() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (!v) return "";
  const std::string value = v;
  for (std::size_t at = 0;;) {
    const std::size_t comma = value.find(',', at);
    const std::string item = value.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stol(item) < 1)
      return "OMP_NUM_THREADS=" + shown(value) + ": expected a count of threads (or counts per level, 4,2), 1 to " +
             std::to_string(max_threads());
    if (std::stol(item) > max_threads()) return "OMP_NUM_THREADS=" + shown(value) + ": " + threads_bound();
    if (comma == std::string::npos) return "";
    at = comma + 1;
  }
}

// The open-files limit raised to `need` where the hard limit allows; else
// one line naming it and what needs more ("" when there are enough).
inline std::string open_files_problem(rlim_t need, const std::string& what) {
  rlimit l{};
  if (::getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur >= need) return "";
  if (l.rlim_max >= need) {
    l.rlim_cur = need;
    if (::setrlimit(RLIMIT_NOFILE, &l) == 0) return "";
  }
  return "the limit on open files is " + std::to_string(l.rlim_cur) + " (ulimit -n; hard limit " +
         std::to_string(l.rlim_max) + "): " + what + " needs " + std::to_string(need) + " (ulimit -n " +
         std::to_string(need) + ")";
}

}  // namespace cudabench
