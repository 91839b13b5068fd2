#include "report.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/utf8.h"
#include "context_keys_json.h"
#include "parsers.h"
#include "probe.h"

namespace cudabench::env {
namespace {

std::string cuda_str(int v) {
  return v ? Version::from_cuda_int(v).major_minor() : std::string("none");
}
// cuDNN's encoding: 9.19.0 = 91900 (since 9.0: major*10000 + minor*100 + patch).
std::string cudnn_str(long v) {
  if (v <= 0) return "none";
  if (v >= 90000) return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
  return std::to_string(v / 1000) + "." + std::to_string((v / 100) % 10) + "." + std::to_string(v % 100);
}
std::string cublas_str(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}
std::string gb(double bytes) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << bytes / 1e9;
  return o.str();
}
std::string known(long long v, const std::string& unit = "") {
  return v < 0 ? std::string("?") : std::to_string(v) + unit;
}
std::string watts(double w) {
  if (w < 0) return "?";
  std::ostringstream o;
  o << std::fixed << std::setprecision(0) << w << " W";
  return o.str();
}
std::string on_off(int v) { return v < 0 ? "?" : v ? "on" : "off"; }
const char* compute_mode_name(int m) {
  switch (m) {
    case 0: return "Default";
    case 1: return "Exclusive_Thread";
    case 2: return "Prohibited";
    case 3: return "Exclusive_Process";
    default: return "?";
  }
}
std::string pcie_str(int gen, int width) {
  return "gen " + known(gen) + " x" + known(width);
}
std::string gib(long long bytes) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1024.0 * 1024 * 1024) << " GiB";
  return o.str();
}
std::string driver_line(const DriverInfo& d) {
  if (!d.libcuda_found) return "none (" + (d.libcuda_error.empty() ? std::string("libcuda.so.1 not found") : d.libcuda_error) + ")";
  std::string v = !d.nvml_driver_version.empty() ? d.nvml_driver_version : d.libcuda_file_version;
  return v + ", supports CUDA " + cuda_str(d.cuda_version);
}

// ---- the report, described once ----
// Each line of the text page carries the facts it shows, each at its place
// in the JSON ("driver/libcuda_path"): to_text prints the lines, to_json
// sets the facts, so a new fact is added in one place. A line without text
// is in the JSON only; a line without facts is text only.

using json = nlohmann::json;
using Facts = std::vector<std::pair<std::string, json>>;
struct Line {
  std::optional<std::string> text;
  Facts facts;
};
using Lines = std::vector<Line>;

Line text(std::string t) { return {std::move(t), {}}; }
Line only_json(Facts f) { return {std::nullopt, std::move(f)}; }
// Text shown only when `show` holds; the facts always.
Line shown_if(bool show, std::string t, Facts f) {
  return {show ? std::optional<std::string>(std::move(t)) : std::nullopt, std::move(f)};
}
// "  label              value": the page's two columns.
std::string row(const std::string& label, const std::string& value) {
  std::string l = "  " + label;
  if (l.size() < 21) l.resize(21, ' ');
  return l + value;
}
void append(Lines& to, Lines from) {
  for (auto& l : from) to.push_back(std::move(l));
}
// "key" under `prefix` ("gpus/0/"), for the facts of one list item.
Facts under(const std::string& prefix, const json& object) {
  Facts f;
  for (const auto& [k, v] : object.items()) f.emplace_back(prefix + k, v);
  return f;
}

json nvml_json(const NvmlGpuInfo& n) {
  return {{"found", n.found},
          {"uuid", n.uuid},
          {"serial", n.serial},
          {"persistence_mode", n.persistence_mode},
          {"sm_clock_mhz", n.sm_clock_mhz},
          {"mem_clock_mhz", n.mem_clock_mhz},
          {"app_sm_clock_mhz", n.app_sm_clock_mhz},
          {"app_mem_clock_mhz", n.app_mem_clock_mhz},
          {"max_sm_clock_mhz", n.max_sm_clock_mhz},
          {"max_mem_clock_mhz", n.max_mem_clock_mhz},
          {"power_limit_w", n.power_limit_w},
          {"power_default_w", n.power_default_w},
          {"power_max_w", n.power_max_w},
          {"ecc_current", n.ecc_current},
          {"ecc_pending", n.ecc_pending},
          {"ecc_volatile_corrected", n.ecc_volatile_corrected},
          {"ecc_volatile_uncorrected", n.ecc_volatile_uncorrected},
          {"pcie_gen", n.pcie_gen},
          {"pcie_gen_max", n.pcie_gen_max},
          {"pcie_width", n.pcie_width},
          {"pcie_width_max", n.pcie_width_max},
          {"pcie_gen_gpu_max", n.pcie_gen_gpu_max},
          {"pcie_max_bytes_per_s", pcie_peak_bytes_per_s(n)},
          {"pcie_gpu_max_bytes_per_s", pcie_bytes_per_s(n.pcie_gen_gpu_max, n.pcie_width_max)},
          {"mig_current", n.mig_current},
          {"mig_pending", n.mig_pending},
          {"compute_mode", n.compute_mode},
          {"compute_mode_name", compute_mode_name(n.compute_mode)},
          {"mig_devices", n.mig_devices},
          {"compute_pids", n.compute_pids},
          {"retired_pages_pending", n.retired_pages_pending},
          {"remap_pending", n.remap_pending},
          {"remap_failure", n.remap_failure},
          {"fabric_state", n.fabric_state}};
}

// What the machine shows of the driver outside libcuda and NVML.
Lines system_lines(const SystemInfo& sy) {
  Lines out = {
      {row("device nodes", sy.device_nodes.empty() ? std::string("none (/dev/nvidia* absent)") : join(sy.device_nodes)),
       {{"system/device_nodes", sy.device_nodes}}},
      {row("kernel modules", std::string("nvidia ") + (sy.nvidia_module_loaded ? "loaded" : "not loaded") +
                                  (sy.nouveau_module_loaded ? ", nouveau LOADED" : "") + "; module files for " +
                                  (sy.kernel_release.empty() ? "?" : sy.kernel_release) + ": " +
                                  (sy.module_files.empty() ? std::string("none") : join(sy.module_files))),
       {{"system/nvidia_module_loaded", sy.nvidia_module_loaded},
        {"system/nouveau_module_loaded", sy.nouveau_module_loaded},
        {"system/kernel_release", sy.kernel_release},
        {"system/module_files", sy.module_files}}},
      only_json({{"system/root", sy.root}, {"system/secure_boot", sy.secure_boot},
                {"system/linux_libcuda", sy.linux_libcuda}, {"system/pci", json::array()}})};
  for (std::size_t i = 0; i < sy.pci.size(); ++i) {
    const PciDevice& p = sy.pci[i];
    out.push_back({"  PCI " + p.bus_id + "   10de:" + p.device_id + " class " + p.pci_class + ", driver " +
                       (p.driver.empty() ? "none" : p.driver),
                   {{"system/pci/" + std::to_string(i),
                     {{"bus_id", p.bus_id}, {"device_id", p.device_id}, {"class", p.pci_class}, {"driver", p.driver}}}}});
  }
  out.push_back(shown_if(sy.wsl,
                         row("WSL2", std::string("yes; /usr/lib/wsl/lib/libcuda.so.1 ") + (sy.wsl_libcuda ? "present" : "absent")),
                         {{"system/wsl", sy.wsl}, {"system/wsl_libcuda", sy.wsl_libcuda}}));
  out.push_back(shown_if(!sy.container.empty(), row("container", sy.container), {{"system/container", sy.container}}));
  out.push_back(shown_if(sy.fabric_manager_running, row("fabric manager", "running"),
                         {{"system/fabric_manager_running", sy.fabric_manager_running}}));
  return out;
}

Lines driver_lines(const Report& r) {
  const DriverInfo& d = r.driver;
  const std::string p = "driver/";
  Lines out = {
      text("Driver"),
      {row("kernel module",
           d.kernel_module_version.empty() ? "none (/proc/driver/nvidia/version absent)" : d.kernel_module_version),
       {{p + "kernel_module_version", d.kernel_module_version}}},
      {row("libcuda", driver_line(d)),
       {{p + "libcuda_found", d.libcuda_found}, {p + "libcuda_error", d.libcuda_error},
        {p + "libcuda_file_version", d.libcuda_file_version}, {p + "cuda_version", cuda_str(d.cuda_version)},
        {p + "cuda_version_int", d.cuda_version}}},
      shown_if(!d.libcuda_path.empty(), row("libcuda path", d.libcuda_path + (d.libcuda_is_stub ? "  (toolkit STUB)" : "")),
               {{p + "libcuda_path", d.libcuda_path}, {p + "libcuda_is_stub", d.libcuda_is_stub}}),
      shown_if(d.nvml_found, row("NVML", d.nvml_driver_version + ", CUDA " + cuda_str(d.nvml_cuda_version)),
               {{p + "nvml_found", d.nvml_found}, {p + "nvml_driver_version", d.nvml_driver_version},
                {p + "nvml_cuda_version", cuda_str(d.nvml_cuda_version)}}),
      shown_if(d.init_result > 0, row("cuInit", d.init_error),
               {{p + "cu_init_result", d.init_result}, {p + "cu_init_error", d.init_error},
                {p + "device_count", d.device_count}}),
      only_json({{p + "device_nodes_present", d.device_nodes_present}}),
      shown_if(!d.probe_failure.empty(), row("probe", d.probe_failure + " (withheld)"),
               {{p + "probe_failure", d.probe_failure}, {p + "probe_failure_call", d.probe_failure_call}})};
  append(out, system_lines(r.system));
  out.push_back(shown_if(d.nvml_init_result > 0, row("NVML", d.nvml_error),
                         {{p + "nvml_init_result", d.nvml_init_result}, {p + "nvml_error", d.nvml_error},
                          {p + "nvml_library_path", d.nvml_library_path}}));
  out.push_back(text(""));
  return out;
}

Lines runtime_lines(const Report& r) {
  const RuntimeInfo& rt = r.runtime;
  const BuildInfo& b = r.build;
  Lines out = {text("CUDA runtime"),
               only_json({{"runtime/compiled_in", rt.compiled_in}, {"runtime/built_version", cuda_str(rt.built_version)},
                          {"runtime/loaded_version", cuda_str(rt.loaded_version)}, {"runtime/loaded_path", rt.loaded_path},
                          {"libraries/cublas_built", cublas_str(r.libs.cublas_built)},
                          {"libraries/cublas_loaded", cublas_str(r.libs.cublas_loaded)},
                          {"build/cuda_toolkit_version", b.cuda_toolkit_version},
                          {"build/cuda_toolkit_root", b.cuda_toolkit_root}, {"build/nvcc", b.nvcc_path},
                          {"build/cuda_architectures", b.cuda_architectures}, {"build/torch_version", b.torch_version}})};
  if (rt.compiled_in) {
    out.push_back(text(row("built with", cuda_str(rt.built_version) + " (toolkit " + b.cuda_toolkit_version + " at " +
                                             b.cuda_toolkit_root + ")")));
    out.push_back(text(row("loaded", cuda_str(rt.loaded_version) +
                                         (rt.loaded_path.empty() ? " (static)" : " from " + rt.loaded_path))));
    out.push_back(text(row("compiler", b.nvcc_path + ", architectures " + b.cuda_architectures)));
    out.push_back(text(row("kernels (fatbin)", fatbin_summary(r.binary_fatbin))));
    out.push_back(text(row("cuBLAS", "built " + cublas_str(r.libs.cublas_built) + ", loaded " +
                                         cublas_str(r.libs.cublas_loaded))));
  } else {
    out.push_back(text("  not in this build (no nvcc at configure time)"));
  }
  out.push_back({row("cuDNN loaded", cudnn_str(r.libs.cudnn_loaded)),
                 {{"libraries/cudnn_loaded", cudnn_str(r.libs.cudnn_loaded)}}});
  out.push_back({row("host compiler", b.cxx_compiler + ", " + b.build_type + " build, git " + b.git_revision),
                 {{"build/cxx_compiler", b.cxx_compiler}, {"build/build_type", b.build_type},
                  {"build/git_revision", b.git_revision}}});
  out.push_back({row("stack", b.stack), {{"build/stack", b.stack}}});
  out.push_back(text(""));
  return out;
}

Lines torch_lines(const Report& r) {
  const TorchInfo& t = r.torch;
  Lines out = {text("LibTorch"),
               only_json({{"torch/compiled_in", t.compiled_in}, {"torch/version", t.version},
                          {"torch/cuda_version", cuda_str(t.cuda_version)}, {"torch/cudnn_built", cudnn_str(t.cudnn_built)},
                          {"torch/cudnn_runtime", cudnn_str(t.cudnn_runtime)}, {"torch/cuda_available", t.cuda_available},
                          {"torch/device_count", t.device_count}, {"torch/library_path", t.library_path},
                          {"torch/nccl_version", t.nccl_version}, {"torch/nccl_path", t.nccl_path},
                          {"torch/nccl_error", t.nccl_error}})};
  if (!t.compiled_in) {
    out.push_back(text("  absent from this build (see docs/building.md: LibTorch)"));
    out.push_back(text(""));
    return out;
  }
  out.push_back(text(row("version", t.version)));
  out.push_back(text(row("built with CUDA", cuda_str(t.cuda_version) + ", cuDNN " + cudnn_str(t.cudnn_built) +
                                                " (loaded " + cudnn_str(t.cudnn_runtime) + ")")));
  // Why not, as judged by LibTorch's own CUDA (it may differ from the kernels').
  const std::string why_not = r.torch_status.usable ? "" : ": " + r.torch_status.reason;
  out.push_back(text(row("sees a GPU", t.cuda_available ? "yes, " + std::to_string(t.device_count) : "no" + why_not)));
  out.push_back(text(row("library", t.library_path)));
  if (!r.torch_fatbin.file.empty()) out.push_back(text(row("kernels (fatbin)", fatbin_summary(r.torch_fatbin))));
  out.push_back(text(row("NCCL", t.nccl_version.empty() ? "none (" + t.nccl_error + ")"
                                                        : t.nccl_version + " (" + t.nccl_path + ")")));
  out.push_back(text(""));
  return out;
}

Lines host_lines(const HostInfo& h) {
  return {text("Host"),
          {row("CPU", (h.cpu_model.empty() ? "?" : h.cpu_model) + (h.cpu_id.empty() ? "" : " (" + h.cpu_id + ")") + ": " + std::to_string(h.sockets) + " socket(s), " +
                          std::to_string(h.cores) + " cores, " + std::to_string(h.threads) + " threads; " +
                          std::to_string(h.numa_nodes) + " NUMA node(s)"),
           {{"host/cpu_model", h.cpu_model}, {"host/cpu_id", h.cpu_id}, {"host/sockets", h.sockets}, {"host/cores", h.cores},
            {"host/threads", h.threads}, {"host/numa_nodes", h.numa_nodes}}},
          {row("memory", gib(h.memory_bytes) + "; transparent huge pages " + (h.thp.empty() ? "?" : h.thp) +
                             "; CPU governor " + (h.cpu_governor.empty() ? "none (no cpufreq)" : h.cpu_governor)),
           {{"host/memory_bytes", h.memory_bytes}, {"host/transparent_hugepages", h.thp},
            {"host/cpu_governor", h.cpu_governor}}},
          {row("OS", (h.os.empty() ? "?" : h.os) + ", kernel " + (h.kernel.empty() ? "?" : h.kernel)),
           {{"host/os", h.os}, {"host/kernel", h.kernel}}},
          text("")};
}

// NVML's view of one CUDA GPU, in the text's indented lines.
Lines nvml_lines(const NvmlGpuInfo& n, const Report& r) {
  if (!n.found)
    return {text("      NVML: no data for this GPU" + (r.driver.nvml_found ? "" : " (" + r.driver.nvml_error + ")"))};
  const double link = pcie_peak_bytes_per_s(n);
  return {
      text("      UUID " + (n.uuid.empty() ? "?" : n.uuid) + ", serial " + (n.serial.empty() ? "?" : n.serial) +
           ", persistence mode " + on_off(n.persistence_mode)),
      text("      clocks (SM / memory, MHz): now " + known(n.sm_clock_mhz) + " / " + known(n.mem_clock_mhz) +
           ", application " + known(n.app_sm_clock_mhz) + " / " + known(n.app_mem_clock_mhz) + ", max " +
           known(n.max_sm_clock_mhz) + " / " + known(n.max_mem_clock_mhz)),
      text("      power limit " + watts(n.power_limit_w) + " (default " + watts(n.power_default_w) + ", max " +
           watts(n.power_max_w) + ")"),
      text("      ECC " + on_off(n.ecc_current) + " (pending " + on_off(n.ecc_pending) + "), volatile errors " +
           known(n.ecc_volatile_corrected) + " corrected, " + known(n.ecc_volatile_uncorrected) + " uncorrected"),
      text("      PCIe " + pcie_str(n.pcie_gen, n.pcie_width) + " now, " + pcie_str(n.pcie_gen_max, n.pcie_width_max) +
           " max with this system" + (link > 0 ? " = " + gb(link) + " GB/s per direction" : "") +
           ", the GPU's own gen " + known(n.pcie_gen_gpu_max)),
      text("      MIG " + on_off(n.mig_current) +
           (n.mig_pending >= 0 && n.mig_pending != n.mig_current ? " (pending " + on_off(n.mig_pending) + ")" : "") +
           ", compute mode " + compute_mode_name(n.compute_mode))};
}

std::string compute_capability(int major, int minor) { return std::to_string(major) + "." + std::to_string(minor); }

Lines gpu_lines(const Report& r) {
  Lines out = {{"GPUs", {{"gpus", json::array()}}}};
  if (r.gpus.empty()) out.push_back(text("  none"));
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const GpuDevice& g = r.gpus[i];
    const json facts = {{"index", g.index}, {"name", g.name}, {"compute_capability", compute_capability(g.cc_major, g.cc_minor)},
                        {"sms", g.sms}, {"total_memory_bytes", g.total_memory_bytes},
                        {"memory_clock_khz", g.memory_clock_khz}, {"bus_width_bits", g.bus_width_bits},
                        {"sm_clock_khz", g.sm_clock_khz}, {"l2_bytes", g.l2_bytes}, {"pci_bus_id", g.pci_bus_id},
                        {"peak_bandwidth_bytes_per_s", g.peak_bandwidth_bytes_per_s}, {"numa_node", g.numa_node},
                        {"local_cpus", g.local_cpus}, {"nvml", nvml_json(g.nvml)}};
    out.push_back({"  [" + std::to_string(g.index) + "] " + g.name + "  sm_" + std::to_string(g.cc_major) +
                       std::to_string(g.cc_minor) + ", " + std::to_string(g.sms) + " SMs, " +
                       gb(static_cast<double>(g.total_memory_bytes)) + " GB, L2 " + std::to_string(g.l2_bytes / (1024 * 1024)) +
                       " MiB, PCI " + g.pci_bus_id + ", NUMA node " +
                       (g.numa_node < 0 ? std::string("?") : std::to_string(g.numa_node)) +
                       (g.local_cpus.empty() ? "" : " (CPUs " + g.local_cpus + ")"),
                   under("gpus/" + std::to_string(i) + "/", facts)});
    out.push_back(text("      SM clock " + std::to_string(g.sm_clock_khz / 1000) + " MHz, memory clock " +
                       std::to_string(g.memory_clock_khz / 1000) + " MHz x " + std::to_string(g.bus_width_bits) +
                       " bit = " + gb(g.peak_bandwidth_bytes_per_s) + " GB/s theoretical peak"));
    append(out, nvml_lines(g.nvml, r));
  }
  return out;
}

// NVML's own list of GPUs (CUDA-visible or not), the fatbins, the libraries
// loaded later: in the JSON only (the doctor's verdicts speak of them).
Lines doctor_facts(const Report& r) {
  Lines out = {only_json({{"nvml_gpus", json::array()}, {"lazy_libraries", json::array()}})};
  for (std::size_t i = 0; i < r.nvml_gpus.size(); ++i) {
    const NvmlGpuInfo& g = r.nvml_gpus[i];
    json n = nvml_json(g);
    n["nvml_index"] = g.nvml_index;
    n["name"] = g.name;
    n["pci_bus_id"] = g.pci_bus_id;
    n["compute_capability"] = compute_capability(g.cc_major, g.cc_minor);
    out.push_back(only_json({{"nvml_gpus/" + std::to_string(i), n}}));
  }
  for (const auto* f : {&r.binary_fatbin, &r.torch_fatbin}) {
    json a = {{"file", f->file}, {"error", f->error}, {"containers", f->containers}, {"sass", json::object()},
              {"ptx", json::object()}};
    for (const auto& [sm, n] : f->sass) a["sass"]["sm_" + std::to_string(sm)] = n;
    for (const auto& [sm, n] : f->ptx) a["ptx"]["compute_" + std::to_string(sm)] = n;
    out.push_back(only_json({{std::string("fatbins/") + (f == &r.binary_fatbin ? "binary" : "torch"), a}}));
  }
  for (std::size_t i = 0; i < r.lazy_libraries.size(); ++i) {
    const LibraryLookup& l = r.lazy_libraries[i];
    out.push_back(only_json({{"lazy_libraries/" + std::to_string(i),
                              {{"name", l.name}, {"needed_by", l.needed_by}, {"resolved", l.resolved},
                               {"error", l.error}, {"elsewhere", l.elsewhere}}}}));
  }
  return out;
}

Lines library_lines(const Report& r) {
  Lines out = {{"\nLoaded libraries (at the time of this report)", {{"loaded_libraries", json::array()}}}};
  if (r.loaded.empty()) out.push_back(text("  none of interest"));
  for (std::size_t i = 0; i < r.loaded.size(); ++i) {
    const LoadedLibrary& l = r.loaded[i];
    std::string name = l.name;
    if (name.size() < 22) name.resize(22, ' ');
    out.push_back({"  " + name + " " + visible(l.path),
                   {{"loaded_libraries/" + std::to_string(i), {{"name", l.name}, {"path", l.path}}}}});
  }
  return out;
}

Lines toolkit_lines(const Report& r) {
  Lines out = {{"\nToolkit installs found", {{"toolkits", json::array()}}}};
  if (r.toolkits.empty()) out.push_back(text("  none"));
  for (std::size_t i = 0; i < r.toolkits.size(); ++i) {
    const ToolkitInstall& t = r.toolkits[i];
    std::string version = t.version.str();
    if (version.size() < 10) version.resize(10, ' ');
    out.push_back({"  " + version + " " + visible(t.root) + "  [" + t.kind + "; " + t.summary() + "]\n" +
                       "             version from " + visible(t.version_source.empty() ? "nowhere" : t.version_source) +
                       "; found via " + visible(join(t.found_via)),
                   {{"toolkits/" + std::to_string(i),
                     {{"root", t.root}, {"kind", t.kind}, {"version", t.version.str()},
                      {"version_source", t.version_source}, {"has_nvcc", t.has_nvcc}, {"has_runtime", t.has_runtime},
                      {"has_headers", t.has_headers}, {"summary", t.summary()}, {"found_via", t.found_via}}}}});
  }
  out.push_back({"  nvcc on PATH: " + (r.nvcc_on_path.empty() ? std::string("none") : r.nvcc_on_path),
                 {{"nvcc_on_path", r.nvcc_on_path}}});
  return out;
}

Lines environment_lines(const Report& r) {
  Lines out = {{"\nEnvironment", {{"environment", r.env_vars}, {"path_cuda_entries", r.path_cuda_entries}}}};
  if (r.env_vars.empty()) out.push_back(text("  (none of the CUDA-related variables is set)"));
  for (const auto& [k, v] : r.env_vars) out.push_back(text("  " + k + "=" + visible(v)));
  for (const auto& p : r.path_cuda_entries) out.push_back(text("  PATH has " + visible(p)));
  return out;
}

Lines verdict_lines(const Report& r) {
  Lines out = {{"\nVerdicts", {{"verdicts", json::array()}, {"has_errors", has_errors(r)}}}};
  for (std::size_t i = 0; i < r.verdicts.size(); ++i)
    out.push_back({verdict_text(r.verdicts[i], "  "), {{"verdicts/" + std::to_string(i), verdict_json(r.verdicts[i])}}});
  return out;
}

Lines python_lines(const Report& r) {
  if (!r.python.scanned) return {};
  return {{"\n" + python_text(r.python), {{"python", python_json(r.python)}}}};
}

// The whole report, in the text page's order.
Lines describe(const Report& r) {
  Lines out = {text("cudabench environment report\n"),
               {"GPU usable:   " + (r.status.usable ? std::string("yes") : "no: " + r.status.reason) + "\n",
                {{"gpu_usable", r.status.usable}, {"gpu_unusable_reason", r.status.reason}}}};
  for (Lines part : {driver_lines(r), runtime_lines(r), torch_lines(r), host_lines(r.host), gpu_lines(r),
                     library_lines(r), toolkit_lines(r), environment_lines(r), python_lines(r), verdict_lines(r),
                     doctor_facts(r)})
    append(out, std::move(part));
  return out;
}

}  // namespace

std::string fatbin_summary(const FatbinArchs& f) {
  if (!f.read()) return f.error;
  std::string s;
  auto list = [&](const std::map<int, int>& m, const char* prefix) {
    for (const auto& [sm, n] : m) {
      s += (s.empty() ? "" : " ") + std::string(prefix) + std::to_string(sm);
      if (n * 2 < f.containers) s += "(" + std::to_string(n) + "/" + std::to_string(f.containers) + ")";
    }
  };
  list(f.sass, "sm_");
  list(f.ptx, "compute_");
  return s.empty() ? "no kernels" : s;
}

bool has_errors(const Report& r, bool python_only) {
  auto error = [](const Verdict& v) { return v.level == Verdict::Level::Error; };
  if (!python_only && std::any_of(r.verdicts.begin(), r.verdicts.end(), error)) return true;
  for (const auto& e : r.python.envs) {
    const bool ours = std::all_of(e.found_via.begin(), e.found_via.end(),
                                  [](const std::string& v) { return v.rfind("cudabench's own venv", 0) == 0; });
    if (!(python_only && ours) && std::any_of(e.verdicts.begin(), e.verdicts.end(), error)) return true;
  }
  return false;
}

std::string verdict_text(const Verdict& v, const std::string& indent) {
  std::string tag = level_name(v.level);
  for (auto& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (tag.size() < 8) tag.resize(8, ' ');
  const std::string more = "\n" + indent + "        ";
  std::string t = indent + tag + visible(v.message);
  for (const auto& e : v.evidence) t += more + "seen: " + visible(e);
  if (!v.fix.empty()) t += more + "fix: " + visible(v.fix);
  return t;
}

nlohmann::json verdict_json(const Verdict& v) {
  return {{"id", v.id}, {"level", level_name(v.level)}, {"message", v.message}, {"fix", v.fix}, {"evidence", v.evidence}};
}

std::string to_text(const Report& r) {
  std::string out;
  for (const Line& l : describe(r))
    if (l.text) out += *l.text + "\n";
  return visible(out, "\n");  // no terminal escape from any value reaches the terminal
}

nlohmann::json to_json(const Report& r) {
  json j = json::object();
  for (const Line& l : describe(r))
    for (const auto& [key, value] : l.facts) j[json::json_pointer("/" + key)] = value;
  return j;
}

bool is_context_key(const std::string& key) {
  static const std::set<std::string> keys = [] {
    std::set<std::string> out;
    const auto table = nlohmann::json::parse(kContextKeysJson);
    for (const auto& k : table.at("keys")) out.insert(k.at("key").get<std::string>());
    return out;
  }();
  return keys.count(key) > 0;
}

std::vector<std::pair<std::string, std::string>> context_entries(const Report& r, int device) {
  std::vector<std::pair<std::string, std::string>> c;
  const auto& d = r.driver;
  c.emplace_back("gpu_usable", r.status.usable ? "yes" : "no: " + r.status.reason);
  c.emplace_back("libtorch_gpu_usable", r.torch_status.usable ? "yes" : "no: " + r.torch_status.reason);
  c.emplace_back("cuda_driver", d.libcuda_found ? driver_line(d) : "none: " + r.status.reason);
  c.emplace_back("cuda_driver_version", !d.nvml_driver_version.empty() ? d.nvml_driver_version : d.libcuda_file_version);
  c.emplace_back("cuda_runtime_built", cuda_str(r.runtime.built_version));
  c.emplace_back("cuda_runtime_loaded", cuda_str(r.runtime.loaded_version));
  c.emplace_back("cuda_toolkit", r.build.cuda_toolkit_version.empty() ? "none" : r.build.cuda_toolkit_version);
  c.emplace_back("cuda_toolkit_root", r.build.cuda_toolkit_root);
  c.emplace_back("nvcc", r.build.nvcc_path);
  c.emplace_back("cuda_architectures", r.build.cuda_architectures);
  c.emplace_back("cxx_compiler", r.build.cxx_compiler);
  c.emplace_back("cudabench_build_type", r.build.build_type);
  c.emplace_back("cudabench_git", r.build.git_revision);
  c.emplace_back("cudabench_stack", r.build.stack);
  c.emplace_back("cublas", cublas_str(r.libs.cublas_loaded));
  c.emplace_back("cudnn", cudnn_str(r.libs.cudnn_loaded));
  c.emplace_back("libtorch", r.torch.compiled_in ? r.torch.version : "absent");
  c.emplace_back("libtorch_cuda", cuda_str(r.torch.cuda_version));
  c.emplace_back("libtorch_cudnn", cudnn_str(r.torch.cudnn_built));
  c.emplace_back("nccl", r.torch.nccl_version.empty() ? "none" : r.torch.nccl_version);
  const auto& h = r.host;
  c.emplace_back("host_cpu_model", h.cpu_model);
  c.emplace_back("host_microcode", h.microcode.empty() ? "none" : h.microcode);
  c.emplace_back("host_cpu_flags", h.cpu_flags.empty() ? "none" : h.cpu_flags);
  c.emplace_back("host_cpu_id", h.cpu_id.empty() ? "none" : h.cpu_id);
  c.emplace_back("host_sockets", std::to_string(h.sockets));
  c.emplace_back("host_cores", std::to_string(h.cores));
  c.emplace_back("host_threads", std::to_string(h.threads));
  c.emplace_back("host_kernel", h.kernel);
  c.emplace_back("host_os", h.os);
  c.emplace_back("host_memory_gib", gib(h.memory_bytes));
  c.emplace_back("host_cpu_governor", h.cpu_governor.empty() ? "none" : h.cpu_governor);
  c.emplace_back("host_thp", h.thp);
  c.emplace_back("host_numa_nodes", std::to_string(h.numa_nodes));
  const GpuDevice* g = nullptr;
  for (const auto& x : r.gpus)
    if (x.index == device) g = &x;
  if (g) {
    c.emplace_back("gpu_name", g->name);
    c.emplace_back("gpu_count", std::to_string(r.gpus.size()));
    c.emplace_back("gpu_index", std::to_string(g->index));
    c.emplace_back("gpu_compute_capability", compute_capability(g->cc_major, g->cc_minor));
    c.emplace_back("gpu_sms", std::to_string(g->sms));
    c.emplace_back("gpu_memory_clock_khz", std::to_string(g->memory_clock_khz));
    c.emplace_back("gpu_bus_width_bits", std::to_string(g->bus_width_bits));
    c.emplace_back("gpu_peak_bandwidth_GBps", gb(g->peak_bandwidth_bytes_per_s));
    // What frac_of_peak of a DRAM-bound row is against, and how it was had.
    c.emplace_back("gpu_peak_bandwidth_source", "theoretical: memory clock " + std::to_string(g->memory_clock_khz) +
                                                    " kHz x " + std::to_string(g->bus_width_bits) +
                                                    "-bit bus x 2 (DDR) / 8, from the CUDA device attributes");
    c.emplace_back("gpu_l2_bytes", std::to_string(g->l2_bytes));
    c.emplace_back("gpu_pci_bus_id", g->pci_bus_id);
    c.emplace_back("gpu_numa_node", std::to_string(g->numa_node));
    const auto& n = g->nvml;
    c.emplace_back("gpu_persistence_mode", on_off(n.persistence_mode));
    c.emplace_back("gpu_app_clocks_mhz", known(n.app_sm_clock_mhz) + "/" + known(n.app_mem_clock_mhz));
    c.emplace_back("gpu_max_clocks_mhz", known(n.max_sm_clock_mhz) + "/" + known(n.max_mem_clock_mhz));
    c.emplace_back("gpu_power_limit", watts(n.power_limit_w));
    c.emplace_back("gpu_ecc", on_off(n.ecc_current));
    c.emplace_back("gpu_pcie_max", pcie_str(n.pcie_gen_max, n.pcie_width_max));
    // What frac_of_peak of a copy is against, and where it came from.
    c.emplace_back("gpu_pcie_peak", pcie_str(n.peak_pcie_gen(), n.pcie_width_max) + " = " +
                                        gb(pcie_peak_bytes_per_s(n)) + " GB/s per direction, theoretical" +
                                        (n.pcie_gen_max > 0 ? " (the max of this GPU in this system, NVML)"
                                                            : " (the GPU's own max: NVML has no system max)"));
    c.emplace_back("gpu_mig", on_off(n.mig_current));
    c.emplace_back("gpu_compute_mode", compute_mode_name(n.compute_mode));
    std::string all;
    for (const auto& x : r.gpus) all += (all.empty() ? "" : "; ") + std::to_string(x.index) + ": " + x.name + " " + x.pci_bus_id;
    c.emplace_back("gpus", all);
  } else {
    c.emplace_back("gpu_name", "none");
  }
  return c;
}

}  // namespace cudabench::env
