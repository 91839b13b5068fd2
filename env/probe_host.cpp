// The host: enough that two machines' results say how the machines differ
// (an AMD EPYC VM from an Intel Xeon VM, a powersave governor, THP off).
// Everything is read from files under `root`, so tests use fake trees.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "parsers.h"
#include "probe.h"

namespace fs = std::filesystem;

namespace cudabench::env {
namespace {

std::string first_line(const fs::path& p) { return read_first_line(p.string()); }

std::string trim(std::string s) {
  const auto a = s.find_first_not_of(" \t");
  const auto b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The identity fields of /proc/cpuinfo (x86, then Arm), in the order the
// id names them, each with its word in the id ("" for the vendor).
const std::vector<std::pair<std::string, std::string>>& id_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"vendor_id", ""}, {"cpu family", "family"}, {"model", "model"}, {"stepping", "stepping"},
      {"CPU implementer", "implementer"}, {"CPU architecture", "architecture"}, {"CPU part", "part"},
      {"CPU variant", "variant"}, {"CPU revision", "revision"}};
  return names;
}

bool is_id_field(const std::string& key) {
  for (const auto& [field, _] : id_names())
    if (field == key) return true;
  return false;
}

// "AuthenticAMD family 25 model 17 stepping 1" from the first CPU's fields.
std::string cpu_id(const std::map<std::string, std::string>& fields) {
  std::string out;
  for (const auto& [field, word] : id_names())
    if (fields.count(field)) out += (out.empty() ? "" : " ") + (word.empty() ? "" : word + " ") + fields.at(field);
  return out;
}

}  // namespace

HostInfo probe_host(const std::string& root_dir) {
  HostInfo h;
  const fs::path root(root_dir);

  // /proc/cpuinfo: one block per logical CPU; a core is a distinct
  // (physical id, core id) pair, a socket a distinct physical id.
  std::istringstream cpuinfo(read_text_file((root / "proc/cpuinfo").string(), 16 << 20));
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, physical = "0", model_fallback;
  bool has_topology = false;
  int cpu_cores_field = 0;
  std::map<std::string, std::string> id;  // the first CPU's identity fields
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "processor") {
      ++h.threads;
      physical = "0";
    } else if (key == "model name" && h.cpu_model.empty()) {
      h.cpu_model = value;
    } else if (key == "microcode" && h.microcode.empty()) {
      h.microcode = value;
    } else if ((key == "flags" || key == "Features") && h.cpu_flags.empty()) {
      h.cpu_flags = value;
    } else if (is_id_field(key) && !id.count(key)) {
      id[key] = value;
    } else if ((key == "Model" || key == "Hardware") && model_fallback.empty()) {
      model_fallback = value;  // Arm and others have no "model name"
    } else if (key == "physical id") {
      physical = value;
      sockets.insert(value);
    } else if (key == "core id") {
      has_topology = true;
      cores.insert({physical, value});
    } else if (key == "cpu cores" && cpu_cores_field == 0) {
      cpu_cores_field = std::atoi(value.c_str());
    }
  }
  if (h.cpu_model.empty()) h.cpu_model = model_fallback;
  h.cpu_id = cpu_id(id);
  h.sockets = sockets.empty() ? (h.threads ? 1 : 0) : static_cast<int>(sockets.size());
  h.cores = has_topology ? static_cast<int>(cores.size())
                         : (cpu_cores_field ? cpu_cores_field * h.sockets : h.threads);

  h.kernel = first_line(root / "proc/sys/kernel/osrelease");
  {
    std::istringstream os(read_text_file((root / "etc/os-release").string()));
    while (std::getline(os, line))
      if (line.rfind("PRETTY_NAME=", 0) == 0) {
        h.os = line.substr(12);
        if (h.os.size() >= 2 && h.os.front() == '"' && h.os.back() == '"') h.os = h.os.substr(1, h.os.size() - 2);
      }
  }
  {
    std::istringstream mem(read_text_file((root / "proc/meminfo").string()));
    while (std::getline(mem, line))
      if (line.rfind("MemTotal:", 0) == 0) h.memory_bytes = std::atoll(line.c_str() + 9) * 1024LL;
  }
  h.cpu_governor = first_line(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  {
    // "always [madvise] never": the bracketed word is the setting.
    const std::string thp = first_line(root / "sys/kernel/mm/transparent_hugepage/enabled");
    const auto a = thp.find('['), b = thp.find(']');
    h.thp = a != std::string::npos && b > a ? thp.substr(a + 1, b - a - 1) : thp;
  }
  std::error_code ec;
  static const std::regex node_re(R"(node[0-9]+)");
  for (fs::directory_iterator it(root / "sys/devices/system/node", ec), end; !ec && it != end; it.increment(ec))
    if (std::regex_match(it->path().filename().string(), node_re)) ++h.numa_nodes;
  return h;
}

void pci_numa_affinity(const std::string& sys_root, const std::string& bus_id, int* node,
                       std::string* cpus) {
  // sysfs names PCI devices in lower case: 0000:1b:00.0.
  const fs::path dev = fs::path(sys_root) / "bus/pci/devices" / to_lower(bus_id);
  const std::string n = first_line(dev / "numa_node");
  *node = n.empty() ? -1 : std::atoi(n.c_str());
  *cpus = first_line(dev / "local_cpulist");
}

}  // namespace cudabench::env
