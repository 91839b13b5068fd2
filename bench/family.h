// A benchmark family registers itself. Its file defines the function that
// registers its rows and declares it once, with the rows it asks the
// default run and the revision gate to take:
//
//   CUDABENCH_FAMILY(transfer, 30, Needs::Gpu, add_transfers,
//                    {.default_rows = "Transfer/", .gate_gpu = "Transfer/h2d_pinned/bytes:40000000/"});
//
// and bench/CMakeLists.txt builds it in with one line:
//
//   cudabench_family(families/transfer.cu NEEDS CUDA)
//
// main() registers the declared families in `order` (the order of
// --benchmark_list_tests), once env/ has said what this run can use.
// Names are paths a regex can cut:
//   VectorAdd/<impl>/n:<elements>, VectorAddFlow/<host memory>/n:<elements>,
//   Copy/<impl>/n:<elements>, Launch/empty_kernel/launches:<per event pair>,
//   Transfer/<h2d|d2h>_<pinned|pageable>/bytes:<bytes>,
//   MnistTrain/<device>[_variant]/batch:<size>, MnistEval/<device>/batch:<size>
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace cudabench::bench {

// What this run can use: a GPU (this build's CUDA on a usable driver), and
// LibTorch's GPU on top of it.
struct Usable {
  bool gpu = false;
  bool torch_gpu = false;
};

// Gpu: registered only when a GPU is usable (main says once why not).
enum class Needs { Nothing, Gpu };

// Registers a family's rows; returns "" or the one line of a bad input.
using AddFamily = std::string (*)(const RunOptions& run, const Usable& usable);

// The rows a family asks to be tracked: regexes over row names, each
// matched from the name's start; "" for none. bench --rows=KIND prints
// them for every declared family, joined: the default run
// (scripts/run-bench.sh), the revision gate, the machine history and the
// fleet take their rows from there, so a new family is tracked without
// touching a list.
struct Rows {
  const char* default_rows = "";  // the default run's rows
  const char* gate_cpu = "";      // the gate's rows on every machine
  const char* gate_gpu = "";      // the gate's rows where a GPU is usable
};

// The default run's sizes: 4096 to 2^20 inside the caches, 1e7 and 2^26
// beyond them (docs/comparing-machines.md).
#define CUDABENCH_DEFAULT_SIZES "n:(4096|65536|1048576|10000000|67108864)/"

struct Family {
  const char* name;
  int order;
  Needs needs;
  AddFamily add;
  Rows rows;
};

// Called by CUDABENCH_FAMILY before main(); returns true.
bool declare_family(const Family& family);
// The declared families, in order.
std::vector<Family> declared_families();
// Registers every declared family this run can use, in order; "" or the
// first family's bad input.
std::string register_families(const RunOptions& run, const Usable& usable);
// The declared families' rows of one kind, as one filter: ^(a|b|...), or ""
// when none declares any. kind: default, gate (CPU and GPU), gate-cpu or
// gate-gpu.
std::string rows_filter(const std::string& kind);

}  // namespace cudabench::bench

#define CUDABENCH_FAMILY(name, order, needs, add, ...)        \
  [[maybe_unused]] static const bool cudabench_family_##name = \
      ::cudabench::bench::declare_family({#name, order, ::cudabench::bench::needs, add, __VA_ARGS__})
