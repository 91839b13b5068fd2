#include "rules.h"

#include <unistd.h>

#include <map>
#include <regex>
#include <sstream>

#include "env/probe.h"

namespace cudabench::doctor {
using namespace env;
namespace {
using L = Verdict::Level;
Verdict make(std::string id, L level, std::string message, std::string fix = "") {
  return Verdict{std::move(id), level, std::move(message), std::move(fix)};
}
std::string cuda_str(int v) { return Version::from_cuda_int(v).major_minor(); }
// The processes that keep others off an exclusive GPU: not this one, and
// not the MPS server (its clients share the GPU through it).
std::vector<unsigned> other_holders(const NvmlGpuInfo& n) {
  std::vector<unsigned> out;
  for (std::size_t i = 0; i < n.compute_pids.size(); ++i) {
    const std::string name = i < n.compute_names.size() ? n.compute_names[i] : "";
    if (n.compute_pids[i] != static_cast<unsigned>(::getpid()) && name.rfind("nvidia-cuda-mps", 0) != 0)
      out.push_back(n.compute_pids[i]);
  }
  return out;
}
}  // namespace

namespace {
const std::map<std::pair<int, int>, std::string>& toolkit_drivers() {
  static const std::map<std::pair<int, int>, std::string> table = {
      {{9, 0}, "384.81"},     {{9, 1}, "387.26"},     {{9, 2}, "396.26"},
      {{10, 0}, "410.48"},    {{10, 1}, "418.39"},    {{10, 2}, "440.33"},
      {{11, 0}, "450.51.06"}, {{11, 1}, "455.32.00"}, {{11, 2}, "460.32.03"},
      {{11, 3}, "465.19.01"}, {{11, 4}, "470.82.01"}, {{11, 5}, "495.29.05"},
      {{11, 6}, "510.47.03"}, {{11, 7}, "515.65.01"}, {{11, 8}, "520.61.05"},
      {{12, 0}, "525.60.13"}, {{12, 1}, "530.30.02"}, {{12, 2}, "535.54.03"},
      {{12, 3}, "545.23.06"}, {{12, 4}, "550.54.14"}, {{12, 5}, "555.42.02"},
      {{12, 6}, "560.28.03"}, {{12, 8}, "570.26"},    {{12, 9}, "575.51.03"},
      {{13, 0}, "580.65.06"},
  };
  return table;
}
}  // namespace

std::string min_driver_for_toolkit(const Version& t) {
  auto it = toolkit_drivers().find({t.major, t.minor});
  return it == toolkit_drivers().end() ? "" : it->second;
}

int driver_cuda_of(const Version& driver) {
  int best = 0;
  for (const auto& [cuda, oldest] : toolkit_drivers())
    if (driver.known() && !(driver < Version::parse(oldest))) best = cuda.first * 1000 + cuda.second * 10;
  return best;
}

std::string min_driver_for_major(int major) {
  switch (major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
    default: return "";
  }
}

Verdict driver_runtime_verdict(int driver_cuda, const std::string& driver_version,
                               int runtime_version, const std::string& who, const std::string& id) {
  const Version rt = Version::from_cuda_int(runtime_version);
  const Version dc = Version::from_cuda_int(driver_cuda);
  const std::string drv = driver_version.empty() ? "" : " (driver " + driver_version + ")";
  if (!rt.known()) return make(id, L::Info, "no CUDA runtime in this binary");
  if (!dc.known())
    return make(id, L::Info, "no driver, so the CUDA " + rt.major_minor() +
                                 " runtime cannot be checked against one");
  if (driver_cuda >= runtime_version)
    return make(id, L::Ok, "the driver supports CUDA " + dc.major_minor() + drv +
                               ", at least " + who + " CUDA " + rt.major_minor());
  const std::string need = min_driver_for_toolkit(rt);
  const std::string need_txt = need.empty() ? "a driver for CUDA " + rt.major_minor()
                                            : "driver >= " + need;
  if (dc.major == rt.major && rt.major >= 11) {
    const std::string floor = min_driver_for_major(rt.major);
    const Version dv = Version::parse(driver_version);
    if (!floor.empty() && dv.known() && dv < Version::parse(floor))
      return make(id, L::Error,
                  "the driver supports CUDA " + dc.major_minor() + drv +
                      ", older than " + who + " CUDA " + rt.major_minor() +
                      ", and is below " + floor + ", the minimum for CUDA " +
                      std::to_string(rt.major) + ".x minor-version compatibility",
                  "install " + need_txt);
    return make(id, L::Warning,
                "the driver supports CUDA " + dc.major_minor() + drv +
                    ", older than " + who + " CUDA " + rt.major_minor() +
                    ": it runs by minor-version compatibility, but only code with SASS "
                    "for the GPU (PTX from a newer toolkit cannot be JIT-compiled: "
                    "cudaErrorUnsupportedPtxVersion) and without features of the newer driver",
                "install " + need_txt + " for full support");
  }
  return make(id, L::Error,
              "the driver supports only CUDA " + dc.major_minor() + drv +
                  ", but " + who + " is CUDA " + rt.major_minor() +
                  ": every CUDA call fails with cudaErrorInsufficientDriver (35)",
              "install " + need_txt + ", or build with a CUDA " +
                  std::to_string(dc.major) + ".x toolkit");
}

Verdict arch_verdict(const std::string& archs, int cc_major, int cc_minor,
                     const std::string& gpu_name) {
  const std::string id = "binary.arch";
  const int cc = cc_major * 10 + cc_minor;
  const std::string who = gpu_name + " (sm_" + std::to_string(cc) + ")";
  if (archs.empty() || archs == "all" || archs == "all-major" || archs == "native")
    return make(id, L::Info, "built for CUDA architectures '" + archs +
                                 "': cannot tell from the build whether " + who +
                                 " has SASS");
  // Each entry: NN[a|f][-real|-virtual]; plain NN means SASS + PTX.
  static const std::regex re(R"(([0-9]+)([af]?)(?:-(real|virtual))?)");
  bool sass = false;
  int best_ptx = 0;
  std::stringstream ss(archs);
  std::string item;
  while (std::getline(ss, item, ';')) {
    std::smatch m;
    if (!std::regex_match(item, m, re)) continue;
    const int a = std::stoi(m[1]);
    const bool specific = !m[2].str().empty();  // 90a: only that exact chip
    const std::string kind = m[3];
    if (kind != "virtual") {
      // SASS runs on the same major and any minor >= its own (not across
      // majors); arch-specific 'a' SASS runs on that exact version only.
      if (a / 10 == cc / 10 && (specific ? a == cc : a <= cc)) sass = true;
    }
    if (kind != "real" && !specific && a <= cc) best_ptx = std::max(best_ptx, a);
  }
  if (sass)
    return make(id, L::Ok, "this binary carries SASS for " + who);
  if (best_ptx)
    return make(id, L::Warning,
                "no SASS for " + who + ": the driver JIT-compiles the compute_" +
                    std::to_string(best_ptx) +
                    " PTX at first launch (slow start, and none of the chip's own instructions)",
                "rebuild with -DCMAKE_CUDA_ARCHITECTURES=\"" + std::to_string(cc) +
                    "-real;...\" (or add it to the list)");
  return make(id, L::Error,
              "this binary has neither SASS nor compatible PTX for " + who +
                  " (built for " + archs + "): kernels fail with "
                  "cudaErrorNoKernelImageForDevice (209)",
              "rebuild with -DCMAKE_CUDA_ARCHITECTURES including " + std::to_string(cc));
}

namespace {

// Compute mode: Prohibited, or exclusive and held by another process.
void compute_mode(const NvmlGpuInfo& n, const std::string& who, const std::string& smi, std::vector<Verdict>& out) {
  if (n.compute_mode == 2)
    out.push_back(make("gpu.compute_mode", L::Error,
                       who + " is in compute mode Prohibited: no process can create a CUDA context on it",
                       smi + " -c DEFAULT (as root), or use another GPU"));
  else if (const auto holders = other_holders(n); (n.compute_mode == 1 || n.compute_mode == 3) && !holders.empty()) {
    std::string pids;
    for (unsigned p : holders) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    Verdict v = make("gpu.compute_mode", L::Error,
                     who + " is in an exclusive compute mode and process " + pids +
                         " holds it: a new CUDA context fails with CUDA_ERROR_DEVICE_UNAVAILABLE (46, "
                         "\"CUDA-capable device(s) is/are busy or unavailable\")",
                     "wait for or stop process " + pids + ", use another GPU, or " + smi + " -c DEFAULT (as root)");
    v.evidence = {"NVML compute mode: " + std::string(n.compute_mode == 1 ? "Exclusive_Thread" : "Exclusive_Process"),
                  "NVML compute processes: " + pids};
    out.push_back(std::move(v));
  } else if (n.compute_mode == 1 || n.compute_mode == 3)
    out.push_back(make("gpu.compute_mode", L::Info,
                       who + " is in an exclusive compute mode: one process at a time; a second benchmark "
                             "process started beside this one fails with cudaErrorDevicesUnavailable"));
}

// Memory waiting to be retired or remapped, and ECC errors.
void memory_health(const NvmlGpuInfo& n, const std::string& who, const std::string& smi, std::vector<Verdict>& out) {
  if (n.retired_pages_pending == 1 || n.remap_pending == 1 || n.remap_failure == 1) {
    // Uncorrectable errors behind it make kernels fail now; correctable
    // ones only wait for the reset that retires or remaps their memory.
    const bool failing = n.remap_failure == 1 || n.ecc_volatile_uncorrected > 0 || n.remap_uncorrectable_rows > 0;
    Verdict v = make("gpu.needs_reset", failing ? L::Error : L::Warning,
                     who + (n.remap_failure == 1
                                ? " failed to remap a row of bad memory: it must be serviced"
                                : std::string(" has memory waiting to be retired or remapped at the next GPU reset") +
                                      (failing ? ", after uncorrectable errors: until then kernels that touch it fail "
                                                 "with CUDA_ERROR_ECC_UNCORRECTABLE (214)"
                                               : " (after correctable errors)")),
                     n.remap_failure == 1 ? "drain it and have it replaced (RMA)"
                                          : "drain the GPU and reset it (" + smi + " -r, as root, or reboot)");
    v.evidence = {"NVML retired pages pending: " + std::to_string(n.retired_pages_pending),
                  "NVML row remapping pending: " + std::to_string(n.remap_pending) +
                      ", failed: " + std::to_string(n.remap_failure) +
                      ", uncorrectable rows: " + std::to_string(n.remap_uncorrectable_rows),
                  "NVML volatile uncorrected ECC errors: " + std::to_string(n.ecc_volatile_uncorrected)};
    out.push_back(std::move(v));
  }
  if (n.ecc_volatile_uncorrected > 0)
    out.push_back(make("gpu.ecc_errors", L::Warning,
                       who + " has " + std::to_string(n.ecc_volatile_uncorrected) +
                           " uncorrected ECC errors since the driver loaded: its memory is failing or needs a reset",
                       "check nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER; drain and reset the GPU"));
  else if (n.ecc_volatile_corrected > 0)
    out.push_back(make("gpu.ecc_errors", L::Info,
                       who + " has corrected " + std::to_string(n.ecc_volatile_corrected) +
                           " ECC errors since the driver loaded (harmless alone; watch the count)"));
}

}  // namespace

std::vector<Verdict> gpu_setup_verdicts(const GpuDevice& g) {
  std::vector<Verdict> out;
  const NvmlGpuInfo& n = g.nvml;
  if (!n.found) return out;
  const std::string who = "GPU " + std::to_string(g.index) + " (" + g.name + ")";
  // nvidia-smi's -i takes its own index, which is not the CUDA ordinal
  // (CUDA orders fastest first, after CUDA_VISIBLE_DEVICES): name the GPU by
  // its PCI bus id, which both agree on.
  const std::string smi = "nvidia-smi -i " + (g.pci_bus_id.empty() ? std::to_string(g.index) : g.pci_bus_id);
  auto w = [](double x) { return std::to_string(static_cast<long long>(x + 0.5)) + " W"; };
  compute_mode(n, who, smi, out);
  if (n.mig_current == 1)
    out.push_back(make("gpu.mig", L::Warning,
                       who + " has MIG enabled: CUDA sees MIG instances, each with a share of the SMs and "
                             "memory bandwidth, so results are not those of the whole GPU",
                       "compare only with runs on the same MIG profile, or disable MIG (nvidia-smi -mig 0)"));
  else if (n.mig_pending >= 0 && n.mig_pending != n.mig_current)
    out.push_back(make("gpu.mig", L::Info, who + " has a MIG mode change pending until the next GPU reset"));
  if (n.power_limit_w > 0 && n.power_default_w > 0 && n.power_limit_w < n.power_default_w - 0.5)
    out.push_back(make("gpu.power_limit", L::Warning,
                       who + " has its power limit at " + w(n.power_limit_w) + ", below the default " +
                           w(n.power_default_w) + ": under load it throttles sooner than the same GPU elsewhere",
                       "restore the default (" + smi + " -pl " +
                           std::to_string(static_cast<long long>(n.power_default_w + 0.5)) +
                           ", as root), or compare only with runs at the same limit"));
  if (n.app_sm_clock_mhz > 0 && n.max_sm_clock_mhz > 0 && n.app_sm_clock_mhz < n.max_sm_clock_mhz)
    out.push_back(make("gpu.app_clocks", L::Info,
                       who + " has application clocks of " + std::to_string(n.app_sm_clock_mhz) + " MHz (SM), below the " +
                           std::to_string(n.max_sm_clock_mhz) + " MHz maximum",
                       smi + " -rac resets them (as root)"));
  memory_health(n, who, smi, out);
  if (n.pcie_width > 0 && n.pcie_width_max > 0 && n.pcie_width < n.pcie_width_max)
    out.push_back(make("gpu.pcie_width", L::Warning,
                       who + "'s PCIe link runs at x" + std::to_string(n.pcie_width) + " of x" +
                           std::to_string(n.pcie_width_max) + ": host<->device copies get a fraction of their bandwidth",
                       "reseat the card or check the riser and the slot's wiring"));
  if (n.persistence_mode == 0)
    out.push_back(make("gpu.persistence", L::Info,
                       who + " has persistence mode off: every process that starts pays the driver's "
                             "initialisation (often 0.5-2 s), outside the benchmarks' timings",
                       "nvidia-smi -pm 1 (as root), or run nvidia-persistenced"));
  return out;
}

Verdict driver_stuck_verdict(const DriverInfo& d) {
  const bool hung = d.probe_failure.find(" hung in ") != std::string::npos;
  Verdict v = make(hung ? "driver.hung" : "driver.crashed", L::Error,
                   d.probe_failure + ": a stuck GPU or a driver in a bad state. The driver was left alone: "
                                     "the GPU benchmarks are skipped, the CPU ones run",
                   "look at the Xid lines of the kernel log (dmesg | grep -i xid: 79 is a GPU fallen off the bus, "
                   "48 and 63/64 memory errors, 119/120 the GSP) and at `timeout 30 nvidia-smi -q`; reset the GPU "
                   "(nvidia-smi -r -i <bus id>, as root, nothing running on it) or reboot");
  v.evidence = {"the driver probe ran in a child with a " + std::to_string(probe_seconds()) +
                    " s deadline (CUDABENCH_PROBE_SECONDS); its last call: " + d.probe_failure_call,
                d.kernel_module_version.empty() ? "kernel module: none (/proc/driver/nvidia/version absent)"
                                                : "kernel module: " + d.kernel_module_version};
  return v;
}

namespace {

// No libcuda at all: the GPU benchmarks are skipped (a stub on the path is
// only a hint: it links, it never runs).
void no_driver(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  if (!d.probe_failure.empty()) {
    out.push_back(driver_stuck_verdict(d));
  } else if (!d.libcuda_found) {
    if (d.libcuda_is_stub)
      // No driver is the problem; the stub on the path is fine for linking
      // (CPU-only build machines keep it there) and only a hint here.
      out.push_back(make("driver.stub", L::Warning,
                         "no NVIDIA driver: libcuda.so.1 not found; only the toolkit's link-time stub " +
                             d.libcuda_path + " is on the library path (it links, it never runs)",
                         "install the NVIDIA driver on a GPU machine; keep .../lib64/stubs out of "
                         "LD_LIBRARY_PATH when running"));
    else
      out.push_back(make("driver.missing", L::Warning,
                         "no NVIDIA driver: libcuda.so.1 not found. GPU benchmarks and "
                         "tests are skipped; the CPU benchmarks run as usual",
                         "on a GPU machine install the NVIDIA driver (>= " +
                             min_driver_for_major(Version::from_cuda_int(r.runtime.built_version).major > 0
                                                      ? Version::from_cuda_int(r.runtime.built_version).major
                                                      : 13) +
                             " for this build)"));
  }
}

// The CUDA runtime this binary built with vs the one it loaded.
void runtime_in_build(const Report& r, std::vector<Verdict>& out) {
  if (r.runtime.compiled_in && r.runtime.loaded_version &&
      r.runtime.loaded_version != r.runtime.built_version) {
    const bool older = r.runtime.loaded_version < r.runtime.built_version;
    out.push_back(make("runtime.loaded_differs", older ? L::Error : L::Info,
                       "built with CUDA runtime " + cuda_str(r.runtime.built_version) +
                           " but loaded " + cuda_str(r.runtime.loaded_version) + " from " +
                           r.runtime.loaded_path,
                       older ? "put the toolkit this binary was built with first on "
                               "LD_LIBRARY_PATH"
                             : ""));
  }
  if (!r.runtime.compiled_in)
    out.push_back(make("runtime.absent", L::Info,
                       "this build has no CUDA (nvcc was not found at configure time): "
                       "only CPU benchmarks exist",
                       "install the CUDA toolkit and reconfigure"));
}

// How each GPU is set up (NVML).
void gpu_setup(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  for (const auto& g : r.gpus)
    for (auto& v : gpu_setup_verdicts(g)) out.push_back(std::move(v));
  if (d.libcuda_found && !d.libcuda_is_stub && !d.nvml_found)
    out.push_back(make("nvml.missing", L::Info,
                       "NVML is unavailable (" + d.nvml_error +
                           "): no clocks, power limits or throttle reasons in the report or the results",
                       "install the driver's NVML library (libnvidia-ml.so.1), part of every NVIDIA driver"));
}

// LibTorch's CUDA vs the kernels', and which copy of cuBLAS it gets.
void libtorch(const Report& r, std::vector<Verdict>& out) {
  if (r.torch.compiled_in && r.runtime.compiled_in && r.torch.cuda_version) {
    const Version tv = Version::from_cuda_int(r.torch.cuda_version);
    const Version kv = Version::parse(r.build.cuda_toolkit_version);
    if (kv.known() && (tv.major != kv.major || tv.minor != kv.minor))
      out.push_back(make(
          "torch.cuda_differs", tv.major != kv.major ? L::Warning : L::Info,
          "LibTorch was built with CUDA " + tv.major_minor() + ", the kernels with toolkit " +
              kv.major_minor() +
              ": both runtimes can live in one process, but each library (libcudart, "
              "cuBLAS) is loaded once by its soname, so LibTorch uses whichever copy "
              "loaded first (see 'Loaded libraries')",
          tv.major != kv.major ? "build the kernels with a CUDA " + std::to_string(tv.major) +
                                     ".x toolkit, or use a LibTorch built for CUDA " +
                                     std::to_string(kv.major)
                               : ""));
    else if (kv.known())
      out.push_back(make("torch.cuda_differs", L::Ok,
                         "LibTorch and the kernels both use CUDA " + tv.major_minor()));
  } else if (r.torch.compiled_in && !r.torch.cuda_version && !r.gpus.empty()) {
    out.push_back(make("torch.cpu_only", L::Warning,
                       "LibTorch is a CPU-only build: training on the GPU is unavailable",
                       "use a CUDA build of LibTorch (pip torch from the CUDA index)"));
  }
  // Which copy of cuBLAS LibTorch gets. Only a soname of LibTorch's own
  // CUDA major is one it would load (libcudart.so.13 is not CUDA 12.8's).
  if (r.torch.compiled_in && !r.torch.library_path.empty()) {
    const auto pos = r.torch.library_path.find("/site-packages/");
    const std::string soname_major = ".so." + std::to_string(r.torch.cuda_version / 1000);
    if (pos != std::string::npos) {
      const std::string site = r.torch.library_path.substr(0, pos + 15);
      for (const auto& lib : r.loaded)
        if ((lib.name.rfind("libcublas.so", 0) == 0 || lib.name.rfind("libcudart.so", 0) == 0) &&
            lib.path.rfind(site, 0) != 0 && lib.name.find(soname_major) != std::string::npos)
          out.push_back(make("torch.shared_libs", L::Info,
                             lib.name + " comes from " + lib.path +
                                 " (loaded first); LibTorch's own copy under " + site +
                                 "nvidia is not used for it"));
    }
  }
}

// nvcc on PATH vs the toolkit this binary used.
void nvcc_on_path(const Report& r, std::vector<Verdict>& out) {
  if (r.runtime.compiled_in) {
    if (r.nvcc_on_path.empty()) {
      out.push_back(make("nvcc.path", L::Info,
                         "no nvcc on PATH (this binary was built with " + r.build.nvcc_path + ")",
                         ""));
    } else {
      const ToolkitInstall* on_path = nullptr;
      for (const auto& t : r.toolkits)
        for (const auto& via : t.found_via)
          if (via == "PATH (first nvcc)") on_path = &t;
      const Version built = Version::parse(r.build.cuda_toolkit_version);
      if (on_path && built.known() && on_path->version.known() &&
          (on_path->version.major != built.major || on_path->version.minor != built.minor))
        out.push_back(make("nvcc.path", L::Warning,
                           "nvcc on PATH (" + r.nvcc_on_path + ") is CUDA " +
                               on_path->version.str() + ", but this binary was built with " +
                               r.build.cuda_toolkit_version + " (" + r.build.nvcc_path + ")",
                           "put " + r.build.cuda_toolkit_root +
                               "/bin first on PATH, or rebuild with the one you mean"));
      else
        out.push_back(make("nvcc.path", L::Ok,
                           "nvcc on PATH (" + r.nvcc_on_path + ") matches the build's toolkit " +
                               r.build.cuda_toolkit_version));
    }
  }
}

// A variable that names a toolkit must name one: build systems trust it.
void toolkit_variables(const Report& r, std::vector<Verdict>& out) {
  for (const char* k : {"CUDA_HOME", "CUDA_PATH"}) {
    const auto it = r.env_vars.find(k);
    if (it == r.env_vars.end() || it->second.empty()) continue;
    bool found = false;
    for (const auto& t : r.toolkits)
      for (const auto& via : t.found_via) found = found || via == k;
    if (!found)
      out.push_back(make(std::string("env.") + k, L::Warning,
                         std::string(k) + "=" + it->second +
                             " is not a CUDA toolkit (no bin/nvcc, include/cuda_runtime_api.h or libcudart "
                             "there, or no such folder); CMake, PyTorch extensions and conda builds that read "
                             "it will fail or pick another CUDA",
                         std::string("point ") + k + " at a toolkit root such as " +
                             (r.toolkits.empty() ? std::string("/usr/local/cuda") : r.toolkits.front().root) +
                             ", or unset it"));
  }
  if (r.toolkits.empty())
    out.push_back(make("toolkits.none", L::Info, "no CUDA toolkit install found on this machine"));
}

}  // namespace

std::vector<Verdict> evaluate(const Report& r) {
  std::vector<Verdict> out;
  no_driver(r, out);
  // Everything else about the driver, the runtime against it, the
  // architectures and the libraries: the doctor's scenarios.
  for (auto& v : scenario_verdicts(r)) out.push_back(std::move(v));
  runtime_in_build(r, out);
  gpu_setup(r, out);
  libtorch(r, out);
  nvcc_on_path(r, out);
  toolkit_variables(r, out);
  return out;
}

}  // namespace cudabench::doctor
