// bench's command line, parsed once (parse_options) into a value that
// main() passes on: its own flags, what it reads of Google Benchmark's, and
// the run options every benchmark family's registration takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cudabench::bench {

// What runs between timed kernels to evict the L2 cache.
enum class L2Flush {
  Read,    // a kernel reads a buffer of 2x L2: the cache is left full of clean lines
  Memset,  // cudaMemsetAsync writes it: up to an L2 of dirty lines for the timed kernel to write back
  None,    // nothing: small sizes then measure the cache
};
const char* l2_flush_name(L2Flush f);
std::optional<L2Flush> parse_l2_flush(const std::string& s);

// What the benchmark families are registered with.
struct RunOptions {
  std::vector<int> devices{0};  // CUDA ordinals the GPU families run on
  L2Flush l2_flush = L2Flush::Read;
  std::optional<double> user_min_time;  // --benchmark_min_time, seconds of GPU work per row
  std::optional<std::int64_t> iterations;  // --benchmark_min_time=Nx: N iterations per row
};

// The Google Benchmark flags bench reads, checked before Google Benchmark
// sees them (it aborts on some bad values, --benchmark_repetitions=-3, and
// takes any word as "true"). Flags it does not know are left to Google
// Benchmark, which rejects unknown ones.
struct BenchmarkFlags {
  std::string filter = ".";
  std::string out_path;  // --benchmark_out: written by bench, whole, after each benchmark
  std::string out_format = "json";
  bool list_only = false;
  std::optional<double> user_min_time;      // --benchmark_min_time=0.5 or 0.5s
  std::optional<std::int64_t> iterations;   // --benchmark_min_time=100x
  std::int64_t repetitions = 1;             // --benchmark_repetitions
  std::string time_unit;                    // --benchmark_time_unit, "" when not given
  std::vector<std::pair<std::string, std::string>> context;  // --benchmark_context=KEY=VALUE,...
  std::vector<std::string> pass_on;  // for benchmark::Initialize, --benchmark_out made a sink
};
// Fills `out` from `args` (the arguments bench does not parse itself);
// returns "" or one line naming the flag and what it expects. The filter is
// a regular expression RE2 compiles (POSIX syntax, as Google Benchmark's; a
// leading '-' negates: filter.h). --benchmark_min_time takes Google
// Benchmark's current forms (0.5, 0.5s, 100x) for the 1.7 library built
// here; --benchmark_context is bench's, refusing the keys bench writes.
std::string parse_benchmark_flags(const std::vector<std::string>& args, BenchmarkFlags* out);
// A Google Benchmark true/false flag's value (true, false, 1, 0, yes, no,
// on, off, t, f, y, n, any case; "" is true, as for a bare --flag), or
// nullopt for anything else.
std::optional<bool> parse_benchmark_bool(const std::string& value);

// "--devices" as nvbench takes it: "all", or a comma-separated list of CUDA
// ordinals ("0,2"), each < `available`, none twice. Throws
// std::invalid_argument with a one-line message naming the bad part.
std::vector<int> parse_devices(const std::string& spec, int available);

// Everything on bench's command line.
struct BenchOptions {
  std::optional<std::string> env_format;  // --env: "text" or "json"
  std::string env_out;                    // --env-out
  std::string check;  // --check: "" not given; "all" (every verdict) or "python" (the user's environments alone)
  bool require_gpu = false;               // --require-gpu
  std::string rows;                       // --rows: "" not given; default, gate, gate-cpu or gate-gpu
  std::optional<std::string> explain;     // --explain TEXT ('-': stdin)
  bool here = false;                      // --here: the pasted error came from this machine
  bool explain_json = false;              // --explain-json: the answer as JSON
  std::vector<std::string> python;        // --python PATH (repeatable): environments to scan besides those found
  bool import = false;                    // --import: each environment's interpreter imports its packages
  std::string devices;                    // --devices, "" when not given
  L2Flush l2_flush = L2Flush::Read;
  double stall_seconds = -1;              // --stall-seconds (parse_options resolves the default; 0: none)
  BenchmarkFlags benchmark;
};
// nullopt to go on, else the exit code: 0 after --help, 2 for a misuse
// (said in one line). The output files are checked to be writable.
std::optional<int> parse_options(int argc, char** argv, BenchOptions* out);

}  // namespace cudabench::bench
