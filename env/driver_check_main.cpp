// cudabench-driver-check: the driver probe's calls (libcuda, its GPUs,
// NVML), each announced on stdout as "calling NAME"; "calling nothing: ..."
// last, then exit 0 when all returned. load_guard.cpp runs it with a
// deadline: a stuck GPU hangs it here, a broken driver crashes it (or ends
// it, without that last line) here, never in bench or train. An error of
// its own is exit 3, said by its last line, never a signal that would read
// as the driver's.
#include <unistd.h>

#include <exception>

#include "probe.h"

int main() {
  using namespace cudabench::env;
  trace_probe_calls(STDOUT_FILENO);
  try {
    const DriverInfo d = probe_driver(probe_root());
    if (d.libcuda_found && d.init_result == 0) probe_gpus();
    probe_nvml_gpus();
  } catch (const std::exception&) {
    probe_calling("nothing: the check's own error");
    return 3;
  }
  probe_calling("nothing: done");
  return 0;
}
