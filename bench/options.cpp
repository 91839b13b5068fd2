#include "options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/cli.h"
#include "common/settings.h"
#include "common/utf8.h"
#include "data/idx_reader.h"
#include "env/probe.h"
#include "env/report.h"
#include "filter.h"
#include "stable_names.h"

namespace cudabench::bench {

const char* l2_flush_name(L2Flush f) {
  switch (f) {
    case L2Flush::Read: return "read";
    case L2Flush::Memset: return "memset";
    case L2Flush::None: return "none";
  }
  return "?";
}

std::optional<L2Flush> parse_l2_flush(const std::string& s) {
  for (L2Flush f : {L2Flush::Read, L2Flush::Memset, L2Flush::None})
    if (s == l2_flush_name(f)) return f;
  return std::nullopt;
}

std::vector<int> parse_devices(const std::string& spec, int available) {
  std::vector<int> out;
  if (spec == "all") {
    for (int i = 0; i < available; ++i) out.push_back(i);
    if (out.empty()) throw std::invalid_argument("--devices all: no GPU is usable");
    return out;
  }
  std::vector<std::string> items{""};
  for (char c : spec) {
    if (c == ',') items.emplace_back();
    else items.back() += c;
  }
  if (spec.empty()) throw std::invalid_argument("--devices: empty list (give 'all' or a list such as 0,2)");
  for (const std::string& item : items) {
    std::size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || d < 0)
      throw std::invalid_argument("--devices " + spec + ": '" + item +
                                  "' is not a device number (give 'all' or a list such as 0,2)");
    if (d >= available)
      throw std::invalid_argument("--devices " + spec + ": there is no GPU " + std::to_string(d) + " (" +
                                  std::to_string(available) + " usable: 0.." + std::to_string(available - 1) + ")");
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw std::invalid_argument("--devices " + spec + ": GPU " + std::to_string(d) + " is listed twice");
    out.push_back(d);
  }
  return out;
}

namespace {

// Plain decimal only: no blanks, no hexadecimal ("0x10" is not 16 s).
bool plain_number(const std::string& v) {
  return !v.empty() && v.find_first_not_of("0123456789+-.eE") == std::string::npos;
}

bool parse_long(const std::string& v, long long* out) {
  if (!plain_number(v)) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoll(v.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

bool parse_finite(const std::string& v, double* out) {
  if (!plain_number(v)) return false;
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return *end == '\0' && std::isfinite(*out);
}

bool is_bool_flag(const std::string& flag) {
  for (const char* f : {"--benchmark_list_tests", "--benchmark_enable_random_interleaving",
                        "--benchmark_report_aggregates_only", "--benchmark_display_aggregates_only",
                        "--benchmark_counters_tabular", "--benchmark_dry_run"})
    if (flag == f) return true;
  return false;
}

constexpr std::size_t kMaxFilterLength = 10000;  // ab.py --confirm joins one prefix per slower row
constexpr int kMaxFilterNesting = 50;
constexpr long kMaxFilterRepeat = 100;

// The largest count of a {m} or {m,n} repetition (each copies its group):
// (.?){15000} is short and shallow, yet 15,000 states deep to match.
long largest_repeat(const std::string& v) {
  auto number_at = [&v](std::size_t* k) {  // the digits at *k, stepped over; capped
    long n = 0;
    for (; *k < v.size() && std::isdigit(static_cast<unsigned char>(v[*k])); ++*k)
      n = std::min(n * 10 + (v[*k] - '0'), 1000000L);
    return n;
  };
  long most = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\') {
      ++i;  // an escaped character, '{' included
      continue;
    }
    if (v[i] != '{') continue;
    std::size_t k = i + 1;
    most = std::max(most, number_at(&k));
    if (k < v.size() && v[k] == ',') {
      ++k;
      most = std::max(most, number_at(&k));
    }
  }
  return most;
}

// How deep the groups of a pattern nest: '(' and '[' open, escapes skipped.
int nesting(const std::string& v) {
  int depth = 0, deepest = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\') ++i;
    else if (v[i] == '(' || v[i] == '[') deepest = std::max(deepest, ++depth);
    else if ((v[i] == ')' || v[i] == ']') && depth > 0) --depth;
  }
  return deepest;
}

// --benchmark_min_time in Google Benchmark's current forms: seconds ("0.5",
// "0.5s") or iterations ("100x"); nullopt for anything else.
struct MinTime {
  std::optional<double> seconds;
  std::optional<std::int64_t> iterations;
};
std::optional<MinTime> parse_min_time(const std::string& v) {
  double x = 0;
  long long n = 0;
  if (!v.empty() && v.back() == 'x' && parse_long(v.substr(0, v.size() - 1), &n) && n >= 1 && n <= 1000000000)
    return MinTime{std::nullopt, n};
  const std::string seconds = !v.empty() && v.back() == 's' ? v.substr(0, v.size() - 1) : v;
  if (parse_finite(seconds, &x) && x > 0 && x <= 1e6) return MinTime{x, std::nullopt};
  return std::nullopt;
}

// --benchmark_context=KEY=VALUE,...: each item a key (letters, digits, '_',
// '.', '-') that is none of the context's own (env/context_keys.json: the
// fleet groups machines by them), '=', and a value that may hold '='.
std::vector<std::pair<std::string, std::string>> context_items(const std::string& v) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream items(v);
  for (std::string item; std::getline(items, item, ',');) {
    const auto eq = item.find('=');
    out.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    if (eq == std::string::npos) out.back().first += "\x01";  // marks an item without '='
  }
  return out;
}
std::string context_problem(const std::string& v) {
  if (v.empty() || v.back() == ',') return "KEY=VALUE pairs separated by commas";
  std::set<std::string> seen;
  for (const auto& [key, value] : context_items(v)) {
    if (key.empty() || key.back() == '\x01') return "KEY=VALUE pairs separated by commas ('" + shown(key.substr(0, key.size() - 1)) + "' has no '=')";
    if (key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != std::string::npos)
      return "keys of letters, digits, '_', '.' and '-' ('" + shown(key) + "')";
    if (env::is_context_key(key))
      return "a key of your own: " + key + " is one cudabench writes (env/context_keys.json)";
    if (!seen.insert(key).second) return "each key once (" + key + " is given twice)";
  }
  return "";
}

// What `v` must be for `flag`, when it is not: "" when it is fine or the
// flag is not one bench checks.
std::string expected_value(const std::string& flag, bool has_value, const std::string& v) {
  long long n = 0;
  double x = 0;
  if (flag == "--benchmark_repetitions")
    return parse_long(v, &n) && n >= 1 && n <= 100000 ? "" : "a whole number in 1..100000";
  if (flag == "--benchmark_min_time")
    return parse_min_time(v) ? "" : "seconds in (0, 1e6] (0.5 or 0.5s) or iterations (100x, 1 to 1000000000)";
  if (flag == "--benchmark_context") return context_problem(v);
  if (flag == "--benchmark_min_warmup_time") return parse_finite(v, &x) && x >= 0 && x <= 1e6 ? "" : "seconds in [0, 1e6]";
  if (flag == "--benchmark_format" || flag == "--benchmark_out_format")
    return v == "console" || v == "json" || v == "csv" ? "" : "console, json or csv";
  if (flag == "--benchmark_time_unit") return time_unit_named(v) ? "" : "ns, us, ms or s";
  if (flag == "--benchmark_out") return v.empty() ? "a file name" : "";
  if (flag == "--benchmark_filter") {
    // Short, shallow and with small repetitions: no real filter needs more,
    // and each costs RE2 memory ({15000} copies its group 15,000 times).
    if (v.size() > kMaxFilterLength)
      return "a regular expression of at most " + std::to_string(kMaxFilterLength) + " characters";
    if (nesting(v) > kMaxFilterNesting)
      return "a regular expression nested at most " + std::to_string(kMaxFilterNesting) + " groups deep";
    if (largest_repeat(v) > kMaxFilterRepeat)
      return "a regular expression whose {n} repetitions are at most " + std::to_string(kMaxFilterRepeat);
    const std::string bad = filter_problem(v);
    return bad.empty() ? "" : "a regular expression (" + bad + ")";
  }
  if (is_bool_flag(flag)) return !has_value || parse_benchmark_bool(v) ? "" : "true or false";
  if (flag == "--v") return parse_long(v, &n) && n >= 0 && n <= 100 ? "" : "a verbosity in 0..100";
  return "";
}

}  // namespace

std::optional<bool> parse_benchmark_bool(const std::string& value) {
  std::string v = value;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v.empty() || v == "true" || v == "1" || v == "yes" || v == "on" || v == "t" || v == "y") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off" || v == "f" || v == "n") return false;
  return std::nullopt;
}

std::string parse_benchmark_flags(const std::vector<std::string>& args, BenchmarkFlags* out) {
  for (const std::string& a : args) {
    out->pass_on.push_back(a);
    if (a.rfind("--benchmark_", 0) != 0 && a.rfind("--v=", 0) != 0) continue;
    const auto eq = a.find('=');
    const std::string flag = a.substr(0, eq);
    const bool has_value = eq != std::string::npos;
    const std::string v = has_value ? a.substr(eq + 1) : "";
    if (const std::string want = expected_value(flag, has_value, v); !want.empty())
      return flag + "=" + shown(v) + ": expected " + want;
    if (flag == "--benchmark_filter") out->filter = v;
    if (long long n = 0; flag == "--benchmark_repetitions" && parse_long(v, &n)) out->repetitions = n;
    if (flag == "--benchmark_time_unit") out->time_unit = v;
    if (flag == "--benchmark_min_time") {
      // Google Benchmark 1.7 (the one built here) takes plain seconds only.
      const MinTime m = *parse_min_time(v);
      out->user_min_time = m.seconds;
      out->iterations = m.iterations;
      if (m.seconds) out->pass_on.back() = "--benchmark_min_time=" + (v.back() == 's' ? v.substr(0, v.size() - 1) : v);
      else out->pass_on.pop_back();
    }
    if (flag == "--benchmark_context") {  // bench's own: 1.7 refuses a value holding '='
      for (auto& [key, value] : context_items(v)) out->context.emplace_back(key, valid_utf8(value));
      out->pass_on.pop_back();
    }
    if (flag == "--benchmark_out_format") out->out_format = v;
    if (flag == "--benchmark_list_tests") out->list_only = *parse_benchmark_bool(v);
    if (flag == "--benchmark_out") {
      // Google Benchmark's own file is a sink: the results are kept in
      // memory and written whole at the end (no partial or empty file).
      out->out_path = v;
      out->pass_on.back() = "--benchmark_out=/dev/null";
    }
  }
  return "";
}

namespace {

constexpr const char* kBenchmarkFlagsHelp = R"(
Google Benchmark flags (all of them work; the common ones):
  --benchmark_filter=REGEX        e.g. VectorAdd/cpu, VectorAdd/cuda_v4, Transfer, MnistTrain
                                  (matched by RE2 against the names results carry; '-' negates)
  --benchmark_list_tests          list the benchmarks and exit
  --benchmark_min_time=TIME       per benchmark: seconds (0.1 or 0.1s) or iterations (100x)
  --benchmark_repetitions=N       repeat, then report mean/median/stddev/cv
  --benchmark_time_unit=ns|us|ms|s  the unit of every row
  --benchmark_context=KEY=VALUE,...  your own facts in the context (not a key cudabench writes)
  --benchmark_out=FILE            also write results: whole after each benchmark, never partial
  --benchmark_out_format=json|console|csv
  --benchmark_format=console|json|csv
)";

// Flags whose values are typed here after parsing.
struct RawFlags {
  std::string env_format, explain, check, l2_flush = "read";
};

void add_flags(CLI::App& app, BenchOptions* o, RawFlags* raw) {
  app.add_option("--env", raw->env_format, "print the environment report and exit: text (default) or json")
      ->expected(0, 1)
      ->default_str("text")
      ->check(CLI::IsMember({"", "text", "json"}));
  app.add_option("--env-out", o->env_out, "with --env: write the report to FILE instead of stdout");
  app.add_option("--check", raw->check,
                 "with --env: exit 1 when any verdict is an error (--check=python: any verdict on the user's own "
                 "Python environments); with --explain: take the paste as this machine's, and exit 1 when a cause shows "
                 "here")
      ->expected(0, 1)
      ->check(CLI::IsMember({"", "all", "python"}));
  app.add_option("--explain", raw->explain,
                 "name the CUDA set-up failure behind a pasted error message ('-': read it from stdin) and check "
                 "this machine for its cause (stdin is read up to 64 MiB, and from a pipe for 20 s): exit 0 "
                 "with the answer, 2 when the message is not one cudabench knows");
  app.add_flag("--here", o->here,
               "with --explain: the paste came from this machine, so what this machine shows is offered as its "
               "cause (without it, only when the paste's driver and GPU are this machine's)");
  app.add_flag("--explain-json", o->explain_json, "with --explain: the answer as JSON");
  app.add_option("--python", o->python,
                 "with --env or --explain: also read this Python interpreter, environment or site-packages "
                 "folder (repeatable); the environments in reach are read anyway");
  app.add_flag("--import", o->import,
               "with --env or --explain: each environment's own interpreter imports its torch, jax, tensorflow "
               "and cupy in a child (30 s deadline each) and reports what they see and print");
  app.add_option("--rows", o->rows,
                 "print the rows the benchmark families ask to be tracked, as one --benchmark_filter, and exit: "
                 "default (the default run's), gate (the revision gate's), gate-cpu or gate-gpu")
      ->check(CLI::IsMember({"default", "gate", "gate-cpu", "gate-gpu"}));
  app.add_flag("--require-gpu", o->require_gpu, "exit 3 when no GPU is usable (with --env, or before benchmarks)");
  app.add_option("--devices", o->devices,
                 "GPUs to run the GPU benchmarks on: 'all' or CUDA ordinals such as 0,2 (default 0); with "
                 "more than one, names end in /dev:N");
  app.add_option("--l2-flush", raw->l2_flush,
                 "what evicts the L2 cache before a timed GPU kernel whose working set is 8x L2 or more "
                 "(smaller ones are timed back to back over rotating buffers): read (a kernel reads 2x L2, "
                 "leaving clean lines), memset (writes it, leaving dirty lines) or none (one launch, warm "
                 "cache, at every size)")
      ->capture_default_str()
      ->check(CLI::IsMember({"read", "memset", "none"}));
  app.add_option("--stall-seconds", o->stall_seconds,
                 "end the run (exit 3, finished rows kept) when no benchmark finishes for this long, as when a "
                 "stuck GPU never answers: default 600 s + 20 s per repetition and second of "
                 "--benchmark_min_time (1 s for Nx); 0: no limit")
      ->check(finite_range(0, 1e7));
}

// --stall-seconds when not given: ample for any row that makes progress.
double default_stall_seconds(const BenchmarkFlags& b) {
  return 600 + 20.0 * static_cast<double>(b.repetitions) * (b.iterations ? 1.0 : b.user_min_time.value_or(0.5));
}

// Flags that only go together, said in one line; 0 when all is well.
int check_combinations(const CLI::App& app, const BenchOptions& o) {
  if (!o.env_format && (!o.check.empty() || !o.env_out.empty()) && !(o.explain && o.env_out.empty() && o.check == "all")) {
    std::cerr << "bench: --check and --env-out go with --env (and --check, alone, with --explain)\n";
    return kExitBadInput;
  }
  if (o.env_format && !app.remaining().empty()) {
    std::cerr << "bench: " << shown(app.remaining().front()) << " goes with benchmarks, not --env"
              << " (the report goes to stdout or --env-out)\n";
    return kExitBadInput;
  }
  if (!o.rows.empty() && (o.env_format || o.explain || !app.remaining().empty() || o.require_gpu)) {
    std::cerr << "bench: --rows takes nothing else\n";
    return kExitBadInput;
  }
  if (o.explain && (o.env_format || !app.remaining().empty() || o.require_gpu)) {
    std::cerr << "bench: --explain takes only the message (and --here, --explain-json, --check, --python, --import)\n";
    return kExitBadInput;
  }
  if (!o.explain && (o.here || o.explain_json)) {
    std::cerr << "bench: --here and --explain-json go with --explain\n";
    return kExitBadInput;
  }
  if (!o.env_format && !o.explain && (o.import || !o.python.empty())) {
    std::cerr << "bench: --python and --import go with --env or --explain\n";
    return kExitBadInput;
  }
  for (const auto& p : o.python)
    if (const std::string bad = env::python_path_problem(p); !bad.empty()) {
      std::cerr << "bench: " << bad << "\n";
      return kExitBadInput;
    }
  return 0;
}

// Whether `path` (through links) lies in the folder `folder`.
bool inside_folder(const std::string& path, const std::string& folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) return false;
  const auto dir = std::filesystem::weakly_canonical(folder, ec).string() + "/";
  const auto file = std::filesystem::weakly_canonical(path, ec).string();
  return !ec && file.rfind(dir, 0) == 0;
}

// The output files, checked now rather than after the run: writable, and
// none of bench's inputs (the dataset, a --python interpreter).
int check_writable_outputs(const BenchOptions& o) {
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--benchmark_out", o.benchmark.out_path},
                                   {"--env-out", o.env_out}}) {
    if (path.empty()) continue;
    std::string input = data::dataset_file_named(path);
    if (!input.empty()) input = "the dataset's " + input;
    for (const auto& p : o.python)
      if (input.empty() && (same_file(path, p) || inside_folder(path, p)))
        input = (same_file(path, p) ? "the interpreter " : "in the Python environment ") + p;
    if (std::string why; !input.empty() || !check_writable(path, &why)) {
      std::cerr << "bench: " << flag << "=" << visible(path) << ": "
                << (input.empty() ? "cannot write: " + why : "that is " + input + ", an input: give another file") << "\n";
      return kExitBadInput;
    }
  }
  return 0;
}

}  // namespace

std::optional<int> parse_options(int argc, char** argv, BenchOptions* o) {
  CLI::App app{"cudabench: CUDA vector-add, copy and LibTorch training benchmarks, and an "
               "environment report of every CUDA version in play"};
  app.allow_extras();
  app.footer(kBenchmarkFlagsHelp);
  RawFlags raw;
  add_flags(app, o, &raw);
  if (auto rc = parse_command_line(app, argc, argv, "bench")) return rc;
  if (app.count("--env") > 0) o->env_format = raw.env_format.empty() ? "text" : raw.env_format;
  if (app.count("--check") > 0) o->check = raw.check.empty() ? "all" : raw.check;
  if (app.count("--explain") > 0) o->explain = raw.explain;
  o->l2_flush = *parse_l2_flush(raw.l2_flush);  // checked by CLI11
  // Everything the user gave is checked before anything runs or is written.
  if (const int rc = check_combinations(app, *o)) return rc;
  if (const int rc = check_settings("bench")) return rc;
  if (const std::string err = parse_benchmark_flags(app.remaining(), &o->benchmark); !err.empty()) {
    std::cerr << "bench: " << err << "\n";
    return kExitBadInput;
  }
  if (const int rc = check_writable_outputs(*o)) return rc;
  if (o->stall_seconds < 0) o->stall_seconds = default_stall_seconds(o->benchmark);
  // Google Benchmark reads /sys for the CPU's caches and fails (exit 1) without files to open.
  for (const std::string& bad : {env::probe_root_problem(), omp_threads_problem(), open_files_problem(64, "bench")})
    if (!bad.empty()) {
      std::cerr << "bench: " << bad << "\n";
      return kExitBadInput;
    }
  return std::nullopt;
}

}  // namespace cudabench::bench
