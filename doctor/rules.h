// The doctor's rules: each turns part of an env::Report into verdicts a
// person can act on, with evidence and a fix. Plain functions over data, so
// tests cover every case on fake machines without a GPU. rules.cpp holds
// the general rules and evaluate(); scenario_rules.cpp the checks of the
// set-up failures that explain.cpp's scenarios() lists.
#pragma once

#include <string>
#include <vector>

#include "env/env_types.h"

namespace cudabench::doctor {

using env::DriverInfo;
using env::GpuDevice;
using env::LibraryLookup;
using env::Report;
using env::Verdict;
using env::Version;

// Every verdict on a report: the general rules and every scenario's.
std::vector<Verdict> evaluate(const Report& r);
// The verdicts on one of the user's Python environments (python_rules.cpp).
std::vector<Verdict> python_env_verdicts(const env::PythonEnv& e, const Report& r);
// The PyTorch builds the set-up installs and the doctor recommends
// (doctor/stacks.json, compiled in), newest first.
struct TorchBuild {
  std::string torch, cuda;
  int driver_cuda;            // the oldest driver CUDA that runs it
  std::string oldest_driver;
  std::vector<int> sass, ptx;  // the architectures its kernels cover
};
const std::vector<TorchBuild>& torch_builds();
// The newest build this driver runs that covers every GPU here (without a
// driver: the newest covering them); nullptr when none does.
const TorchBuild* fitting_torch_build(const Report& r);
// "install torch 2.10.0, the cu128 build (CUDA 12.8): pip install ...".
std::string torch_build_fix(const TorchBuild& b);
// The torch builds whose kernels run on compute capability major.minor
// (its SASS, or PTX to JIT), newest first.
std::vector<const TorchBuild*> torch_builds_for(int cc_major, int cc_minor);
// A build of a user's package the doctor can recommend (python_fixes.cpp).
struct PackageBuild {
  std::string package;        // torch | jax | tensorflow | cupy | onnxruntime
  std::string name;           // "cupy-cuda12x", "torch 2.10.0 (cu128)"
  std::string cuda;           // the CUDA it is built for
  int driver_cuda;            // the oldest driver CUDA that runs it
  std::string oldest_driver;  // the oldest Linux driver that does
  std::string pip;            // pip's arguments: "install cupy-cuda12x"
  std::string conda;          // conda-forge's specs: "cupy \"cuda-version=12\""
};
// What a fix is for: a driver (its CUDA, 0 unknown) and GPUs; this
// machine's (target_of) or those a pasted error names.
struct GpuKind {
  std::string name;
  int cc_major, cc_minor;
};
struct Target {
  int driver_cuda = 0;
  std::string driver;  // "535.104.05", "" unknown
  std::vector<GpuKind> gpus;
  std::string whose = "this driver";  // how the fix names the driver: "the paste's driver 535.104.05"
};
Target target_of(const Report& r);
// `package`'s builds, newest first (torch's: those covering the target's GPUs).
std::vector<PackageBuild> package_builds(const std::string& package, const Target& t);
// The fix for `package` on target `t`: the newest build its driver runs,
// and the oldest driver each newer build needs (or, when none runs, each
// build's oldest driver). With an environment (and its install of the
// package), the command is that environment's: its own interpreter's pip
// (after uninstalling what would stay in the way), or conda / pixi where
// they installed it.
std::string fix_for(const std::string& package, const Target& t, const env::PythonEnv* e = nullptr,
                    const env::PythonPackage* p = nullptr);
// Did conda install `package` (torch, jax, ...) in `e` (a conda-meta record)?
bool conda_installed(const env::PythonEnv& e, const std::string& package);
// `e`'s pip: "'/opt/my envs/x/bin/python3' -m pip", or "pip".
std::string pip_of(const env::PythonEnv* e);
// `s` as one shell word: as it is when nothing in it needs quoting, else in
// single quotes ("a path with a space" is quoted in every printed command).
std::string shell_word(const std::string& s);
// cuDriverGetVersion's number where a real libcuda answered, else 0.
int usable_driver_cuda(const Report& r);
// The scenarios' checks alone (scenario_rules.cpp).
std::vector<Verdict> scenario_verdicts(const Report& r);
// Scenario 27's causes, "CUDA unknown error" (uvm_rules.cpp): driver.uvm_missing,
// driver.uvm_node_missing, driver.bad_state.
void unified_memory(const Report& r, std::vector<Verdict>& out);

// NVIDIA's minimum Linux driver for a toolkit release (CUDA release notes,
// "CUDA Toolkit and Corresponding Driver Versions"); "" when not in the table.
std::string min_driver_for_toolkit(const Version& toolkit);
// The newest CUDA a Linux driver version runs, by that table (12020 for
// 535.104.05; 0 when older than all of it).
int driver_cuda_of(const Version& driver);
// The minimum driver of a major release under minor-version compatibility
// (CUDA 11+): 11 -> 450.80.02, 12 -> 525.60.13, 13 -> 580.65.06.
std::string min_driver_for_major(int major);

// The driver probe hung or crashed in its child (DriverInfo::probe_failure):
// driver.hung or driver.crashed, with where to look.
Verdict driver_stuck_verdict(const env::DriverInfo& d);

// Does the driver (its CUDA version from cuDriverGetVersion, and its version
// string) run this runtime? `who` names the runtime ("this binary's
// runtime", "LibTorch's runtime").
Verdict driver_runtime_verdict(int driver_cuda, const std::string& driver_version,
                               int runtime_version,
                               const std::string& who = "this binary's runtime",
                               const std::string& id = "driver.runtime_compat");

// Does a binary built for `cuda_architectures` (CMake syntax: "80-real;90;
// 120-virtual", "90a-real") run on a GPU of compute capability major.minor:
// with its own machine code (SASS), by JIT from PTX, or not at all?
Verdict arch_verdict(const std::string& cuda_architectures, int cc_major,
                     int cc_minor, const std::string& gpu_name);

// The GPUs whose compute capability is known (CUDA's list, else NVML's),
// alike ones (same name and compute capability) once: "GPUs 0, 1, 2, 3
// (NVIDIA H200)".
std::vector<GpuKind> gpus_with_cc(const Report& r);
// A fatbin as arch_verdict's CMake list: "80-real;90-real;120-virtual".
std::string archs_of(const env::FatbinArchs& f);

// Kernel module vs the user-space driver library (libcuda): an Error when
// they differ and cuInit fails (803, an upgrade without a reboot), Info when
// they differ and cuInit accepts it (forward compatibility).
Verdict module_library_verdict(const DriverInfo& d);

// How one GPU is set up, from NVML: compute mode, MIG, power limit,
// application clocks, ECC errors, PCIe link width, persistence mode.
std::vector<Verdict> gpu_setup_verdicts(const GpuDevice& g);

// A verdict for one library lookup (library.missing, or Ok when it resolves).
Verdict library_verdict(const LibraryLookup& l);

// CUDA_VISIBLE_DEVICES as CUDA reads it: a comma-separated list of indices,
// GPU UUIDs (or unique prefixes of them) and MIG UUIDs, read up to the first
// entry that is not valid (CUDA documents that the devices after it are
// hidden; -1 is the usual way to write "stop here").
struct VisibleDevices {
  std::vector<std::string> used;  // the entries CUDA takes, in order
  std::string stopped_at;         // the first entry it cannot take ("" when none)
  std::string why;                // why not
  std::vector<std::string> repeated;  // entries given twice
};
// `gpu_count` and `uuids` are NVML's (-1 and {} when unknown: then only the
// syntax is checked).
VisibleDevices parse_visible_devices(const std::string& spec, int gpu_count,
                                     const std::vector<std::string>& uuids);

}  // namespace cudabench::doctor
