// What the machine shows of the NVIDIA driver outside libcuda and NVML,
// and where shared libraries that are loaded by name would come from. All
// files are read under a root ("/" on a real machine) so that tests build a
// fake /proc, /sys, /dev and /lib/modules and point the probe at it.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/cli.h"  // folder_problem
#include "parsers.h"
#include "probe.h"

namespace fs = std::filesystem;

namespace cudabench::env {
namespace {

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec)) && !ec;
}

// The folder names of a directory, sorted ("" entries skipped); none when
// it cannot be read.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The nvidia kernel module's files for one kernel: nvidia.ko, .ko.xz, .ko.zst
// anywhere under /lib/modules/<release> (updates/dkms, kernel/drivers/video,
// extra, ...). The walk is bounded: a modules tree has some thousands of files.
std::vector<std::string> module_files(const fs::path& root, const std::string& release) {
  std::vector<std::string> out;
  if (release.empty()) return out;
  std::error_code ec;
  const fs::path dir = root / "lib/modules" / release;
  int budget = 200000;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && --budget > 0; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n == "nvidia.ko" || n.rfind("nvidia.ko.", 0) == 0) out.push_back("/" + fs::relative(it->path(), root, ec).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string probe_root() {
  const char* r = std::getenv("CUDABENCH_PROBE_ROOT");
  return r && *r ? std::string(r) : std::string("/");
}

std::string probe_root_problem() {
  const char* r = std::getenv("CUDABENCH_PROBE_ROOT");
  if (!r || !*r) return "";
  const std::string why = folder_problem(r);
  return why.empty() ? "" : std::string("CUDABENCH_PROBE_ROOT=") + r + ": " + why + " (it names a fake machine's root for tests)";
}

SystemInfo probe_system(const std::string& root_dir) {
  SystemInfo s;
  s.root = root_dir;
  const fs::path root(root_dir);
  s.kernel_release = read_first_line((root / "proc/sys/kernel/osrelease").string());
  s.nvidia_module_loaded = present(root / "sys/module/nvidia");
  s.nouveau_module_loaded = present(root / "sys/module/nouveau");
  s.uvm_module_loaded = present(root / "sys/module/nvidia_uvm");
  s.module_files = module_files(root, s.kernel_release);
  // EFI variable: 4 bytes of attributes, then the value (1 = enforcing).
  const std::string sb = read_text_file(
      (root / "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").string(), 64);
  if (sb.size() >= 5) s.secure_boot = sb[4] == 1 ? 1 : 0;
  for (const auto& n : names_in(root / "dev"))
    if (n.rfind("nvidia", 0) == 0 || n == "dxg") s.device_nodes.push_back("/dev/" + n);
  for (const auto& n : names_in(root / "sys/bus/pci/devices")) {
    const fs::path dev = root / "sys/bus/pci/devices" / n;
    if (to_lower(read_first_line((dev / "vendor").string())) != "0x10de") continue;
    PciDevice p;
    p.bus_id = n;
    p.pci_class = to_lower(read_first_line((dev / "class").string()));
    std::string id = to_lower(read_first_line((dev / "device").string()));
    p.device_id = id.rfind("0x", 0) == 0 ? id.substr(2) : id;
    std::error_code ec;
    const fs::path drv = fs::read_symlink(dev / "driver", ec);
    if (!ec) p.driver = drv.filename().string();
    p.virtual_function = present(dev / "physfn");
    s.pci.push_back(p);
  }
  for (const auto& n : names_in(root / "proc"))
    if (!n.empty() && std::all_of(n.begin(), n.end(), ::isdigit) &&
        // comm holds 15 characters: "nv-fabricmanager" reads "nv-fabricmanage".
        read_first_line((root / "proc" / n / "comm").string()).rfind("nv-fabricmanage", 0) == 0)
      s.fabric_manager_running = true;
  const std::string version = to_lower(read_first_line((root / "proc/version").string()));
  // WSL2's kernel: "...-microsoft-standard-WSL2"; its GPU arrives as /dev/dxg.
  s.wsl = version.find("microsoft") != std::string::npos &&
          (version.find("wsl") != std::string::npos || present(root / "dev/dxg"));
  s.wsl_libcuda = present(root / "usr/lib/wsl/lib/libcuda.so.1");
  if (s.wsl)
    for (const char* d : {"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib"}) {
      const fs::path p = root / d / "libcuda.so.1";
      std::error_code ec;
      const fs::path real = fs::canonical(p, ec);
      if (!ec && real.string().find("/usr/lib/wsl/") == std::string::npos) s.linux_libcuda.push_back("/" + std::string(d) + "/libcuda.so.1");
    }
  if (present(root / ".dockerenv")) {
    s.container = "docker";
  } else if (present(root / "run/.containerenv")) {
    s.container = "podman";
  } else {
    const std::string cg = read_text_file((root / "proc/1/cgroup").string(), 1 << 16);
    for (const char* k : {"docker", "kubepods", "containerd", "lxc"})
      if (cg.find(k) != std::string::npos) s.container = "container";
  }
  return s;
}

std::vector<std::string> library_search_dirs(const std::vector<ToolkitInstall>& toolkits,
                                             const std::vector<LoadedLibrary>& loaded) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& d) {
    std::error_code ec;
    const fs::path c = fs::canonical(d, ec);
    if (!ec && fs::is_directory(c, ec) && seen.insert(c.string()).second) out.push_back(c.string());
  };
  // pip wheels: every nvidia/<component>/lib beside the site-packages folder.
  auto add_site = [&](const std::string& path) {
    const auto pos = path.find("/site-packages/");
    if (pos == std::string::npos) return;
    const fs::path nv = fs::path(path.substr(0, pos + 14)) / "nvidia";
    for (const auto& n : names_in(nv)) add(nv / n / "lib");
  };
  for (const auto& t : toolkits) {
    add(fs::path(t.root) / "lib64");
    add(fs::path(t.root) / "lib");
    for (const auto& n : names_in(fs::path(t.root) / "targets")) add(fs::path(t.root) / "targets" / n / "lib");
    add_site(t.root);
  }
  for (const auto& l : loaded) {
    add(fs::path(l.path).parent_path());
    add_site(l.path);
  }
  if (const char* c = std::getenv("CONDA_PREFIX")) add(fs::path(c) / "lib");
  return out;
}

LibraryLookup look_up_library(const std::string& name, const std::string& needed_by,
                              const std::vector<std::string>& search_dirs, const std::string& first_dir) {
  LibraryLookup l;
  l.name = name;
  l.needed_by = needed_by;
  std::error_code ec;
  // The file the loader would open (a link that leads nowhere does not count).
  auto usable = [&](const fs::path& p) {
    const fs::path c = fs::canonical(p, ec);
    return ec ? std::string() : c.string();
  };
  if (!first_dir.empty())
    if (const std::string c = usable(fs::path(first_dir) / name); !c.empty()) {
      l.resolved = c;
      return l;
    }
  // Already loaded: the loader's own answer, loading nothing new.
  if (void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    l.resolved = loaded_path_of(h);
    dlclose(h);
    return l;
  }
  // Else where the loader would look, without loading it (a cuDNN engine
  // library is hundreds of MB): LD_LIBRARY_PATH, the ld.so cache, the
  // default folders.
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream ss(p);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  for (const auto& d : dirs)
    if (const std::string c = usable(fs::path(d) / name); !c.empty()) {
      l.resolved = c;
      return l;
    }
  // The ld.so cache is the real machine's: a fake tree (tests) has none.
  const std::string root = probe_root();
  std::istringstream cache(root == "/" ? command_output({"ldconfig", "-p"}, 5) : std::string());
  for (std::string line; std::getline(cache, line);) {
    // "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
    const auto a = line.find_first_not_of(" \t");
    const auto arrow = line.find(" => ");
    if (a == std::string::npos || arrow == std::string::npos) continue;
    if (line.compare(a, name.size() + 1, name + " ") == 0) {
      l.resolved = line.substr(arrow + 4);
      return l;
    }
  }
  for (const char* d : {"lib", "usr/lib", "lib64", "usr/lib64"})
    if (const std::string c = usable(fs::path(root) / d / name); !c.empty()) {
      l.resolved = c;
      return l;
    }
  l.error = name + ": cannot open shared object file: No such file or directory";
  for (const auto& d : search_dirs)
    if (!usable(fs::path(d) / name).empty()) l.elsewhere.push_back((fs::path(d) / name).string());
  return l;
}

std::vector<LibraryLookup> probe_lazy_libraries(const Report& r) {
  std::vector<LibraryLookup> out;
  const auto dirs = library_search_dirs(r.toolkits, r.loaded);
  for (const auto& lib : r.loaded) {
    // cuDNN 8 and 9 are a front library that loads its parts by name when
    // first used: from its own folder, else the library path.
    if (lib.name.rfind("libcudnn.so.", 0) != 0) continue;
    const std::string major = lib.name.substr(12);
    static const char* const v9[] = {"graph", "engines_precompiled", "engines_runtime_compiled",
                                     "heuristic", "ops", "cnn", "adv"};
    static const char* const v8[] = {"ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"};
    std::vector<std::string> parts;
    if (major == "9") parts.assign(std::begin(v9), std::end(v9));
    if (major == "8") parts.assign(std::begin(v8), std::end(v8));
    const std::string dir = fs::path(lib.path).parent_path().string();
    for (const auto& p : parts)
      out.push_back(look_up_library("libcudnn_" + p + ".so." + major,
                                    "cuDNN " + major + " (" + lib.path + ")", dirs, dir));
  }
  return out;
}

}  // namespace cudabench::env
