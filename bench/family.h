// A benchmark family registers itself. Its file defines the function that
// registers its rows and declares it once:
//
//   CUDABENCH_FAMILY(transfer, 30, Needs::Gpu, add_transfers);
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

struct Family {
  const char* name;
  int order;
  Needs needs;
  AddFamily add;
};

// Called by CUDABENCH_FAMILY before main(); returns true.
bool declare_family(const Family& family);
// The declared families, in order.
std::vector<Family> declared_families();
// Registers every declared family this run can use, in order; "" or the
// first family's bad input.
std::string register_families(const RunOptions& run, const Usable& usable);

}  // namespace cudabench::bench

#define CUDABENCH_FAMILY(name, order, needs, add)                 \
  [[maybe_unused]] static const bool cudabench_family_##name = \
      ::cudabench::bench::declare_family({#name, order, ::cudabench::bench::needs, add})
