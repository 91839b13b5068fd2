// Built when LibTorch is absent: the Mnist and torch benchmarks say why once.
#include <iostream>

#include "registry.h"

namespace cudabench::bench {
void register_torch(bool) {
  std::cerr << "cudabench: LibTorch benchmarks not built: this build has no LibTorch (see the "
               "configure messages and README: LibTorch)\n";
}
}  // namespace cudabench::bench
