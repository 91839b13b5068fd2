// Benchmark families register at run time, once main() knows whether a GPU
// is usable (env/ decides). Names are paths a regex can cut:
//   VectorAdd/<impl>/n:<elements>, VectorAddFlow/<host memory>/n:<elements>,
//   Copy/<impl>/n:<elements>, Launch/empty_kernel/launches:<per event pair>,
//   Transfer/<h2d|d2h>_<pinned|pageable>/bytes:<bytes>,
//   MnistTrain/<device>[_variant]/batch:<size>, MnistEval/<device>/batch:<size>
#pragma once

#include <string>

#include "options.h"

namespace cudabench::bench {
void register_cpu_vector_add(const RunOptions& run);
// The variant table, cuBLAS, Thrust, the device copies, the seed's flow, the launch overhead.
void register_gpu_vector_add(const RunOptions& run);
void register_transfers(const RunOptions& run);
// No-op without LibTorch. Returns "" or, when $CUDABENCH_DATA_DIR names a
// folder without the dataset, the one line that says so (bad input).
std::string register_torch(const RunOptions& run, bool gpu_usable);
}  // namespace cudabench::bench
