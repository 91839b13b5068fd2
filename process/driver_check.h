// The driver check's hooks. cudabench-driver-check (env/driver_check_main.cpp)
// makes every call the driver probe makes, saying "calling NAME" before
// each; load_guard.cpp runs it before bench or train loads any library, and
// when it hung or crashed starts the program again with the driver withheld,
// saying why in CUDABENCH_LIBCUDA_WITHHELD, which withheld_driver() reads.
#pragma once

#include <string>

namespace cudabench::process {

// What the driver probe ran into in cudabench-driver-check, run before
// the program loaded anything (process/load_guard.cpp): empty when libcuda and
// NVML answered in time.
struct DriverProbeFailure {
  std::string call;  // the last call it made: "cuInit", "dlopen libcuda.so.1", "nvmlInit_v2"
  std::string text;  // "libcuda hung in cuInit for 15 s", "libcuda crashed in cuInit (SIGSEGV)"
  bool failed() const { return !text.empty(); }
};
// The load guard's finding (CUDABENCH_LIBCUDA_WITHHELD): the driver hung or
// crashed in the check, and a stub stands in for libcuda in this process.
DriverProbeFailure withheld_driver();
// The deadline of a driver probe: $CUDABENCH_PROBE_SECONDS (common/settings.json).
int probe_seconds();
// Called before each call into libcuda or NVML: in cudabench-driver-check
// it says "calling NAME" on `fd` (trace_probe_calls); elsewhere nothing.
void probe_calling(const char* call);
void trace_probe_calls(int fd);

}  // namespace cudabench::process
