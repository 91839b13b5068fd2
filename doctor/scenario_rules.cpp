#include "rules.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "env/parsers.h"
#include "env/report.h"

namespace cudabench::doctor {
using namespace env;
namespace {

using L = Verdict::Level;

Verdict make(std::string id, L level, std::string message, std::string fix,
             std::vector<std::string> evidence) {
  return Verdict{std::move(id), level, std::move(message), std::move(fix), std::move(evidence)};
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(0, slash);
}

bool cuda_fails(const DriverInfo& d) {
  return !d.libcuda_found || d.init_result != 0 || d.device_count == 0;
}

std::string cu_init_line(const DriverInfo& d) {
  if (d.init_result < 0) return "cuInit: not called";
  if (d.init_result == 0) return "cuInit: 0 (success), " + std::to_string(d.device_count) + " device(s)";
  return "cuInit: " + d.init_error;
}

std::string libcuda_line(const DriverInfo& d) {
  if (!d.libcuda_found) return "libcuda.so.1: not found (" + d.libcuda_error + ")";
  return "libcuda.so.1: " + d.libcuda_path +
         (d.libcuda_file_version.empty() ? "" : " (version " + d.libcuda_file_version + ")");
}

std::string module_line(const Report& r) {
  if (!r.driver.kernel_module_version.empty())
    return "kernel module: " + r.driver.kernel_module_version + " (/proc/driver/nvidia/version)";
  return std::string("kernel module: none (/proc/driver/nvidia/version absent; /sys/module/nvidia ") +
         (r.system.nvidia_module_loaded ? "present)" : "absent)");
}

bool in_compat_folder(const std::string& path) { return path.find("/compat/") != std::string::npos; }

// The GPUs by name, from whichever source saw them: CUDA, NVML, PCI.
std::string gpu_names(const Report& r) {
  std::vector<std::string> out;
  for (const auto& g : r.gpus) out.push_back(g.name + " (" + g.pci_bus_id + ")");
  if (out.empty())
    for (const auto& g : r.nvml_gpus) out.push_back(g.name + " (" + g.pci_bus_id + ")");
  if (out.empty())
    for (const auto& p : r.system.pci)
      if (p.is_gpu()) out.push_back("PCI 10de:" + p.device_id + " (" + p.bus_id + ")");
  return out.empty() ? "no GPU seen by CUDA, NVML or PCI" : join(out);
}

std::vector<std::string> pci_gpus_line(const Report& r) {
  std::vector<std::string> out;
  for (const auto& p : r.system.pci)
    if (p.is_gpu())
      out.push_back("PCI " + p.bus_id + ": 10de:" + p.device_id + ", class " + p.pci_class + ", driver " +
                    (p.driver.empty() ? "none bound" : p.driver));
  if (out.empty()) out.push_back("PCI: no NVIDIA GPU under " + r.system.root + "sys/bus/pci/devices");
  return out;
}

// --- 1 ------------------------------------------------------------------
void driver_too_old(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  if (!d.libcuda_found || d.libcuda_is_stub) return;
  const std::string drv = d.nvml_driver_version.empty() ? d.libcuda_file_version : d.nvml_driver_version;
  const std::string seen_driver = "cuDriverGetVersion: " + std::to_string(d.cuda_version) + " (CUDA " +
                                  Version::from_cuda_int(d.cuda_version).major_minor() + ") from " + d.libcuda_path;
  if (r.runtime.compiled_in) {
    const int rt = r.runtime.loaded_version ? r.runtime.loaded_version : r.runtime.built_version;
    Verdict v = driver_runtime_verdict(d.cuda_version, drv, rt);
    v.evidence = {seen_driver, "CUDA runtime: " + std::to_string(rt) + (r.runtime.loaded_path.empty() ? "" : " from " + r.runtime.loaded_path)};
    out.push_back(std::move(v));
  }
  const int rt = r.runtime.loaded_version ? r.runtime.loaded_version : r.runtime.built_version;
  if (r.torch.compiled_in && r.torch.cuda_version && r.torch.cuda_version != rt) {
    Verdict v = driver_runtime_verdict(d.cuda_version, drv, r.torch.cuda_version, "LibTorch's runtime",
                                       "torch.driver_compat");
    v.evidence = {seen_driver, "LibTorch " + r.torch.version + " built with CUDA " +
                                   Version::from_cuda_int(r.torch.cuda_version).major_minor()};
    out.push_back(std::move(v));
  }
}

// --- 2, 3, 4 -----------------------------------------------------------
void driver_versions(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  const std::string mod = d.kernel_module_version;
  if (d.libcuda_found && d.init_result == 804) {
    const bool compat = in_compat_folder(d.libcuda_path);
    out.push_back(make(
        "driver.compat_unsupported", L::Error,
        "libcuda " + (d.libcuda_file_version.empty() ? std::string("?") : d.libcuda_file_version) + " at " +
            d.libcuda_path + (compat ? " is a forward-compatibility copy (cuda-compat)" : " is not the kernel module's own libcuda") +
            (mod.empty() ? std::string("") : " on kernel module " + mod) + ", and " + gpu_names(r) +
            " does not support forward compatibility (only data-center GPUs do): cuInit fails with "
            "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)",
        "take " + dir_of(d.libcuda_path) + " out of the library path (LD_LIBRARY_PATH, /etc/ld.so.conf.d) or "
            "uninstall cuda-compat-*, so that the driver's own libcuda" + (mod.empty() ? "" : " " + mod) +
            " loads; in a container, use an image whose CUDA the host driver supports, or upgrade the host driver",
        {cu_init_line(d), libcuda_line(d), module_line(r), "GPUs: " + gpu_names(r)}));
  }

  // 3: libcuda (user space) vs the kernel module.
  if (d.libcuda_found) out.push_back(module_library_verdict(d));

  // 4: NVML vs the kernel module.
  if (d.nvml_init_result == 18) {
    const std::string nv = version_from_soname(d.nvml_library_path);
    out.push_back(make("nvml.module_mismatch", L::Error,
                       "NVML " + (nv.empty() ? std::string("") : nv + " ") + "(" + d.nvml_library_path +
                           ") does not match the loaded kernel module" + (mod.empty() ? std::string("") : " " + mod) +
                           ": the driver was upgraded and the old module is still loaded. nvidia-smi says "
                           "\"Failed to initialize NVML: Driver/library version mismatch\"",
                       "reboot (or stop every GPU process and run: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; "
                       "modprobe nvidia)",
                       {"nvmlInit: 18 (" + d.nvml_error + ")", "NVML library: " + d.nvml_library_path, module_line(r)}));
  }
}

// --- 5 ------------------------------------------------------------------
void fabric_manager(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  if (!d.libcuda_found || d.init_result != 802) return;
  const SystemInfo& s = r.system;
  int switches = 0;
  for (const auto& p : s.pci) switches += p.is_nvswitch();
  std::vector<std::string> nodes;
  for (const auto& n : s.device_nodes)
    if (n.find("nvswitch") != std::string::npos) nodes.push_back(n);
  std::vector<std::string> ev = {cu_init_line(d),
                                 "NVSwitch PCI functions: " + std::to_string(switches) +
                                     (nodes.empty() ? "; no /dev/nvidia-nvswitch* nodes" : "; " + join(nodes)),
                                 std::string("nv-fabricmanager process: ") + (s.fabric_manager_running ? "running" : "none")};
  static const char* states[] = {"not supported", "not started", "in progress", "completed"};
  for (const auto& g : r.nvml_gpus)
    if (g.fabric_state >= 0 && g.fabric_state <= 3)
      ev.push_back("NVML fabric state of " + g.name + " (" + g.pci_bus_id + "): " + states[g.fabric_state]);
  std::string cause;
  if (s.fabric_manager_running)
    cause = "the fabric manager runs but has not finished setting up the NVLink fabric (still starting, or its "
            "version differs from the driver's: its log says which)";
  else if (switches || !nodes.empty())
    cause = "this NVSwitch system's fabric manager (nv-fabricmanager) is not running, so the GPUs stay uninitialised";
  else
    cause = "the GPUs wait for an NVLink fabric: on an NVSwitch system (HGX/DGX) the fabric manager is not running; "
            "no NVSwitch is visible here (a VM or container may hide it), so a GPU passed through without its "
            "fabric is the other possible cause";
  out.push_back(make("driver.fabric_manager", L::Error,
                     cause + ": cuInit fails with CUDA_ERROR_SYSTEM_NOT_READY (802, \"system not yet initialized\")",
                     "install nvidia-fabricmanager of the driver's exact version" +
                         (d.kernel_module_version.empty() ? std::string("") : " (" + d.kernel_module_version + ")") +
                         " and run: systemctl enable --now nvidia-fabricmanager",
                     ev));
}

}  // namespace

// --- 6, 7 ---------------------------------------------------------------
std::vector<GpuKind> gpus_with_cc(const Report& r) {
  struct Group {
    std::string name;
    int major, minor;
    std::vector<std::string> ids;
  };
  std::vector<Group> groups;
  auto add = [&](const std::string& name, int major, int minor, const std::string& id) {
    for (auto& g : groups)
      if (g.name == name && g.major == major && g.minor == minor) {
        g.ids.push_back(id);
        return;
      }
    groups.push_back({name, major, minor, {id}});
  };
  for (const auto& g : r.gpus) add(g.name, g.cc_major, g.cc_minor, std::to_string(g.index));
  if (groups.empty())
    for (const auto& g : r.nvml_gpus)
      if (g.cc_major > 0) add(g.name, g.cc_major, g.cc_minor, g.pci_bus_id);
  std::vector<GpuKind> out;
  for (const auto& g : groups)
    out.push_back({std::string(g.ids.size() > 1 ? "GPUs " : "GPU ") + join(g.ids) + " (" + g.name + ")", g.major, g.minor});
  return out;
}

// An arch counts when at least half of the containers hold it (a
// library's odd kernel for one arch does not make it run there).
std::string archs_of(const FatbinArchs& f) {
  std::string s;
  for (const auto& [sm, n] : f.sass)
    if (n * 2 >= f.containers) s += (s.empty() ? "" : ";") + std::to_string(sm) + "-real";
  for (const auto& [sm, n] : f.ptx)
    if (n * 2 >= f.containers) s += (s.empty() ? "" : ";") + std::to_string(sm) + "-virtual";
  return s;
}

namespace {

// --- 6, 7 ---------------------------------------------------------------
void architectures(const Report& r, std::vector<Verdict>& out) {
  const auto gpus = gpus_with_cc(r);
  const int driver_cuda = r.driver.cuda_version;
  struct Binary {
    const char* id;
    const char* who;
    std::string archs;
    std::string evidence;
    Version built_with;
  };
  std::vector<Binary> bins;
  if (r.runtime.compiled_in) {
    const FatbinArchs& f = r.binary_fatbin;
    bins.push_back({"binary.arch", "this binary", f.read() ? archs_of(f) : r.build.cuda_architectures,
                    f.read() ? f.file + ": " + fatbin_summary(f)
                             : "CMAKE_CUDA_ARCHITECTURES " + r.build.cuda_architectures + " (fatbin not read: " + f.error + ")",
                    Version::parse(r.build.cuda_toolkit_version)});
  }
  if (r.torch.compiled_in && r.torch.cuda_version && r.torch_fatbin.read())
    bins.push_back({"torch.arch", "LibTorch", archs_of(r.torch_fatbin),
                    r.torch_fatbin.file + ": " + fatbin_summary(r.torch_fatbin),
                    Version::from_cuda_int(r.torch.cuda_version)});
  for (const auto& g : gpus)
    for (const auto& b : bins) {
      Verdict v = arch_verdict(b.archs, g.cc_major, g.cc_minor, g.name);
      v.id = b.id;
      if (std::string(b.id) != "binary.arch") {
        // arch_verdict speaks of "this binary" and a CMake rebuild.
        const auto pos = v.message.find("this binary");
        if (pos != std::string::npos) v.message.replace(pos, 11, b.who);
        if (v.level == L::Error)
          v.fix = "install a LibTorch (pip torch) built for sm_" + std::to_string(g.cc_major * 10 + g.cc_minor) +
                  " (its release notes list the architectures), or build it with TORCH_CUDA_ARCH_LIST including " +
                  std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
      }
      v.evidence = {b.evidence, g.name + ": compute capability " + std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)};
      const bool ptx_only = v.level == L::Warning;  // no SASS, PTX to JIT
      out.push_back(v);
      // 7: PTX from a toolkit newer than the driver cannot be JIT-compiled.
      if (ptx_only && driver_cuda && b.built_with.known()) {
        const Version dv = Version::from_cuda_int(driver_cuda);
        if (dv < Version::parse(b.built_with.major_minor()))
          out.push_back(make("binary.ptx_version", L::Error,
                             std::string(b.who) + " has only PTX for " + g.name + ", made by CUDA " +
                                 b.built_with.major_minor() + ", and the driver supports CUDA " + dv.major_minor() +
                                 ": it cannot JIT-compile newer PTX, so kernels fail with "
                                 "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222, \"the provided PTX was compiled with an "
                                 "unsupported toolchain\")",
                             "upgrade the driver to one for CUDA " + b.built_with.major_minor() + " (>= " +
                                 min_driver_for_toolkit(b.built_with) + "), or rebuild with SASS for sm_" +
                                 std::to_string(g.cc_major * 10 + g.cc_minor) + " (CMAKE_CUDA_ARCHITECTURES " +
                                 std::to_string(g.cc_major * 10 + g.cc_minor) + "-real)",
                             {b.evidence, "cuDriverGetVersion: " + std::to_string(driver_cuda)}));
      }
    }
}

// --- 8, 10, 11, 12, 19, 20: is the driver there, and does it reach the GPU --

std::vector<std::string> gpu_device_nodes(const SystemInfo& s) {
  std::vector<std::string> out;
  for (const auto& n : s.device_nodes)
    if (n.size() > 11 && n.rfind("/dev/nvidia", 0) == 0 && std::isdigit(static_cast<unsigned char>(n[11])))
      out.push_back(n);
  return out;
}

// 10: the toolkit's stub loaded as the driver.
void stub_library(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  if (d.libcuda_found && (d.libcuda_is_stub || d.init_result == 34))
    out.push_back(make("driver.stub", L::Error,
                       "libcuda.so.1 is the CUDA toolkit's link-time stub (" + d.libcuda_path +
                           "), not a driver: every CUDA call fails with CUDA_ERROR_STUB_LIBRARY (34, \"CUDA driver is a stub library\")",
                       d.libcuda_is_stub ? "remove " + dir_of(d.libcuda_path) + " from LD_LIBRARY_PATH (stubs are for linking only)"
                                         : "delete the stub copied as " + d.libcuda_path +
                                               " (a real libcuda.so.1 is a link to libcuda.so.<driver version>) and run ldconfig",
                       {cu_init_line(d), libcuda_line(d)}));
}

// 19: WSL2, where the driver is the Windows one.
void wsl(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  const SystemInfo& s = r.system;
  std::vector<std::string> ev = {"/proc/version names Microsoft/WSL", libcuda_line(d),
                                 std::string("/usr/lib/wsl/lib/libcuda.so.1: ") + (s.wsl_libcuda ? "present" : "absent")};
  for (const auto& p : s.linux_libcuda) ev.push_back("a Linux driver's libcuda: " + p);
  const bool foreign = d.libcuda_found && d.libcuda_path.find("/usr/lib/wsl/") == std::string::npos;
  if (!s.linux_libcuda.empty() || foreign)
    out.push_back(make("driver.wsl", L::Error,
                       "under WSL2 libcuda must be the Windows driver's, from /usr/lib/wsl/lib, but " +
                           (foreign ? d.libcuda_path + " loaded"
                                    : "a Linux driver is installed inside the distribution (" + join(s.linux_libcuda) + ")") +
                           ": it cannot reach the GPU",
                       "remove the Linux NVIDIA driver from the distribution (apt remove 'nvidia-driver-*' "
                       "'libnvidia-compute-*'; install only cuda-toolkit-XX-Y, never the 'cuda' or 'cuda-drivers' "
                       "packages) and keep /usr/lib/wsl/lib first on the library path",
                       ev));
  else if (!d.libcuda_found && s.wsl_libcuda)
    out.push_back(make("driver.wsl", L::Error,
                       "the Windows driver's libcuda is in /usr/lib/wsl/lib, but the loader does not look there, so "
                       "libcuda.so.1 is not found (\"libcuda.so: cannot open shared object file\")",
                       "echo /usr/lib/wsl/lib > /etc/ld.so.conf.d/ld.wsl.conf && ldconfig (or add it to "
                       "LD_LIBRARY_PATH)",
                       ev));
  else if (!s.wsl_libcuda)
    out.push_back(make("driver.wsl", L::Error,
                       "WSL2 without the Windows driver's GPU support: /usr/lib/wsl/lib/libcuda.so.1 is absent",
                       "install a current NVIDIA driver on Windows (it brings WSL support) and run 'wsl --update'", ev));
}

// 11: nouveau holds the GPU.
void nouveau(const Report& r, std::vector<Verdict>& out) {
  const SystemInfo& s = r.system;
  std::vector<std::string> nouveau_gpus;
  for (const auto& p : s.pci)
    if (p.driver == "nouveau") nouveau_gpus.push_back(p.bus_id);
  if (!s.nouveau_module_loaded && nouveau_gpus.empty()) return;
  std::vector<std::string> ev = {std::string("/sys/module/nouveau: ") + (s.nouveau_module_loaded ? "present" : "absent"),
                                 std::string("/sys/module/nvidia: ") + (s.nvidia_module_loaded ? "present" : "absent")};
  for (const auto& l : pci_gpus_line(r)) ev.push_back(l);
  out.push_back(make("driver.nouveau", cuda_fails(r.driver) ? L::Error : L::Warning,
                     "the open-source nouveau driver is loaded" +
                         (nouveau_gpus.empty() ? std::string("") : " and holds " + join(nouveau_gpus)) +
                         ": the NVIDIA driver cannot take " + (nouveau_gpus.empty() ? "the GPU" : "those GPUs") +
                         " while it is there",
                     "blacklist nouveau (echo 'blacklist nouveau' > /etc/modprobe.d/blacklist-nouveau.conf; "
                     "update-initramfs -u, or dracut -f) and reboot",
                     ev));
}

// 12: no nvidia module: not installed for this kernel, refused by Secure
// Boot, or never loaded.
void module_missing(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  const SystemInfo& s = r.system;
  bool any_gpu = false;
  for (const auto& p : s.pci) any_gpu = any_gpu || p.is_gpu();
  if (!cuda_fails(d) || s.nvidia_module_loaded || !d.kernel_module_version.empty() || !(any_gpu || d.libcuda_found))
    return;
  std::vector<std::string> ev = {"/sys/module/nvidia: absent", module_line(r), libcuda_line(d)};
  for (const auto& l : pci_gpus_line(r)) ev.push_back(l);
  ev.push_back("module files for kernel " + (s.kernel_release.empty() ? std::string("?") : s.kernel_release) + ": " +
               (s.module_files.empty() ? std::string("none") : join(s.module_files)));
  ev.push_back(std::string("Secure Boot: ") + (s.secure_boot == 1 ? "on" : s.secure_boot == 0 ? "off" : "unknown"));
  std::string cause, fix;
  if (s.module_files.empty()) {
    cause = "the nvidia kernel module is not loaded and not installed for the running kernel " + s.kernel_release +
            " (the driver was never installed, or DKMS did not build it for this kernel)";
    fix = "install the driver for this kernel (apt install nvidia-driver-XXX / linux-modules-nvidia-XXX-$(uname -r), "
          "or dkms autoinstall), then modprobe nvidia";
  } else if (s.secure_boot == 1) {
    cause = "the nvidia kernel module is installed (" + s.module_files.front() +
            ") but not loaded, and Secure Boot is on: the kernel refuses an unsigned module "
            "(modprobe: 'Key was rejected by service'); that it simply was not loaded yet cannot be ruled out";
    fix = "sign the module with a key enrolled by mokutil --import (DKMS does it when asked), or turn Secure Boot "
          "off; then modprobe nvidia";
  } else {
    cause = "the nvidia kernel module is installed (" + s.module_files.front() +
            ") but not loaded (modprobe failed at boot, or it was never run)";
    fix = "modprobe nvidia and read its error (dmesg | grep NVRM)";
  }
  if (s.nouveau_module_loaded) cause += "; nouveau is loaded in its place (see driver.nouveau)";
  out.push_back(make("driver.module_missing", L::Error, cause + ": nvidia-smi says it \"couldn't communicate with the NVIDIA driver\"",
                     fix, ev));
}

// 20: a GPU the loaded driver does not claim.
void gpu_unknown(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  const SystemInfo& s = r.system;
  std::vector<std::string> unbound;
  int pci_gpus = 0;
  for (const auto& p : s.pci)
    if (p.is_gpu() && !p.virtual_function) {
      ++pci_gpus;
      if (p.driver.empty()) unbound.push_back(p.bus_id + " (PCI ID 10de:" + p.device_id + ")");
    }
  if (!s.nvidia_module_loaded || unbound.empty()) return;
  std::vector<std::string> ev = pci_gpus_line(r);
  ev.push_back(module_line(r));
  ev.push_back("NVML lists " + std::to_string(r.nvml_gpus.size()) + " of " + std::to_string(pci_gpus) + " NVIDIA GPUs on PCI");
  out.push_back(make("driver.gpu_unknown", cuda_fails(d) ? L::Error : L::Warning,
                     "the nvidia module" + (d.kernel_module_version.empty() ? std::string("") : " " + d.kernel_module_version) +
                         " is loaded but did not take " + join(unbound) +
                         ": either the driver is too old to know this GPU (dmesg: 'NVRM: ... is not supported by the "
                         "NVIDIA <version> driver release'), or its initialisation of the GPU failed (dmesg: "
                         "'RmInitAdapter failed'); the probe cannot tell these apart",
                     "dmesg | grep NVRM says which; for a GPU newer than the driver install a driver whose release notes "
                     "list it (a newer branch)",
                     ev));
}

// 8: a container (or machine) without the device nodes.
void device_nodes(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  const SystemInfo& s = r.system;
  if (!d.libcuda_found || d.libcuda_is_stub || (d.device_nodes_present && !gpu_device_nodes(s).empty())) return;
  const bool fails = cuda_fails(d);
  const bool explained = s.nouveau_module_loaded || (!s.nvidia_module_loaded && d.kernel_module_version.empty());
  if (explained && fails) return;
  const std::string nodes_line = "device nodes: " + (s.device_nodes.empty() ? std::string("no /dev/nvidia*") : join(s.device_nodes));
  out.push_back(make("driver.device_nodes", fails ? L::Error : L::Warning,
                     "libcuda is present but " + std::string(!d.device_nodes_present ? "/dev/nvidiactl" : "/dev/nvidia0..N") +
                         " is not" + (s.container.empty() ? std::string("") : " (inside a " + s.container + " container)") +
                         ": the process cannot reach a GPU, so CUDA reports CUDA_ERROR_NO_DEVICE (100, \"no CUDA-capable "
                         "device is detected\")",
                     "start the container with GPU access (docker run --gpus all, or --runtime=nvidia with "
                     "NVIDIA_VISIBLE_DEVICES; podman --device nvidia.com/gpu=all); on a host, nvidia-modprobe -c 0 -u "
                     "creates the nodes",
                     {nodes_line, libcuda_line(d), cu_init_line(d),
                      "container: " + (s.container.empty() ? std::string("none seen") : s.container)}));
}

// Any other cuInit failure, as it is.
void init_failed(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  static const std::set<int> explained_codes = {34, 802, 803, 804};
  if (d.libcuda_found && d.init_result > 0 && !explained_codes.count(d.init_result))
    out.push_back(make("driver.init", L::Error, "cuInit failed: " + d.init_error,
                       d.init_result == 100 ? "the verdicts above name the cause when the probe can see it; check "
                                              "nvidia-smi and CUDA_VISIBLE_DEVICES"
                                            : "",
                       {cu_init_line(d), libcuda_line(d), module_line(r)}));
}

void driver_presence(const Report& r, std::vector<Verdict>& out) {
  stub_library(r, out);
  if (r.system.wsl) return wsl(r, out);  // WSL has no kernel module, no /dev/nvidia*, no PCI view
  nouveau(r, out);
  module_missing(r, out);
  gpu_unknown(r, out);
  device_nodes(r, out);
  init_failed(r, out);
}

// --- 9 ------------------------------------------------------------------
void visible_devices(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  if (!d.visible_devices_set) return;
  std::vector<std::string> uuids;
  bool mig = false;
  for (const auto& g : r.nvml_gpus) {
    uuids.push_back(g.uuid);
    mig = mig || g.mig_current == 1;
  }
  // With MIG on, indices count MIG devices, not GPUs: then only the syntax.
  const int count = d.nvml_found && !mig ? static_cast<int>(r.nvml_gpus.size()) : -1;
  VisibleDevices v = parse_visible_devices(d.visible_devices, count, uuids);
  // CUDA's own answer wins: when it sees as many devices as were listed, it
  // took them all, whatever this reading says.
  const auto listed = static_cast<int>(std::count(d.visible_devices.begin(), d.visible_devices.end(), ',')) + 1;
  if (d.libcuda_found && d.init_result == 0 && d.device_count >= listed && !v.stopped_at.empty())
    v = parse_visible_devices(d.visible_devices, -1, {});
  const std::string spec = "CUDA_VISIBLE_DEVICES='" + d.visible_devices + "'";
  std::vector<std::string> ev = {spec, count >= 0 ? "NVML lists " + std::to_string(count) + " GPU(s)"
                                                  : "NVML unavailable, or MIG on: only the syntax was checked"};
  if (d.libcuda_found) ev.push_back(cu_init_line(d));
  if (v.used.empty())
    out.push_back(make("driver.visible_devices", d.libcuda_found ? L::Error : L::Warning,
                       spec + " leaves no GPU visible" + (v.why.empty() ? "" : ": " + v.why) +
                           " (CUDA reports \"no CUDA-capable device is detected\", PyTorch \"No CUDA GPUs are available\")",
                       "unset CUDA_VISIBLE_DEVICES, or list GPUs that exist (indices 0.." +
                           (count > 0 ? std::to_string(count - 1) : std::string("N-1")) + " or GPU UUIDs from nvidia-smi -L)",
                       ev));
  else if (!v.stopped_at.empty())
    out.push_back(make("driver.visible_devices", L::Warning,
                       spec + ": CUDA uses only " + join(v.used) + " and hides everything from '" + v.stopped_at +
                           "' on: " + v.why + " (asking for a later device fails with \"invalid device ordinal\")",
                       "list only GPUs that exist", ev));
  else if (!v.repeated.empty())
    out.push_back(make("driver.visible_devices", L::Warning, spec + " names " + join(v.repeated) + " more than once",
                       "list each GPU once", ev));
  else
    out.push_back(make("driver.visible_devices", L::Ok, spec + " selects " + join(v.used), "", ev));
}

// --- 13, 14, 15: the libraries ---------------------------------------------

// 13: a library this process will load later that the loader cannot find.
void lazy_libraries(const Report& r, std::vector<Verdict>& out) {
  for (const auto& l : r.lazy_libraries)
    if (l.resolved.empty()) out.push_back(library_verdict(l));
}

using BySoname = std::map<std::string, std::vector<const LoadedLibrary*>>;

// 14: one library loaded twice (the same soname from two folders).
// Different majors (libcublas.so.12 beside .so.13) are separate libraries
// with versioned symbols; torch.cuda_differs speaks of those.
void duplicate_libraries(const BySoname& by_soname, std::vector<Verdict>& out) {
  static const std::set<std::string> watched = {"libcublas", "libcublasLt", "libcudnn", "libnccl", "libcudart",
                                                "libnvrtc", "libcusparse", "libcufft", "libcurand", "libnvJitLink"};
  for (const auto& [soname, libs] : by_soname) {
    if (!watched.count(soname.substr(0, soname.find(".so")))) continue;
    std::set<std::string> paths;
    for (const auto* l : libs) paths.insert(l->path);
    if (paths.size() < 2) continue;
    std::vector<std::string> ev(paths.begin(), paths.end());
    out.push_back(make("libs.duplicate", L::Error,
                       "two copies of " + soname + " are loaded in this process (" + join(ev, "; ") +
                           "): symbols resolve to whichever came first, so calls can land in the wrong copy "
                           "(\"undefined symbol\", crashes, or the older copy's bugs)",
                       "keep one copy: take the other's folder out of LD_LIBRARY_PATH (or stop preloading it)", ev));
  }
}

// 14: cuBLAS and cuBLASLt from different installs: each needs the other's
// exact release ("undefined symbol: cublasLt..., version libcublasLt.so.N").
void cublas_pair(const BySoname& by_soname, std::vector<Verdict>& out) {
  for (const auto& [soname, libs] : by_soname) {
    if (soname.rfind("libcublas.so.", 0) != 0) continue;
    const auto lt = by_soname.find("libcublasLt.so." + soname.substr(13));
    if (lt == by_soname.end()) continue;
    const std::string a = libs.front()->path, b = lt->second.front()->path;
    const std::string va = version_from_soname(a), vb = version_from_soname(b);
    const bool apart = dir_of(a) != dir_of(b);
    // The same release from two folders is harmless; a different release,
    // or copies in two folders whose releases are unknown, is not.
    if (!va.empty() && !vb.empty() ? va == vb : !apart) continue;
    out.push_back(make("libs.duplicate", L::Error,
                       "cuBLAS and cuBLASLt come from different installs (" + a + " and " + b +
                           "): cuBLAS needs its own release of cuBLASLt, so calls fail with \"undefined symbol: "
                           "cublasLt..., version " + lt->first + "\"",
                       "load both from one install: take " + dir_of(apart ? b : a) +
                           " out of LD_LIBRARY_PATH, or put the folder that holds both first",
                       {soname + ": " + a + (va.empty() ? "" : " (" + va + ")"),
                        lt->first + ": " + b + (vb.empty() ? "" : " (" + vb + ")")}));
  }
}

// 14: cuBLAS or cuDNN older than the build's.
void older_than_built(const Report& r, std::vector<Verdict>& out) {
  auto cublas_str = [](int v) {
    return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
  };
  if (r.libs.cublas_built && r.libs.cublas_loaded && r.libs.cublas_loaded / 100 < r.libs.cublas_built / 100) {
    std::string path;
    for (const auto& l : r.loaded)
      if (l.name.rfind("libcublas.so", 0) == 0) path = l.path;
    out.push_back(make("libs.older_than_built", L::Error,
                       "cuBLAS " + cublas_str(r.libs.cublas_loaded) + " is loaded (" + path + ") but this binary was built "
                           "against " + cublas_str(r.libs.cublas_built) + ": functions added since are missing "
                           "(\"undefined symbol: cublasLt...\")",
                       "put the cuBLAS of the build's toolkit (" + r.build.cuda_toolkit_root + ") first on LD_LIBRARY_PATH",
                       {"cuBLAS loaded: " + cublas_str(r.libs.cublas_loaded) + " " + path,
                        "cuBLAS headers at build: " + cublas_str(r.libs.cublas_built)}));
  }
  // cuDNN 9+ encodes major*10000 + minor*100 + patch, 8 major*1000 + minor*100
  // + patch. PyTorch wants the built major and at least its minor.
  auto mm = [](long v) { return v >= 90000 ? std::make_pair(v / 10000, v / 100 % 100) : std::make_pair(v / 1000, v / 100 % 10); };
  if (r.torch.cudnn_built && r.torch.cudnn_runtime &&
      (mm(r.torch.cudnn_runtime).first != mm(r.torch.cudnn_built).first ||
       mm(r.torch.cudnn_runtime).second < mm(r.torch.cudnn_built).second)) {
    std::string path;
    for (const auto& l : r.loaded)
      if (l.name.rfind("libcudnn.so", 0) == 0) path = l.path;
    out.push_back(make("libs.older_than_built", L::Error,
                       "LibTorch was built against cuDNN " + std::to_string(r.torch.cudnn_built) + " but cuDNN " +
                           std::to_string(r.torch.cudnn_runtime) + " is loaded" + (path.empty() ? "" : " (" + path + ")") +
                           ": cuDNN calls can fail, and PyTorch (Python) stops with \"cuDNN version incompatibility: PyTorch "
                           "was compiled against ... but found runtime version ...\"",
                       "let LibTorch load its own cuDNN (the nvidia-cudnn wheel beside torch): take the older cuDNN's "
                       "folder out of LD_LIBRARY_PATH",
                       {"cuDNN built: " + std::to_string(r.torch.cudnn_built), "cuDNN loaded: " + std::to_string(r.torch.cudnn_runtime) + " " + path}));
  }
}

// 15: the toolkit an extension build would use vs LibTorch's CUDA. Like
// torch.utils.cpp_extension: CUDA_HOME, else the nvcc on PATH, else
// /usr/local/cuda.
void extension_toolkit(const Report& r, std::vector<Verdict>& out) {
  if (!r.torch.compiled_in || !r.torch.cuda_version) return;
  const ToolkitInstall* ext = nullptr;
  std::string via;
  for (const char* want : {"CUDA_HOME", "CUDA_PATH", "PATH (first nvcc)", "/usr/local/cuda"}) {
    for (const auto& t : r.toolkits)
      for (const auto& f : t.found_via)
        if (!ext && f == want && t.version.known()) {
          ext = &t;
          via = want;
        }
    if (ext) break;
  }
  if (!ext) return;
  const Version tv = Version::from_cuda_int(r.torch.cuda_version);
  const Version kv = ext->version;
  std::vector<std::string> ev = {"LibTorch " + r.torch.version + ": CUDA " + tv.major_minor(),
                                 "extension builds use " + ext->root + " (CUDA " + kv.str() + ", found via " + via + ")"};
  if (kv.major != tv.major)
    out.push_back(make("nvcc.torch", L::Warning,
                       "the toolkit that C++/CUDA extension builds pick (" + ext->root + ", CUDA " + kv.major_minor() +
                           ") differs in major version from LibTorch's CUDA " + tv.major_minor() +
                           ": torch.utils.cpp_extension stops with \"The detected CUDA version (" + kv.major_minor() +
                           ") mismatches the version that was used to compile PyTorch (" + tv.major_minor() + ")\"",
                       "point CUDA_HOME at a CUDA " + std::to_string(tv.major) + ".x toolkit (and its bin first on PATH), "
                       "or install a torch built for CUDA " + kv.major_minor(),
                       ev));
  else if (kv.minor != tv.minor)
    out.push_back(make("nvcc.torch", L::Info,
                       "extension builds pick CUDA " + kv.major_minor() + " (" + ext->root + "), LibTorch has CUDA " +
                           tv.major_minor() + ": the same major version, so builds go on with a warning",
                       "", ev));
  else
    out.push_back(make("nvcc.torch", L::Ok,
                       "extension builds pick CUDA " + kv.major_minor() + " (" + ext->root + "), as LibTorch's", "", ev));
}

void libraries(const Report& r, std::vector<Verdict>& out) {
  lazy_libraries(r, out);
  BySoname by_soname;
  for (const auto& l : r.loaded) by_soname[l.name].push_back(&l);
  duplicate_libraries(by_soname, out);
  cublas_pair(by_soname, out);
  older_than_built(r, out);
  extension_toolkit(r, out);
}

// --- 16, 17, 18 (NVML's view of every GPU, CUDA-visible or not) ----------
void nvml_gpus(const Report& r, std::vector<Verdict>& out) {
  const DriverInfo& d = r.driver;
  for (const auto& g : r.nvml_gpus) {
    const std::string who = g.name + " (" + g.pci_bus_id + ")";
    if (g.mig_current == 1 && g.mig_devices == 0) {
      const bool none = d.libcuda_found && (d.init_result == 100 || (d.init_result == 0 && d.device_count == 0));
      out.push_back(make("gpu.mig_no_instances", none ? L::Error : L::Info,
                         who + " has MIG mode on but no MIG instances: CUDA sees no device on it" +
                             std::string(none ? " (and none at all here: \"No CUDA GPUs are available\")" : ""),
                         "create instances (nvidia-smi mig -cgi <profiles> -C, as root), or turn MIG off "
                         "(nvidia-smi -i " + std::to_string(g.nvml_index) + " -mig 0, then reset the GPU)",
                         {"NVML: MIG mode on, " + std::to_string(g.mig_devices) + " MIG devices", cu_init_line(d)}));
    }
  }
}

}  // namespace

// --- 3: libcuda (user space) vs the kernel module -------------------------
Verdict module_library_verdict(const DriverInfo& d) {
  const std::string id = "driver.module_matches_library";
  const std::string mod = d.kernel_module_version;
  const std::string lib = !d.libcuda_file_version.empty() ? d.libcuda_file_version : d.nvml_driver_version;
  const std::vector<std::string> ev = {
      cu_init_line(d), libcuda_line(d),
      "kernel module: " + (mod.empty() ? std::string("none (/proc/driver/nvidia/version absent)")
                                       : mod + " (/proc/driver/nvidia/version)")};
  if (d.init_result == 803)
    return make(id, L::Error,
                "libcuda " + (lib.empty() ? std::string("?") : lib) + " (" + d.libcuda_path + ") and the kernel module " +
                    (mod.empty() ? std::string("?") : mod) +
                    " are from different drivers: cuInit fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803) "
                    "(\"system has unsupported display driver / cuda driver combination\")",
                in_compat_folder(d.libcuda_path)
                    ? "take the compat folder " + dir_of(d.libcuda_path) +
                          " out of the library path, or install the cuda-compat package that matches this driver branch"
                    : "reinstall one driver so that libcuda and the module match; after an upgrade, reboot",
                ev);
  if (mod.empty() || lib.empty())
    return make(id, L::Info, "kernel module or libcuda version unknown; not compared", "", ev);
  if (Version::parse(mod) == Version::parse(lib))
    return make(id, L::Ok, "kernel module and libcuda are both " + lib, "", ev);
  if (d.init_result == 0)
    // CUDA started: a newer libcuda on an older module is forward
    // compatibility at work (wherever the copy lives), not a fault.
    return make(id, L::Info,
                "libcuda " + lib + " runs on kernel module " + mod +
                    " (forward compatibility: a newer libcuda on an older driver, which cuInit accepted)",
                "", ev);
  if (d.init_result == 804)
    return make(id, L::Info,
                "libcuda " + lib + " differs from kernel module " + mod +
                    ": cuInit's 804 says why (see driver.compat_unsupported)",
                "", ev);
  return make(id, L::Error,
              "the loaded kernel module is " + mod + " but libcuda is " + lib +
                  " (a driver upgrade without a reboot, or two drivers' files mixed), and cuInit fails",
              "reboot, or unload and reload the nvidia kernel modules; if only libcuda is stray, take its folder " +
                  dir_of(d.libcuda_path) + " out of the library path",
              ev);
}

// --- CUDA_VISIBLE_DEVICES ---------------------------------------------------
VisibleDevices parse_visible_devices(const std::string& spec, int gpu_count, const std::vector<std::string>& uuids) {
  VisibleDevices v;
  std::stringstream ss(spec);
  std::string item;
  std::set<std::string> seen;
  if (spec.find_first_not_of(" \t") == std::string::npos) {
    v.stopped_at = spec;
    v.why = "it is empty";
    return v;
  }
  while (std::getline(ss, item, ',')) {
    const auto a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    const std::string e = a == std::string::npos ? "" : item.substr(a, b - a + 1);
    auto stop = [&](std::string why) {
      v.stopped_at = e;
      v.why = std::move(why);
    };
    const std::string le = to_lower(e);
    if (!e.empty() && (std::isdigit(static_cast<unsigned char>(e[0])) || e[0] == '-') &&
        e.find_first_not_of("0123456789", 1) == std::string::npos && e != "-") {
      if (e[0] == '-') {
        stop("a negative index ends the list");
        break;
      }
      const long n = std::strtol(e.c_str(), nullptr, 10);
      if (gpu_count >= 0 && n >= gpu_count) {
        stop("there is no GPU " + e + " (NVML lists " + std::to_string(gpu_count) + ")");
        break;
      }
    } else if (le.rfind("gpu-", 0) == 0 && !uuids.empty()) {
      int matches = 0;
      for (const auto& u : uuids) matches += to_lower(u).rfind(le, 0) == 0;
      if (matches != 1) {
        stop(matches ? "'" + e + "' starts the UUIDs of " + std::to_string(matches) + " GPUs"
                     : "no GPU's UUID starts with '" + e + "' (nvidia-smi -L lists them)");
        break;
      }
    } else if (le.rfind("gpu-", 0) != 0 && le.rfind("mig-", 0) != 0) {
      stop("'" + e + "' is neither an index nor a GPU-/MIG- UUID");
      break;
    }
    if (!seen.insert(le).second) v.repeated.push_back(e);
    v.used.push_back(e);
  }
  return v;
}

// --- library lookups ------------------------------------------------------
Verdict library_verdict(const LibraryLookup& l) {
  if (!l.resolved.empty())
    return make("library.missing", L::Ok, l.name + " resolves here to " + l.resolved, "",
                {"needed by " + l.needed_by, "loader: " + l.resolved});
  std::vector<std::string> ev = {"needed by " + l.needed_by, "loader: " + l.error};
  for (const auto& e : l.elsewhere) ev.push_back("a copy outside the library path: " + e);
  if (!l.elsewhere.empty())
    return make("library.missing", L::Error,
                l.name + " (needed by " + l.needed_by + ") is on this machine at " + l.elsewhere.front() +
                    ", but that folder is not on the library path, so loading it fails (\"" + l.error + "\")",
                "export LD_LIBRARY_PATH=" + dir_of(l.elsewhere.front()) + ":$LD_LIBRARY_PATH (or add the folder to "
                "/etc/ld.so.conf.d and run ldconfig)",
                ev);
  // Which package has it: the CUDA or cuDNN major version is in its soname.
  std::string what = "the package that provides it";
  const auto so = l.name.find(".so.");
  const std::string major = so == std::string::npos ? "" : l.name.substr(so + 4, l.name.find('.', so + 4) - so - 4);
  if (l.name.rfind("libcudnn", 0) == 0)
    what = major == "8" ? std::string("cuDNN 8 (the libcudnn8 package, or pip nvidia-cudnn-cu12 8.x)")
                        : "cuDNN " + major + " (pip nvidia-cudnn-cu12 or -cu13, or the libcudnn" + major + "-cuda-XX package)";
  else if (l.name.rfind("libcuda.so", 0) == 0)
    what = "the NVIDIA driver (libcuda comes with the driver, never with the toolkit)";
  else if (!major.empty())
    what = "the CUDA " + major + " runtime libraries (a CUDA " + major + ".x toolkit, or pip nvidia-*-cu" + major + " wheels)";
  return make("library.missing", L::Error,
              l.name + " (needed by " + l.needed_by + ") is not on this machine: neither the loader nor any CUDA "
              "install, pip wheel or conda environment the probe found has it",
              "install " + what + ", or use a build made for the CUDA this machine has", ev);
}

std::vector<Verdict> scenario_verdicts(const Report& r) {
  std::vector<Verdict> out;
  driver_presence(r, out);
  driver_versions(r, out);
  driver_too_old(r, out);
  fabric_manager(r, out);
  visible_devices(r, out);
  unified_memory(r, out);
  architectures(r, out);
  libraries(r, out);
  nvml_gpus(r, out);
  return out;
}

}  // namespace cudabench::doctor
