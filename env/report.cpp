#include "report.h"

#include <iomanip>
#include <sstream>

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

nlohmann::json nvml_json(const NvmlGpuInfo& n) {
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
          {"pcie_max_bytes_per_s", pcie_bytes_per_s(n.pcie_gen_max, n.pcie_width_max)},
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

}  // namespace

bool has_errors(const Report& r) {
  for (const auto& v : r.verdicts)
    if (v.level == Verdict::Level::Error) return true;
  return false;
}

std::string to_text(const Report& r) {
  std::ostringstream o;
  const auto& d = r.driver;
  o << "cudabench environment report\n\n";
  o << "GPU usable:   " << (r.status.usable ? "yes" : "no: " + r.status.reason) << "\n\n";

  o << "Driver\n";
  o << "  kernel module      " << (d.kernel_module_version.empty() ? "none (/proc/driver/nvidia/version absent)" : d.kernel_module_version) << "\n";
  o << "  libcuda            " << driver_line(d) << "\n";
  if (!d.libcuda_path.empty()) o << "  libcuda path       " << d.libcuda_path << (d.libcuda_is_stub ? "  (toolkit STUB)" : "") << "\n";
  if (d.nvml_found) o << "  NVML               " << d.nvml_driver_version << ", CUDA " << cuda_str(d.nvml_cuda_version) << "\n";
  if (d.init_result > 0) o << "  cuInit             " << d.init_error << "\n";
  const auto& sy = r.system;
  o << "  device nodes       " << (sy.device_nodes.empty() ? std::string("none (/dev/nvidia* absent)") : join(sy.device_nodes)) << "\n";
  o << "  kernel modules     nvidia " << (sy.nvidia_module_loaded ? "loaded" : "not loaded")
    << (sy.nouveau_module_loaded ? ", nouveau LOADED" : "") << "; module files for " << (sy.kernel_release.empty() ? "?" : sy.kernel_release)
    << ": " << (sy.module_files.empty() ? std::string("none") : join(sy.module_files)) << "\n";
  for (const auto& p : sy.pci)
    o << "  PCI " << p.bus_id << "   10de:" << p.device_id << " class " << p.pci_class << ", driver "
      << (p.driver.empty() ? "none" : p.driver) << "\n";
  if (sy.wsl) o << "  WSL2               yes; /usr/lib/wsl/lib/libcuda.so.1 " << (sy.wsl_libcuda ? "present" : "absent") << "\n";
  if (!sy.container.empty()) o << "  container          " << sy.container << "\n";
  if (sy.fabric_manager_running) o << "  fabric manager     running\n";
  if (d.nvml_init_result > 0) o << "  NVML               " << d.nvml_error << "\n";
  o << "\n";

  o << "CUDA runtime\n";
  if (r.runtime.compiled_in) {
    o << "  built with         " << cuda_str(r.runtime.built_version) << " (toolkit " << r.build.cuda_toolkit_version << " at " << r.build.cuda_toolkit_root << ")\n";
    o << "  loaded             " << cuda_str(r.runtime.loaded_version) << (r.runtime.loaded_path.empty() ? " (static)" : " from " + r.runtime.loaded_path) << "\n";
    o << "  compiler           " << r.build.nvcc_path << ", architectures " << r.build.cuda_architectures << "\n";
    o << "  kernels (fatbin)   " << fatbin_summary(r.binary_fatbin) << "\n";
    o << "  cuBLAS             built " << cublas_str(r.libs.cublas_built) << ", loaded " << cublas_str(r.libs.cublas_loaded) << "\n";
  } else {
    o << "  not in this build (no nvcc at configure time)\n";
  }
  o << "  cuDNN loaded       " << cudnn_str(r.libs.cudnn_loaded) << "\n";
  o << "  host compiler      " << r.build.cxx_compiler << ", " << r.build.build_type << " build, git " << r.build.git_revision << "\n\n";

  o << "LibTorch\n";
  if (r.torch.compiled_in) {
    o << "  version            " << r.torch.version << "\n";
    o << "  built with CUDA    " << cuda_str(r.torch.cuda_version) << ", cuDNN " << cudnn_str(r.torch.cudnn_built) << " (loaded " << cudnn_str(r.torch.cudnn_runtime) << ")\n";
    o << "  sees a GPU         " << (r.torch.cuda_available ? "yes, " + std::to_string(r.torch.device_count) : std::string("no")) << "\n";
    o << "  library            " << r.torch.library_path << "\n";
    if (!r.torch_fatbin.file.empty()) o << "  kernels (fatbin)   " << fatbin_summary(r.torch_fatbin) << "\n";
    o << "  NCCL               "
      << (r.torch.nccl_version.empty() ? "none (" + r.torch.nccl_error + ")"
                                       : r.torch.nccl_version + " (" + r.torch.nccl_path + ")")
      << "\n\n";
  } else {
    o << "  absent from this build (see docs/building.md: LibTorch)\n\n";
  }

  o << "Host\n";
  const auto& h = r.host;
  o << "  CPU                " << (h.cpu_model.empty() ? "?" : h.cpu_model) << ": " << h.sockets << " socket(s), "
    << h.cores << " cores, " << h.threads << " threads; " << h.numa_nodes << " NUMA node(s)\n";
  o << "  memory             " << gib(h.memory_bytes) << "; transparent huge pages " << (h.thp.empty() ? "?" : h.thp)
    << "; CPU governor " << (h.cpu_governor.empty() ? "none (no cpufreq)" : h.cpu_governor) << "\n";
  o << "  OS                 " << (h.os.empty() ? "?" : h.os) << ", kernel " << (h.kernel.empty() ? "?" : h.kernel) << "\n\n";

  o << "GPUs\n";
  if (r.gpus.empty()) o << "  none\n";
  for (const auto& g : r.gpus) {
    o << "  [" << g.index << "] " << g.name << "  sm_" << g.cc_major << g.cc_minor << ", " << g.sms << " SMs, "
      << gb(static_cast<double>(g.total_memory_bytes)) << " GB, L2 " << g.l2_bytes / (1024 * 1024) << " MiB, PCI " << g.pci_bus_id
      << ", NUMA node " << (g.numa_node < 0 ? std::string("?") : std::to_string(g.numa_node))
      << (g.local_cpus.empty() ? "" : " (CPUs " + g.local_cpus + ")") << "\n";
    o << "      SM clock " << g.sm_clock_khz / 1000 << " MHz, memory clock " << g.memory_clock_khz / 1000 << " MHz x "
      << g.bus_width_bits << " bit = " << gb(g.peak_bandwidth_bytes_per_s) << " GB/s theoretical peak\n";
    const auto& n = g.nvml;
    if (!n.found) {
      o << "      NVML: no data for this GPU" << (r.driver.nvml_found ? "" : " (" + r.driver.nvml_error + ")") << "\n";
      continue;
    }
    o << "      UUID " << (n.uuid.empty() ? "?" : n.uuid) << ", serial " << (n.serial.empty() ? "?" : n.serial)
      << ", persistence mode " << on_off(n.persistence_mode) << "\n";
    o << "      clocks (SM / memory, MHz): now " << known(n.sm_clock_mhz) << " / " << known(n.mem_clock_mhz)
      << ", application " << known(n.app_sm_clock_mhz) << " / " << known(n.app_mem_clock_mhz) << ", max "
      << known(n.max_sm_clock_mhz) << " / " << known(n.max_mem_clock_mhz) << "\n";
    o << "      power limit " << watts(n.power_limit_w) << " (default " << watts(n.power_default_w) << ", max "
      << watts(n.power_max_w) << ")\n";
    o << "      ECC " << on_off(n.ecc_current) << " (pending " << on_off(n.ecc_pending) << "), volatile errors "
      << known(n.ecc_volatile_corrected) << " corrected, "
      << known(n.ecc_volatile_uncorrected) << " uncorrected\n";
    const double link = pcie_bytes_per_s(n.pcie_gen_max, n.pcie_width_max);
    o << "      PCIe " << pcie_str(n.pcie_gen, n.pcie_width) << " now, " << pcie_str(n.pcie_gen_max, n.pcie_width_max)
      << " max" << (link > 0 ? " = " + gb(link) + " GB/s per direction" : "") << "\n";
    o << "      MIG " << on_off(n.mig_current) << (n.mig_pending >= 0 && n.mig_pending != n.mig_current ? " (pending " + on_off(n.mig_pending) + ")" : "")
      << ", compute mode " << compute_mode_name(n.compute_mode) << "\n";
  }
  o << "\nLoaded libraries (at the time of this report)\n";
  if (r.loaded.empty()) o << "  none of interest\n";
  for (const auto& l : r.loaded) o << "  " << std::left << std::setw(22) << l.name << " " << l.path << "\n";

  o << "\nToolkit installs found\n";
  if (r.toolkits.empty()) o << "  none\n";
  for (const auto& t : r.toolkits) {
    o << "  " << std::left << std::setw(10) << t.version.str() << " " << t.root << "  [" << t.kind << "; " << t.summary() << "]\n";
    o << "             version from " << (t.version_source.empty() ? "nowhere" : t.version_source) << "; found via ";
    for (size_t i = 0; i < t.found_via.size(); ++i) o << (i ? ", " : "") << t.found_via[i];
    o << "\n";
  }
  o << "  nvcc on PATH: " << (r.nvcc_on_path.empty() ? "none" : r.nvcc_on_path) << "\n";

  o << "\nEnvironment\n";
  if (r.env_vars.empty()) o << "  (none of the CUDA-related variables is set)\n";
  for (const auto& [k, v] : r.env_vars) o << "  " << k << "=" << v << "\n";
  for (const auto& p : r.path_cuda_entries) o << "  PATH has " << p << "\n";

  o << "\nVerdicts\n";
  for (const auto& v : r.verdicts) {
    std::string tag = level_name(v.level);
    for (auto& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    o << "  " << std::left << std::setw(8) << tag << v.message << "\n";
    for (const auto& e : v.evidence) o << "          seen: " << e << "\n";
    if (!v.fix.empty()) o << "          fix: " << v.fix << "\n";
  }
  return o.str();
}

nlohmann::json to_json(const Report& r) {
  using nlohmann::json;
  const auto& d = r.driver;
  json j;
  j["gpu_usable"] = r.status.usable;
  j["gpu_unusable_reason"] = r.status.reason;
  j["build"] = {{"cuda_toolkit_version", r.build.cuda_toolkit_version},
                {"cuda_toolkit_root", r.build.cuda_toolkit_root},
                {"nvcc", r.build.nvcc_path},
                {"cuda_architectures", r.build.cuda_architectures},
                {"cxx_compiler", r.build.cxx_compiler},
                {"build_type", r.build.build_type},
                {"torch_version", r.build.torch_version},
                {"git_revision", r.build.git_revision}};
  j["host"] = {{"cpu_model", r.host.cpu_model},
               {"sockets", r.host.sockets},
               {"cores", r.host.cores},
               {"threads", r.host.threads},
               {"kernel", r.host.kernel},
               {"os", r.host.os},
               {"memory_bytes", r.host.memory_bytes},
               {"cpu_governor", r.host.cpu_governor},
               {"transparent_hugepages", r.host.thp},
               {"numa_nodes", r.host.numa_nodes}};
  j["driver"] = {{"kernel_module_version", d.kernel_module_version},
                 {"libcuda_found", d.libcuda_found},
                 {"libcuda_path", d.libcuda_path},
                 {"libcuda_error", d.libcuda_error},
                 {"libcuda_file_version", d.libcuda_file_version},
                 {"libcuda_is_stub", d.libcuda_is_stub},
                 {"cuda_version", cuda_str(d.cuda_version)},
                 {"cuda_version_int", d.cuda_version},
                 {"cu_init_result", d.init_result},
                 {"cu_init_error", d.init_error},
                 {"device_count", d.device_count},
                 {"nvml_found", d.nvml_found},
                 {"nvml_error", d.nvml_error},
                 {"nvml_driver_version", d.nvml_driver_version},
                 {"nvml_cuda_version", cuda_str(d.nvml_cuda_version)},
                 {"device_nodes_present", d.device_nodes_present},
                 {"nvml_init_result", d.nvml_init_result},
                 {"nvml_library_path", d.nvml_library_path}};
  j["runtime"] = {{"compiled_in", r.runtime.compiled_in},
                  {"built_version", cuda_str(r.runtime.built_version)},
                  {"loaded_version", cuda_str(r.runtime.loaded_version)},
                  {"loaded_path", r.runtime.loaded_path}};
  j["libraries"] = {{"cublas_built", cublas_str(r.libs.cublas_built)},
                    {"cublas_loaded", cublas_str(r.libs.cublas_loaded)},
                    {"cudnn_loaded", cudnn_str(r.libs.cudnn_loaded)}};
  j["torch"] = {{"compiled_in", r.torch.compiled_in},
                {"version", r.torch.version},
                {"cuda_version", cuda_str(r.torch.cuda_version)},
                {"cudnn_built", cudnn_str(r.torch.cudnn_built)},
                {"cudnn_runtime", cudnn_str(r.torch.cudnn_runtime)},
                {"cuda_available", r.torch.cuda_available},
                {"device_count", r.torch.device_count},
                {"library_path", r.torch.library_path},
                {"nccl_version", r.torch.nccl_version},
                {"nccl_path", r.torch.nccl_path},
                {"nccl_error", r.torch.nccl_error}};
  j["gpus"] = json::array();
  for (const auto& g : r.gpus)
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                         {"sms", g.sms},
                         {"total_memory_bytes", g.total_memory_bytes},
                         {"memory_clock_khz", g.memory_clock_khz},
                         {"bus_width_bits", g.bus_width_bits},
                         {"sm_clock_khz", g.sm_clock_khz},
                         {"l2_bytes", g.l2_bytes},
                         {"pci_bus_id", g.pci_bus_id},
                         {"peak_bandwidth_bytes_per_s", g.peak_bandwidth_bytes_per_s},
                         {"numa_node", g.numa_node},
                         {"local_cpus", g.local_cpus},
                         {"nvml", nvml_json(g.nvml)}});
  const auto& sy = r.system;
  j["system"] = {{"root", sy.root},
                 {"kernel_release", sy.kernel_release},
                 {"nvidia_module_loaded", sy.nvidia_module_loaded},
                 {"nouveau_module_loaded", sy.nouveau_module_loaded},
                 {"module_files", sy.module_files},
                 {"secure_boot", sy.secure_boot},
                 {"device_nodes", sy.device_nodes},
                 {"fabric_manager_running", sy.fabric_manager_running},
                 {"wsl", sy.wsl},
                 {"wsl_libcuda", sy.wsl_libcuda},
                 {"linux_libcuda", sy.linux_libcuda},
                 {"container", sy.container},
                 {"pci", json::array()}};
  for (const auto& p : sy.pci)
    j["system"]["pci"].push_back({{"bus_id", p.bus_id}, {"device_id", p.device_id}, {"class", p.pci_class}, {"driver", p.driver}});
  j["nvml_gpus"] = json::array();
  for (const auto& g : r.nvml_gpus) {
    json n = nvml_json(g);
    n["nvml_index"] = g.nvml_index;
    n["name"] = g.name;
    n["pci_bus_id"] = g.pci_bus_id;
    n["compute_capability"] = std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
    j["nvml_gpus"].push_back(n);
  }
  for (const auto* f : {&r.binary_fatbin, &r.torch_fatbin}) {
    json a = {{"file", f->file}, {"error", f->error}, {"containers", f->containers}, {"sass", json::object()}, {"ptx", json::object()}};
    for (const auto& [sm, n] : f->sass) a["sass"]["sm_" + std::to_string(sm)] = n;
    for (const auto& [sm, n] : f->ptx) a["ptx"]["compute_" + std::to_string(sm)] = n;
    j["fatbins"][f == &r.binary_fatbin ? "binary" : "torch"] = a;
  }
  j["lazy_libraries"] = json::array();
  for (const auto& l : r.lazy_libraries)
    j["lazy_libraries"].push_back({{"name", l.name}, {"needed_by", l.needed_by}, {"resolved", l.resolved},
                                   {"error", l.error}, {"elsewhere", l.elsewhere}});
  j["loaded_libraries"] = json::array();
  for (const auto& l : r.loaded) j["loaded_libraries"].push_back({{"name", l.name}, {"path", l.path}});
  j["toolkits"] = json::array();
  for (const auto& t : r.toolkits)
    j["toolkits"].push_back({{"root", t.root},
                             {"kind", t.kind},
                             {"version", t.version.str()},
                             {"version_source", t.version_source},
                             {"has_nvcc", t.has_nvcc},
                             {"has_runtime", t.has_runtime},
                             {"has_headers", t.has_headers},
                             {"summary", t.summary()},
                             {"found_via", t.found_via}});
  j["nvcc_on_path"] = r.nvcc_on_path;
  j["environment"] = r.env_vars;
  j["path_cuda_entries"] = r.path_cuda_entries;
  j["verdicts"] = json::array();
  for (const auto& v : r.verdicts)
    j["verdicts"].push_back({{"id", v.id}, {"level", level_name(v.level)}, {"message", v.message}, {"fix", v.fix},
                             {"evidence", v.evidence}});
  j["has_errors"] = has_errors(r);
  return j;
}

std::vector<std::pair<std::string, std::string>> context_entries(const Report& r, int device) {
  std::vector<std::pair<std::string, std::string>> c;
  const auto& d = r.driver;
  c.emplace_back("gpu_usable", r.status.usable ? "yes" : "no: " + r.status.reason);
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
  c.emplace_back("cublas", cublas_str(r.libs.cublas_loaded));
  c.emplace_back("cudnn", cudnn_str(r.libs.cudnn_loaded));
  c.emplace_back("libtorch", r.torch.compiled_in ? r.torch.version : "absent");
  c.emplace_back("libtorch_cuda", cuda_str(r.torch.cuda_version));
  c.emplace_back("libtorch_cudnn", cudnn_str(r.torch.cudnn_built));
  c.emplace_back("nccl", r.torch.nccl_version.empty() ? "none" : r.torch.nccl_version);
  const auto& h = r.host;
  c.emplace_back("host_cpu_model", h.cpu_model);
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
    c.emplace_back("gpu_compute_capability", std::to_string(g->cc_major) + "." + std::to_string(g->cc_minor));
    c.emplace_back("gpu_sms", std::to_string(g->sms));
    c.emplace_back("gpu_memory_clock_khz", std::to_string(g->memory_clock_khz));
    c.emplace_back("gpu_bus_width_bits", std::to_string(g->bus_width_bits));
    c.emplace_back("gpu_peak_bandwidth_GBps", gb(g->peak_bandwidth_bytes_per_s));
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
