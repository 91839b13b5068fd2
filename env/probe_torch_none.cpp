// Built when LibTorch is absent: the report says so.
#include "probe.h"

namespace cudabench::env {
TorchInfo probe_torch(bool) { return TorchInfo{}; }
}  // namespace cudabench::env
