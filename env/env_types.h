// Plain data describing the CUDA stack of one process on one machine: what
// the driver, runtime, libraries, LibTorch and toolkit installs are, and the
// verdicts drawn from them. Probes fill it (probe_*.cpp), the doctor's
// rules judge it (doctor/), printers show it (report.cpp). No CUDA types here, so the
// rules and printers are tested on hand-made data without a GPU.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cudabench::env {

struct Version {
  int major = 0, minor = 0, patch = 0, build = 0;
  bool known() const { return major > 0; }
  std::string str() const;        // "13.0.88" (only the parts that were given)
  std::string major_minor() const;  // "13.0"
  int parts = 0;                  // how many numbers were given
  // "13.0.88", "580.95.05", "V13.0.88", "12.9": leading 'V' and text after
  // the numbers are ignored. Returns an unknown Version on failure.
  static Version parse(std::string_view s);
  // CUDA's integer encoding: 13000 -> 13.0, 12090 -> 12.9.
  static Version from_cuda_int(int v);
  int compare(const Version& o) const;  // <0, 0, >0 over the numbers given
  bool operator<(const Version& o) const { return compare(o) < 0; }
  bool operator==(const Version& o) const { return compare(o) == 0; }
};

struct DriverInfo {
  std::string kernel_module_version;  // /proc/driver/nvidia/version, "" if none
  bool libcuda_found = false;
  std::string libcuda_path;          // the file really loaded
  std::string libcuda_file_version;  // from its name, libcuda.so.580.95.05
  std::string libcuda_error;         // dlerror() when not found
  bool libcuda_is_stub = false;      // the toolkit's link-time stub
  int cuda_version = 0;              // cuDriverGetVersion, e.g. 13000
  int init_result = -1;              // cuInit(0); -1 = not called
  std::string init_error;            // its name and text
  int device_count = 0;              // cuDeviceGetCount after a good cuInit
  bool nvml_found = false;
  std::string nvml_error;  // why NVML is absent or failed ("" when found)
  std::string nvml_driver_version;
  int nvml_cuda_version = 0;
  bool device_nodes_present = false;  // /dev/nvidiactl
  bool visible_devices_set = false;
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES
  int nvml_init_result = -1;       // nvmlInit_v2; -1 = library absent
  std::string nvml_library_path;   // libnvidia-ml.so.1 really loaded
  // When the probe, rehearsed in a child, hung or crashed: what it ran into
  // ("libcuda hung in cuInit for 15 s") and the call. The driver was then
  // left alone: nothing above comes from libcuda or NVML.
  std::string probe_failure, probe_failure_call;
};

// What NVML says of one GPU, matched to the CUDA device by PCI bus id. A
// field NVML did not answer (not supported, no permission) keeps -1 or "".
struct NvmlGpuInfo {
  bool found = false;  // NVML knows a GPU at this PCI bus id
  int nvml_index = -1;     // NVML's own index (its order can differ from CUDA's)
  std::string name;        // "NVIDIA H200"
  std::string pci_bus_id;  // as NVML gives it ("00000000:19:00.0")
  int cc_major = -1, cc_minor = -1;  // nvmlDeviceGetCudaComputeCapability
  std::string uuid, serial;
  int persistence_mode = -1;  // 1 enabled, 0 disabled
  int sm_clock_mhz = -1, mem_clock_mhz = -1;          // now
  int app_sm_clock_mhz = -1, app_mem_clock_mhz = -1;  // application clocks
  int max_sm_clock_mhz = -1, max_mem_clock_mhz = -1;
  double power_limit_w = -1, power_default_w = -1, power_max_w = -1;
  int ecc_current = -1, ecc_pending = -1;  // 1 enabled, 0 disabled
  long long ecc_volatile_corrected = -1, ecc_volatile_uncorrected = -1;
  // pcie_gen_max is what the GPU and the system allow together
  // (nvmlDeviceGetMaxPcieLinkGeneration), the peak copies are held to: in a
  // gen 4 slot a gen 5 GPU moves a gen 4 link's bytes. pcie_gen_gpu_max is
  // the GPU's own (nvmlDeviceGetGpuMaxPcieLinkGeneration), the stand-in when
  // NVML cannot say the first. Never the current link: it drops at idle.
  int pcie_gen = -1, pcie_gen_max = -1, pcie_width = -1, pcie_width_max = -1, pcie_gen_gpu_max = -1;
  int peak_pcie_gen() const { return pcie_gen_max > 0 ? pcie_gen_max : pcie_gen_gpu_max; }
  int mig_current = -1, mig_pending = -1;  // 1 enabled, 0 disabled
  int compute_mode = -1;  // 0 default, 1 exclusive thread, 2 prohibited, 3 exclusive process
  int mig_devices = -1;   // MIG devices (GPU + compute instances) that exist, with MIG on
  bool processes_known = false;
  std::vector<unsigned> compute_pids;  // processes with a CUDA context on it
  std::vector<std::string> compute_names;  // their /proc/<pid>/comm ("" when unreadable)
  int retired_pages_pending = -1;      // 1: pages wait to be retired at the next reset
  int remap_pending = -1, remap_failure = -1;  // row remapping: reset pending, remapping failed
  int remap_uncorrectable_rows = -1;  // rows remapped after uncorrectable errors
  int fabric_state = -1;   // NVLink fabric: 0 not supported, 1 not started, 2 in progress, 3 completed
  int fabric_status = -1;  // its nvmlReturn_t once completed
};

struct GpuDevice {
  int index = 0;  // the CUDA ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  long long total_memory_bytes = 0;
  int memory_clock_khz = 0;  // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
  int bus_width_bits = 0;
  int sm_clock_khz = 0;
  long long l2_bytes = 0;
  std::string pci_bus_id;  // "0000:19:00.0"
  double peak_bandwidth_bytes_per_s = 0;
  int numa_node = -1;       // /sys/bus/pci/devices/<bus id>/numa_node (-1: none or unknown)
  std::string local_cpus;   // .../local_cpulist: the CPUs nearest the GPU
  NvmlGpuInfo nvml;
};

// The host, so that two machines' results say how the machines differ.
struct HostInfo {
  std::string cpu_model;
  std::string microcode;  // /proc/cpuinfo's first "microcode" (x86)
  std::string cpu_flags;  // its first "flags" (Arm: "Features"): what the CPU (or the hypervisor) offers
  // Which CPU it is, when the model name is generic (a VM's "AMD EPYC"):
  // "<vendor_id> family F model M stepping S" (x86), "implementer I
  // architecture A part P variant V revision R" (Arm); "" when cpuinfo says none.
  std::string cpu_id;
  int sockets = 0, cores = 0, threads = 0;
  std::string kernel;          // /proc/sys/kernel/osrelease
  std::string os;              // PRETTY_NAME of /etc/os-release
  long long memory_bytes = 0;  // MemTotal
  std::string cpu_governor;    // cpu0's cpufreq scaling_governor ("" without cpufreq)
  std::string thp;             // transparent huge pages: always | madvise | never
  int numa_nodes = 0;
};

struct RuntimeInfo {
  bool compiled_in = false;  // this binary was built with CUDA
  int built_version = 0;     // CUDART_VERSION at build time
  int loaded_version = 0;    // cudaRuntimeGetVersion
  std::string loaded_path;   // libcudart really loaded ("" if static)
};

struct LoadedLibrary {
  std::string name;  // "libcublas.so.13"
  std::string path;  // resolved path of the loaded file
};

struct LibraryVersions {
  int cublas_built = 0;   // CUBLAS_VERSION of the headers we built with
  int cublas_loaded = 0;  // cublasGetProperty of the library loaded
  long cudnn_loaded = 0;  // cudnnGetVersion of the library loaded, if any
};

struct TorchInfo {
  bool compiled_in = false;  // this binary links LibTorch
  std::string version;       // TORCH_VERSION
  int cuda_version = 0;      // CUDA LibTorch was built with (13000)
  long cudnn_built = 0;      // cuDNN LibTorch was built with (91900)
  long cudnn_runtime = 0;    // cuDNN LibTorch loaded
  bool cuda_available = false;
  int device_count = 0;
  std::string library_path;  // where libtorch_cpu.so was loaded from
  // The NCCL in this process (LibTorch's CUDA build loads it), or the
  // system's libnccl.so.2: ncclGetVersion, and the file.
  std::string nccl_version;  // "2.27.3"; "" when none
  std::string nccl_path;
  std::string nccl_error;    // why there is none
};

struct ToolkitInstall {
  std::string root;          // canonical path
  std::string kind;          // system | conda | conda-cudatoolkit | pip | other
  Version version;
  std::string version_source;  // which file gave the version
  bool has_nvcc = false;
  bool has_runtime = false;  // libcudart present
  bool has_headers = false;  // cuda_runtime_api.h present
  std::vector<std::string> found_via;  // "/usr/local/cuda", "PATH", "CUDA_HOME", ...
  std::string summary() const;  // "compiler + runtime", "runtime only", ...
};

struct BuildInfo {
  std::string cuda_toolkit_version;  // CUDAToolkit_VERSION at configure
  std::string cuda_toolkit_root;
  std::string nvcc_path;
  std::string cuda_architectures;  // CMAKE_CUDA_ARCHITECTURES
  std::string cxx_compiler;
  std::string build_type;
  std::string torch_version;  // LibTorch found at configure ("" if none)
  std::string git_revision;
  std::string stack;  // the kernels' CUDA and the LibTorch: "cuda13.0-torch2.11.0"
};

struct Verdict {
  enum class Level { Ok, Info, Warning, Error };
  std::string id;  // "driver.runtime_compat", ...
  Level level = Level::Info;
  std::string message;
  std::string fix;  // what to do; "" when nothing is needed
  std::vector<std::string> evidence;  // what the probe saw: files, versions, error codes
};

// An NVIDIA PCI function under /sys/bus/pci/devices (vendor 0x10de).
struct PciDevice {
  std::string bus_id;     // "0000:19:00.0"
  std::string device_id;  // "2335" (the PCI device id, hex)
  std::string pci_class;  // "0x030200" (3D controller), "0x068000" (NVSwitch bridge)
  std::string driver;     // the kernel driver bound to it ("nvidia", "nouveau", "vfio-pci"; "" none)
  bool virtual_function = false;  // an SR-IOV VF (a physfn link): vGPU hosts leave many unbound
  bool is_gpu() const { return pci_class.rfind("0x03", 0) == 0; }
  bool is_nvswitch() const { return pci_class.rfind("0x0680", 0) == 0; }
};

// What the machine shows of the driver outside libcuda and NVML, read from
// files under `root` ("/" on a real machine; a fake tree in tests).
struct SystemInfo {
  std::string root = "/";
  std::string kernel_release;          // /proc/sys/kernel/osrelease
  bool nvidia_module_loaded = false;   // /sys/module/nvidia
  bool nouveau_module_loaded = false;  // /sys/module/nouveau
  bool uvm_module_loaded = false;      // /sys/module/nvidia_uvm (CUDA's unified memory; loaded at first use)
  std::vector<std::string> module_files;  // nvidia.ko* under /lib/modules/<release>
  int secure_boot = -1;                // EFI SecureBoot variable: 1 on, 0 off, -1 unknown
  std::vector<std::string> device_nodes;  // /dev/nvidia*, /dev/dxg
  std::vector<PciDevice> pci;          // NVIDIA PCI functions
  bool fabric_manager_running = false;  // an nv-fabricmanager process
  bool wsl = false;                    // /proc/version names Microsoft/WSL
  bool wsl_libcuda = false;            // /usr/lib/wsl/lib/libcuda.so.1 exists
  std::vector<std::string> linux_libcuda;  // libcuda.so.1 in the distribution's own lib folders
  std::string container;               // "docker", "podman", "container" or ""
};

// Where a shared library that is loaded by name (dlopen) comes from: the
// loader's answer, or where on the machine a copy sits when it has none.
struct LibraryLookup {
  std::string name;       // "libcudnn_ops.so.9"
  std::string needed_by;  // "cuDNN 9 (libcudnn.so.9)", "LibTorch", or the pasted error
  std::string resolved;   // the file the loader takes ("" when it finds none)
  std::string error;      // dlerror() when it finds none
  std::vector<std::string> elsewhere;  // copies in folders the loader does not search
};

// The architectures in the CUDA fatbins of one ELF file (its .nv_fatbin
// section): for each sm (90 = sm_90), how many fatbin containers hold
// machine code (SASS) or PTX for it.
struct FatbinArchs {
  std::string file;
  std::string error;   // why it was not read ("" when read)
  int containers = 0;
  std::map<int, int> sass, ptx;
  bool read() const { return error.empty() && containers > 0; }
};
// ---- the user's own Python environments, read from files (probe_python.cpp) ----

// A CUDA library as one package's code would get it: the dynamic loader's
// search from the package's library (DT_RPATH without DT_RUNPATH, then
// LD_LIBRARY_PATH, DT_RUNPATH, the folders of ld.so.conf, the default
// folders), walked over files, nothing loaded.
struct PythonLibrary {
  std::string name;         // "libcudart.so.13"
  std::string resolved;     // the file the loader would take ("" when none)
  std::string via;          // RPATH | LD_LIBRARY_PATH | RUNPATH | ld.so.conf | default
  std::string version;      // of that file (its versioned name or its wheel), "" unknown
  std::string own;          // the package's own copy (an nvidia-* wheel it points at), "" none
  std::string own_version;
  bool shadowed() const { return !own.empty() && !resolved.empty() && resolved != own; }
};

// One install of torch, jax (jaxlib and its CUDA plugin), tensorflow or cupy.
struct PythonPackage {
  std::string name;      // torch | jax | tensorflow | cupy
  std::string version;   // "2.11.0+cu130"
  std::string location;  // its folder (or the file that told)
  std::string site;      // the site folder it is in
  std::string build;     // cuda | rocm | cpu | unknown (no evidence told)
  std::string build_from;  // the evidence that named it: "torch/version.py", "the local tag of 2.5.1+cu124", ...
  std::string cuda;      // the CUDA it is built for: "13.0", "12" (major only); "" when not a CUDA build
  std::string rocm;      // a ROCm build's ROCm version ("6.2"), "" none
  std::vector<std::string> unread;  // evidence that could not be read, and why: "torch/version.py: a FIFO, not a file"
  std::string cudnn;     // the cuDNN it asks for, "" unknown
  std::vector<std::string> requires_cuda;  // its nvidia-* / cuda-toolkit requirements (dist-info)
  std::string kernel_library;  // the file whose fatbin holds its kernels ("" none)
  FatbinArchs fatbin;          // that file's architectures (the doctor reads it)
  std::vector<std::string> archs_listed;  // architectures its build info lists (tensorflow)
  std::vector<PythonLibrary> libraries;
  std::string shadowed_by;  // the install of the same package Python imports instead ("" none)
};

// `--import`: the environment's own interpreter imports the package in a
// child with a deadline.
struct PythonImport {
  std::string package;
  std::string error;  // why there is no answer (hung, crashed, import failed); "" answered
  std::string version;
  bool cuda_available = false;
  int device_count = 0;
  std::vector<std::string> warnings;  // what it printed (warnings, log lines): its last 20 lines
};

struct PythonEnv {
  std::string prefix;       // the environment's folder (a site folder for a bare site)
  std::string kind;         // venv | conda | pyenv | system | user-site | site
  std::string interpreter;  // its bin/python3 ("" none)
  std::string python;       // "3.11"
  std::vector<std::string> found_via;  // PATH, VIRTUAL_ENV, CONDA_PREFIX, conda envs, --python, ...
  std::vector<std::string> sites;      // in import order (the user site first where Python puts it)
  std::vector<std::string> cuda_wheels;  // nvidia-* / cuda-toolkit wheels installed: "nvidia-cudnn-cu13 9.19.0.56"
  std::string conda_cuda;   // conda's cudatoolkit / cuda-cudart package, "cudatoolkit 11.8.0"; "" none
  // conda-meta's records of the packages conda installed here (pytorch,
  // pytorch-cuda, jaxlib, tensorflow, cupy): "pytorch 2.1.0 py3.10_cuda12.1_cudnn8.9.2_0"
  std::vector<std::string> conda_packages;
  bool pixi = false;        // a pixi project's environment (.pixi/envs/*): fixes use pixi
  std::vector<std::string> unread;  // what could not be read and why: "<site>: Permission denied"
  std::vector<PythonPackage> packages;
  std::vector<PythonImport> imports;
  std::vector<Verdict> verdicts;  // the doctor's, about this environment
};

struct PythonScan {
  bool scanned = false;     // asked for (bench --env, --explain)
  bool imported = false;    // with --import
  std::vector<PythonEnv> envs;
  std::string stopped;      // why the scan stopped early (its deadline, its bound), "" when it did not
  double seconds = 0;       // how long the file scan took
};

const char* level_name(Verdict::Level l);

struct GpuStatus {
  bool usable = false;
  std::string reason;  // one line, why not (or "" when usable)
};

struct Report {
  BuildInfo build;
  HostInfo host;
  DriverInfo driver;
  RuntimeInfo runtime;
  std::vector<GpuDevice> gpus;
  std::vector<LoadedLibrary> loaded;
  LibraryVersions libs;
  TorchInfo torch;
  std::vector<ToolkitInstall> toolkits;
  std::string nvcc_on_path;  // first nvcc on PATH, "" if none
  std::map<std::string, std::string> env_vars;  // the ones that matter, when set
  std::vector<std::string> path_cuda_entries;   // PATH entries mentioning cuda
  GpuStatus status;        // the kernels' (this build's CUDA runtime)
  GpuStatus torch_status;  // LibTorch's (its own CUDA)
  SystemInfo system;
  std::vector<NvmlGpuInfo> nvml_gpus;  // every GPU NVML lists, whether CUDA can use it or not
  FatbinArchs binary_fatbin;  // this program's own kernels
  FatbinArchs torch_fatbin;   // libtorch_cuda.so's
  std::vector<LibraryLookup> lazy_libraries;  // libraries loaded later by name (cuDNN's parts, NVRTC)
  PythonScan python;  // the user's own Python environments (bench --env, --explain)
  std::vector<Verdict> verdicts;
};

}  // namespace cudabench::env
