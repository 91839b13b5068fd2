// Toolkit installs on the machine: the system ones (/usr/local/cuda,
// /usr/local/cuda-X.Y, /opt/cuda), CUDA_HOME / CUDA_PATH, the nvcc first on
// PATH, conda environments (the CUDA <= 11 `cudatoolkit` layout with runtime
// libraries in lib/, and the CUDA 12+ split packages under
// targets/x86_64-linux), and pip wheels (site-packages/nvidia/...).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "process/child.h"
#include "files.h"
#include "parsers.h"
#include "probe.h"

extern char** environ;

namespace fs = std::filesystem;

namespace cudabench::env {

std::string command_output(const std::vector<std::string>& argv, int seconds) {
  process::ChildOptions o;
  o.seconds = seconds;
  return process::run_command(argv, o).output;
}
namespace {

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string read_file(const fs::path& p) { return read_text_file(p.string()); }

// Groups of the regex match of the first entry of `dir` whose file name
// matches `re` (g[0] = the whole name); empty when none does.
using Groups = std::vector<std::string>;
Groups find_entry(const fs::path& dir, const std::regex& re, fs::path* found = nullptr) {
  for (const auto& p : list_dir(dir)) {
    const std::string name = p.filename().string();
    std::smatch m;
    if (std::regex_match(name, m, re)) {
      if (found) *found = p;
      return Groups(m.begin(), m.end());
    }
  }
  return {};
}

bool has_cudart(const fs::path& dir) {
  static const std::regex re(R"(libcudart\.so(\..*)?)");
  return !find_entry(dir, re).empty();
}

// The first entry of `dir` whose name `parse` finds a version in, and that name.
template <class Parse>
std::pair<Version, std::string> first_versioned(const fs::path& dir, Parse parse) {
  for (const auto& p : list_dir(dir)) {
    const std::string name = p.filename().string();
    if (const Version v = parse(name); v.known()) return {v, name};
  }
  return {Version{}, ""};
}

// `nvcc --version` of an nvcc that nothing else dates (5 s at most).
std::string nvcc_version_output(const fs::path& nvcc) { return command_output({nvcc.string(), "--version"}, 5); }

// The version of the toolkit in `root`, and the file that told it.
std::pair<Version, std::string> toolkit_version(const fs::path& root) {
  // 1. version.json (CUDA 11.1+ runfile/deb installs)
  if (path_exists(root / "version.json"))
    if (const Version v = parse_version_json(read_file(root / "version.json")); v.known())
      return {v, "version.json"};
  // 2. version.txt (CUDA <= 11.0): "CUDA Version 10.2.89"
  if (path_exists(root / "version.txt"))
    if (const Version v = parse_version_txt(read_file(root / "version.txt")); v.known())
      return {v, "version.txt"};
  // 3. a tree assembled from NVIDIA's wheels: dist-info/nvidia_cuda_nvcc-13.0.88.dist-info
  for (const char* sub : {"dist-info", ""}) {
    auto [v, name] = first_versioned(*sub ? root / sub : root,
                                     [](const std::string& n) { return parse_wheel_dist_info(n); });
    if (v.known()) return {v, std::string(*sub ? "dist-info/" : "") + name};
  }
  // 4. conda metadata: cuda-nvcc-12.4.131-*.json, cuda-cudart-*, cudatoolkit-11.8.0-*.json
  if (auto [v, name] = first_versioned(root / "conda-meta", [](const std::string& n) { return parse_conda_meta_name(n); });
      v.known())
    return {v, "conda-meta/" + name};
  // 5. the runtime header's CUDART_VERSION
  for (const fs::path inc : {root / "include", root / "targets/x86_64-linux/include"})
    if (const Version v = parse_cudart_header(read_file(inc / "cuda_runtime_api.h")); v.known())
      return {v, fs::relative(inc, root).string() + "/cuda_runtime_api.h"};
  // 6. a versioned runtime library name: libcudart.so.11.8.89
  for (const fs::path lib : {root / "lib64", root / "lib", root / "targets/x86_64-linux/lib"}) {
    auto [v, name] = first_versioned(lib, [](const std::string& n) {
      return n.rfind("libcudart.so.", 0) == 0 ? Version::parse(version_from_soname(n)) : Version{};
    });
    if (v.known()) return {v, fs::relative(lib, root).string() + "/" + name};
  }
  // 7. what its nvcc says
  if (is_executable(root / "bin/nvcc"))
    if (const Version v = parse_nvcc_version(nvcc_version_output(root / "bin/nvcc")); v.known())
      return {v, "bin/nvcc --version"};
  return {Version{}, ""};
}

void add_install(std::vector<ToolkitInstall>& all, ToolkitInstall t,
                 const std::string& via) {
  for (auto& have : all) {
    if (have.root == t.root) {
      if (std::find(have.found_via.begin(), have.found_via.end(), via) == have.found_via.end())
        have.found_via.push_back(via);
      return;
    }
  }
  t.found_via = {via};
  all.push_back(std::move(t));
}

}  // namespace

std::string find_on_path(const std::string& path_var, const std::string& exe) {
  std::stringstream ss(path_var);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / exe;
    if (is_executable(p)) return p.string();
  }
  return "";
}

std::optional<ToolkitInstall> inspect_toolkit(const std::string& root_in) {
  const fs::path root = canonical_str(root_in);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  // A root inside pip's layout (site-packages/nvidia/cu13) is a pip install:
  // its version is in the wheels' dist-info beside it.
  if (root.parent_path().filename() == "nvidia" &&
      root.parent_path().parent_path().filename() == "site-packages")
    if (auto t = inspect_pip_site(root.parent_path().parent_path().string()); t && t->root == root.string())
      return t;
  ToolkitInstall t;
  t.root = root.string();
  t.has_nvcc = is_executable(root / "bin/nvcc");
  t.has_headers = path_exists(root / "include/cuda_runtime_api.h") ||
                  path_exists(root / "targets/x86_64-linux/include/cuda_runtime_api.h");
  t.has_runtime = has_cudart(root / "lib64") || has_cudart(root / "lib") ||
                  has_cudart(root / "targets/x86_64-linux/lib");
  if (!t.has_nvcc && !t.has_headers && !t.has_runtime) return std::nullopt;
  auto [v, src] = toolkit_version(root);
  t.version = v;
  t.version_source = src;
  if (path_exists(root / "conda-meta")) {
    static const std::regex re(R"(cudatoolkit-.*\.json)");
    t.kind = find_entry(root / "conda-meta", re).empty() ? "conda" : "conda-cudatoolkit";
  } else {
    t.kind = "system";
  }
  return t;
}

std::optional<ToolkitInstall> inspect_pip_site(const std::string& site_in) {
  const fs::path site = canonical_str(site_in);
  const fs::path nv = site / "nvidia";
  std::error_code ec;
  if (!fs::is_directory(nv, ec)) return std::nullopt;
  ToolkitInstall t;
  t.kind = "pip";
  // CUDA 13 wheels put everything under nvidia/cu13/{bin,include,lib}.
  fs::path cu_dir;
  static const std::regex cu_re(R"(cu[0-9]+)");
  if (!find_entry(nv, cu_re, &cu_dir).empty()) {
    t.root = cu_dir.string();
    t.has_nvcc = is_executable(cu_dir / "bin/nvcc");
    t.has_headers = path_exists(cu_dir / "include/cuda_runtime_api.h");
    t.has_runtime = has_cudart(cu_dir / "lib");
  } else {
    // CUDA 12 wheels: one folder per component.
    t.root = nv.string();
    t.has_nvcc = is_executable(nv / "cuda_nvcc/bin/nvcc");
    t.has_headers = path_exists(nv / "cuda_runtime/include/cuda_runtime_api.h");
    t.has_runtime = has_cudart(nv / "cuda_runtime/lib");
  }
  if (!t.has_nvcc && !t.has_headers && !t.has_runtime) return std::nullopt;
  // The version of the compiler wheel if present, else the runtime's.
  for (const char* comp : {"nvcc", "runtime"}) {
    auto [v, name] = first_versioned(site, [comp](const std::string& n) { return parse_wheel_dist_info(n, comp); });
    if (v.known()) {
      t.version = v;
      t.version_source = name;
      break;
    }
  }
  return t;
}

DiscoveryInput DiscoveryInput::from_process(const std::vector<LoadedLibrary>& loaded) {
  DiscoveryInput in;
  for (const char* k : {"PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CONDA_PREFIX",
                        "VIRTUAL_ENV", "CUDABENCH_EXTRA_TOOLKITS"})
    if (const char* v = std::getenv(k)) in.env[k] = v;
  // The site-packages LibTorch was loaded from (a pip torch brings its own
  // CUDA wheels) and the project's own virtual environment.
  for (const auto& lib : loaded) {
    const auto pos = lib.path.find("/site-packages/");
    if (pos != std::string::npos)
      in.site_packages.push_back(lib.path.substr(0, pos + std::strlen("/site-packages")));
  }
  std::vector<fs::path> venvs;
  if (const char* v = std::getenv("VIRTUAL_ENV")) venvs.emplace_back(v);
  // The project's venv, by the rule scripts/setup.sh uses.
  if (const char* c = std::getenv("CUDABENCH_VENV")) venvs.emplace_back(c);
  else if (const char* k = std::getenv("CUDABENCH_CACHE")) venvs.push_back(fs::path(k) / "venv");
  else if (const char* h = std::getenv("HOME")) venvs.push_back(fs::path(h) / ".cache/cudabench/venv");
  for (const auto& v : venvs)
    for (const auto& lib : list_dir(v / "lib"))
      if (lib.filename().string().rfind("python", 0) == 0)
        in.site_packages.push_back((lib / "site-packages").string());
  return in;
}

std::vector<ToolkitInstall> discover_toolkits(const DiscoveryInput& in) {
  std::vector<ToolkitInstall> all;
  auto env = [&](const char* k) -> std::string {
    auto it = in.env.find(k);
    return it == in.env.end() ? "" : it->second;
  };
  auto try_root = [&](const fs::path& root, const std::string& via) {
    if (auto t = inspect_toolkit(root.string())) add_install(all, *t, via);
  };

  // System locations: cuda and cuda-X.Y under each root.
  static const std::regex sys_re(R"(cuda(-[0-9]+(\.[0-9]+)*)?)");
  for (const auto& sys : in.system_roots)
    for (const auto& p : list_dir(sys))
      if (std::regex_match(p.filename().string(), sys_re)) try_root(p, p.string());

  for (const char* k : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (!env(k).empty()) try_root(env(k), k);

  // Extra roots a user names (the toolkit matrix uses this), ':'-separated.
  {
    std::stringstream ss(env("CUDABENCH_EXTRA_TOOLKITS"));
    std::string r;
    while (std::getline(ss, r, ':'))
      if (!r.empty()) try_root(r, "CUDABENCH_EXTRA_TOOLKITS");
  }

  // The nvcc first on PATH: its install is <dir>/.. .
  const std::string nvcc = find_on_path(env("PATH"), "nvcc");
  if (!nvcc.empty()) {
    const fs::path real = canonical_str(nvcc);
    try_root(real.parent_path().parent_path(), "PATH (first nvcc)");
  }

  // Conda: the active environment and its siblings under <root>/envs.
  const std::string conda = env("CONDA_PREFIX");
  if (!conda.empty()) {
    std::set<std::string> prefixes{canonical_str(conda)};
    fs::path base = fs::path(conda);
    if (base.parent_path().filename() == "envs") base = base.parent_path().parent_path();
    prefixes.insert(canonical_str(base));
    for (const auto& e : list_dir(base / "envs")) prefixes.insert(canonical_str(e));
    for (const auto& p : prefixes) {
      try_root(p, "conda " + p);
      for (const auto& site : list_dir(fs::path(p) / "lib"))
        if (auto t = inspect_pip_site((site / "site-packages").string()))
          add_install(all, *t, "pip in conda " + p);
    }
  }

  // pip wheels in the site-packages we were told about.
  std::set<std::string> seen;
  std::vector<std::string> sites = in.site_packages;
  if (!env("VIRTUAL_ENV").empty())
    for (const auto& lib : list_dir(fs::path(env("VIRTUAL_ENV")) / "lib"))
      sites.push_back((lib / "site-packages").string());
  for (const auto& s : sites) {
    const std::string c = canonical_str(s);
    if (!seen.insert(c).second) continue;
    if (auto t = inspect_pip_site(c)) add_install(all, *t, "pip " + c);
  }
  return all;
}

}  // namespace cudabench::env
