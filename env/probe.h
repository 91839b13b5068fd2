// Probes: each fills one part of env::Report from the running process and
// the machine. collect() runs them all; it is the one place that decides
// whether a GPU is usable and why not. The doctor (doctor/) judges what
// they found.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "elf.h"
#include "env_types.h"
#include "process/driver_check.h"

namespace cudabench::env {

// Driver: /proc, /dev, libcuda.so.1 and libnvidia-ml.so.1 through dlopen
// (never a link-time dependency, so this binary starts without a driver).
// `root` is "/" on a real machine (see probe_root()).
DriverInfo probe_driver(const std::string& root = "/");
// The same without loading libcuda or NVML: /proc, /dev, CUDA_VISIBLE_DEVICES.
DriverInfo probe_driver_files(const std::string& root = "/");
// The driver check's hooks (process/driver_check.h), as the probes call them.
using process::DriverProbeFailure;
using process::probe_calling;
using process::probe_seconds;
using process::trace_probe_calls;
using process::withheld_driver;
// What the machine shows of the driver outside libcuda and NVML: kernel
// modules (nvidia, nouveau) and their files, Secure Boot, device nodes, the
// NVIDIA PCI functions and the driver bound to each, a running fabric
// manager, WSL, a container. Files under `root`.
SystemInfo probe_system(const std::string& root = "/");
// "/" unless $CUDABENCH_PROBE_ROOT names a fake tree (tests).
std::string probe_root();
// "" when $CUDABENCH_PROBE_ROOT is unset or a folder, else one line naming it
// (a bad input: without it every probe would report an empty machine).
std::string probe_root_problem();
// Every GPU NVML lists, in NVML's order, with what it says of each.
std::vector<NvmlGpuInfo> probe_nvml_gpus();
// Whether the loader finds `name` (dlopen, first in `first_dir` when given,
// as cuDNN looks beside itself), and when not, which of `search_dirs` holds a
// copy.
LibraryLookup look_up_library(const std::string& name, const std::string& needed_by,
                              const std::vector<std::string>& search_dirs,
                              const std::string& first_dir = "");
// Folders where CUDA libraries sit on this machine but the loader may not
// look: every toolkit's lib folders, pip wheels' nvidia/*/lib, conda's lib.
std::vector<std::string> library_search_dirs(const std::vector<ToolkitInstall>& toolkits,
                                             const std::vector<LoadedLibrary>& loaded);
// The libraries loaded later by name that this process will want: cuDNN's
// parts beside the loaded libcudnn, LibTorch's NVRTC.
std::vector<LibraryLookup> probe_lazy_libraries(const Report& r);
// The GPUs through the driver API (libcuda via dlopen), each with NVML's
// view (matched by PCI bus id) and its NUMA affinity; empty without a driver.
std::vector<GpuDevice> probe_gpus();
// The CUDA runtime this binary links (not compiled in without CUDA).
RuntimeInfo probe_runtime();
// The host: CPU, sockets, cores, threads, kernel, OS, memory, frequency
// governor, transparent huge pages, NUMA nodes. `root` is "/" on a real
// machine; tests point it at a fake tree.
HostInfo probe_host(const std::string& root = "/");
// The NUMA node and nearby CPUs of the PCI device `bus_id` ("0000:19:00.0")
// under `sys_root` ("/sys"); node -1 and cpus "" when unknown.
void pci_numa_affinity(const std::string& sys_root, const std::string& bus_id, int* node,
                       std::string* cpus);
LibraryVersions probe_library_versions();
// LibTorch's view (probe_torch.cpp when LibTorch is linked, else "absent").
// Without `driver_answered` it never asks LibTorch for a GPU (a stuck
// driver would hang it).
TorchInfo probe_torch(bool driver_answered);
// Shared objects mapped into this process whose names matter here.
std::vector<LoadedLibrary> loaded_libraries();
BuildInfo build_info();

// Toolkit discovery over a described machine, so tests can point it at fake
// trees. from_process() reads the real environment.
struct DiscoveryInput {
  std::map<std::string, std::string> env;  // PATH, CUDA_HOME, CUDA_PATH, CONDA_PREFIX, VIRTUAL_ENV
  std::vector<std::string> system_roots{"/usr/local", "/opt"};  // scanned for cuda, cuda-X.Y
  std::vector<std::string> site_packages;  // Python site-packages to scan for nvidia/* wheels
  static DiscoveryInput from_process(const std::vector<LoadedLibrary>& loaded);
};
std::vector<ToolkitInstall> discover_toolkits(const DiscoveryInput& in);
// One folder: is it a toolkit, which version, what does it hold. nullopt when
// it holds none of nvcc, the runtime headers or libcudart.
std::optional<ToolkitInstall> inspect_toolkit(const std::string& root);
// The pip wheel layouts inside one site-packages folder (CUDA 13: nvidia/cu13;
// CUDA 12: nvidia/cuda_runtime, nvidia/cuda_nvcc, ...).
std::optional<ToolkitInstall> inspect_pip_site(const std::string& site_packages);
// First `nvcc` on a PATH string, "" if none.
std::string find_on_path(const std::string& path_var, const std::string& exe);
// What `argv` prints on stdout (at most 64 KiB, stderr dropped), in a child
// ended within `seconds` (child.h); "" when it cannot run.
std::string command_output(const std::vector<std::string>& argv, int seconds);
// The file a dlopen handle stands for, canonical; "" when unknown.
std::string loaded_path_of(void* handle);

// The user's own Python environments, read from files: never imported or
// run (a `import torch` that crashes or hangs is what the user may be
// asking about), except for imports() below.
struct PythonScanInput {
  // PATH, HOME, VIRTUAL_ENV, CONDA_PREFIX, each manager's setting, ...
  // (python_places.cpp's scan_variables())
  std::map<std::string, std::string> env;
  std::string cwd;  // a project's own .venv, .pixi/envs, .hatch: here or in a parent
  std::vector<std::string> given;          // bench --env --python PATH (in order)
  std::vector<std::string> project_sites;  // the site of the LibTorch this program loaded
  std::string ld_so_conf = "/etc/ld.so.conf";
  std::vector<std::string> default_lib_dirs{"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  bool import = false;       // --import: imports() afterwards
  int import_seconds = 30;   // each import's deadline ($CUDABENCH_IMPORT_SECONDS, 1 to 600)
  double deadline_s = 10;    // the file scan stops there (a hung network mount), and says so
  std::size_t max_envs = 64;
  static PythonScanInput from_process(const std::vector<std::string>& given, bool import, const TorchInfo& torch);
};
// Every environment in reach (PATH's python3 and python, $VIRTUAL_ENV,
// $CONDA_PREFIX, every conda install's envs and ~/.conda/environments.txt,
// pyenv's versions, the user site, the project's venv, the given ones),
// each with its torch / jax / tensorflow / cupy installs: versions, CUDA,
// cuDNN, their nvidia-* wheels, where each CUDA library would be loaded
// from, and installs that shadow others.
PythonScan probe_python(const PythonScanInput& in);
// "" when `path` is an interpreter, an environment or a site folder, else
// one line naming it (bench --python).
std::string python_path_problem(const std::string& path);
// The dynamic loader's answer for `name` needed by `object` (a shared
// object with `dyn`'s RPATH/RUNPATH), from files: DT_RPATH (when there is
// no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, the folders of ld.so.conf,
// the default folders.
PythonLibrary resolve_library(const std::string& object, const ElfDynamic& dyn, const std::string& name,
                              const std::vector<std::string>& ld_library_path,
                              const std::vector<std::string>& conf_dirs,
                              const std::vector<std::string>& default_dirs);
// The folders /etc/ld.so.conf names, its `include` globs followed.
std::vector<std::string> ld_so_conf_dirs(const std::string& conf);
// --import: each package of `env` imported by the environment's own
// interpreter in a child, from "/", ended after `seconds`.
std::vector<PythonImport> imports(const PythonEnv& env, int seconds = 30);

// Peak DRAM bandwidth: memory clock (kHz) x bus width (bits) x 2 (double data
// rate) / 8 bits per byte.
double peak_bandwidth_bytes_per_s(int memory_clock_khz, int bus_width_bits);
// A PCIe link's theoretical data rate per direction: lanes x transfer rate x
// encoding efficiency (8b/10b for gen 1-2, 128b/130b for gen 3-5, 242/256
// FLIT for gen 6) / 8 bits per byte. 0 for an unknown generation or width.
double pcie_bytes_per_s(int generation, int width);
// The peak a copy is held to: the link at the maximum generation of this GPU
// in this system (NvmlGpuInfo::peak_pcie_gen) and its maximum width.
double pcie_peak_bytes_per_s(const NvmlGpuInfo& n);

// Decide usability from the probes (pure: tested on hand-made data).
// `gpus_prohibited`: how many of them NVML reports in compute mode Prohibited.
GpuStatus decide_gpu_status(const DriverInfo& d, const RuntimeInfo& rt,
                            size_t gpus_found, size_t gpus_prohibited = 0);
// The same for LibTorch, whose CUDA may differ from the kernels' runtime:
// on a 12.x driver a CUDA 12.8 LibTorch runs where 13.0 kernels cannot.
GpuStatus decide_torch_gpu_status(const DriverInfo& d, const TorchInfo& t,
                                  size_t gpus_found, size_t gpus_prohibited = 0);

// Every probe's findings, without verdicts (doctor::examine() adds them).
// Cached: the first call probes, later calls return the same report.
const Report& collect();

}  // namespace cudabench::env
