// Built when LibTorch is absent: the Mnist and torch benchmarks say why once.
#include "bench_support.h"
#include "registry.h"

namespace cudabench::bench {
std::string register_torch(const RunOptions&, bool) {
  add_note("cudabench: LibTorch benchmarks not built: this build has no LibTorch (see the configure messages and "
           "docs/building.md: LibTorch)");
  return "";
}
}  // namespace cudabench::bench
