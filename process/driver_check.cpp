// The driver check's hooks (driver_check.h).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/settings.h"
#include "process/driver_check.h"

namespace cudabench::process {
namespace {
int g_trace_fd = -1;  // the check's stdout, in cudabench-driver-check only
}  // namespace

void trace_probe_calls(int fd) { g_trace_fd = fd; }

void probe_calling(const char* call) {
  if (g_trace_fd < 0) return;
  const std::string line = std::string("calling ") + call + "\n";
  [[maybe_unused]] const ssize_t n = ::write(g_trace_fd, line.data(), line.size());
}

int probe_seconds() { return static_cast<int>(setting("CUDABENCH_PROBE_SECONDS")); }

DriverProbeFailure withheld_driver() {
  DriverProbeFailure f;
  const char* why = std::getenv("CUDABENCH_LIBCUDA_WITHHELD");
  if (!why) return f;
  const std::string text = why;
  ::unsetenv("CUDABENCH_LIBCUDA_WITHHELD");
  // The guard's own finding comes with its stub first in LD_PRELOAD; the
  // variable alone (stray, from the user's shell) says nothing of the driver.
  const std::string preload = std::getenv("LD_PRELOAD") ? std::getenv("LD_PRELOAD") : "";
  const std::size_t colon = preload.find(':');
  const std::string first = preload.substr(0, colon);
  const std::string stub = "/withheld/libcuda.so.1";
  if (first.size() < stub.size() || first.compare(first.size() - stub.size(), stub.size(), stub) != 0) return f;
  f.text = text;
  const auto in = text.find(" in "), end = text.find(text.find(" for ") != std::string::npos ? " for " : " (");
  if (in != std::string::npos && end != std::string::npos && end > in) f.call = text.substr(in + 4, end - in - 4);
  // The stub stays in this process; the programs it starts get the user's LD_PRELOAD.
  if (colon == std::string::npos) ::unsetenv("LD_PRELOAD");
  else ::setenv("LD_PRELOAD", preload.substr(colon + 1).c_str(), 1);
  return f;
}

}  // namespace cudabench::process
