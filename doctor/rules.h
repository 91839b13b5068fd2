// The rules that turn a Report into verdicts a person can act on. Each rule
// is a plain function over data so tests cover every case without a GPU.
#pragma once

#include <string>
#include <vector>

#include "env_types.h"

namespace cudabench::env {

// NVIDIA's minimum Linux driver for a toolkit release (CUDA release notes,
// "CUDA Toolkit and Corresponding Driver Versions"); "" when not in the table.
std::string min_driver_for_toolkit(const Version& toolkit);
// The minimum driver of a major release under minor-version compatibility
// (CUDA 11+): 11 -> 450.80.02, 12 -> 525.60.13, 13 -> 580.65.06.
std::string min_driver_for_major(int major);

// Does the driver (its CUDA version from cuDriverGetVersion, and its version
// string) run this runtime?
// `who` names the runtime ("this binary's runtime", "LibTorch's runtime").
Verdict driver_runtime_verdict(int driver_cuda, const std::string& driver_version,
                               int runtime_version,
                               const std::string& who = "this binary's runtime",
                               const std::string& id = "driver.runtime_compat");

// Does a binary built for `cuda_architectures` (CMake syntax: "80-real;90;
// 120-virtual", "90a-real") run on a GPU of compute capability major.minor:
// with its own machine code (SASS), by JIT from PTX, or not at all?
Verdict arch_verdict(const std::string& cuda_architectures, int cc_major,
                     int cc_minor, const std::string& gpu_name);

// Kernel module vs the user-space driver library (libcuda): an Error when
// they differ and cuInit fails (803, an upgrade without a reboot), Info when
// they differ and cuInit accepts it (forward compatibility). In doctor.cpp.
Verdict module_library_verdict(const DriverInfo& d);

// How one GPU is set up, from NVML: compute mode, MIG, power limit,
// application clocks, ECC errors, PCIe link width, persistence mode.
std::vector<Verdict> gpu_setup_verdicts(const GpuDevice& g);

std::vector<Verdict> evaluate(const Report& r);

}  // namespace cudabench::env
