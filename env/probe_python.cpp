// The user's own Python environments, read from files. Where they are:
// candidates() (python_places.cpp); what one holds: read_env(); each package: read_torch(),
// read_jax(), read_tensorflow(), read_cupy(); where a CUDA library would be
// loaded from: resolve_library(), the loader's own order over files.
// Nothing here imports or runs Python (imports() in python_import.cpp does,
// when asked, in a child with a deadline).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "files.h"
#include "parsers.h"
#include "python_scan.h"

namespace cudabench::env {
namespace fs = std::filesystem;
namespace {

// The entries of a folder, sorted, at most `limit` (a huge folder is not a
// Python environment).
std::vector<fs::path> entries(const fs::path& d, std::size_t limit = 4096) { return list_dir(d, limit); }
bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
// ---- what one environment holds ----

std::string kind_of(const fs::path& prefix) {
  if (path_exists(prefix / "pyvenv.cfg")) return "venv";
  if (path_exists(prefix / "conda-meta")) return "conda";
  return "system";
}

// A key of pyvenv.cfg ("key = value"; "" when absent).
std::string cfg_value(const fs::path& prefix, const std::string& key) {
  std::stringstream cfg(read_text_file((prefix / "pyvenv.cfg").string()));
  for (std::string line; std::getline(cfg, line);)
    if (starts(line, key) && line.find_first_not_of(" \t", key.size()) == line.find('=') &&
        line.find('=') != std::string::npos) {
      std::string v = line.substr(line.find('=') + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
      return v;
    }
  return "";
}

// "3.11" from pyvenv.cfg, else from lib/python3.X.
std::string python_version_of(const fs::path& prefix) {
  for (const char* key : {"version", "version_info"})  // venv's, virtualenv's ("3.11.7.final.0")
    if (const Version v = Version::parse(cfg_value(prefix, key)); v.known()) return v.major_minor();
  for (const auto& d : entries(prefix / "lib", 256)) {
    const std::string n = d.filename().string();
    if (starts(n, "python3.") && is_dir(d)) return n.substr(6);
  }
  return "";
}

// The site folders of `prefix`, in Debian's order for a system Python
// (/usr/local first) and the usual one elsewhere.
std::vector<std::string> own_sites(const fs::path& prefix, const std::string& python) {
  std::vector<fs::path> tries;
  if (!python.empty()) tries.push_back(prefix / "local/lib" / ("python" + python) / "dist-packages");
  tries.push_back(prefix / "lib/python3/dist-packages");
  for (const char* lib : {"lib", "lib64"})
    for (const auto& d : entries(prefix / lib, 256))
      if (starts(d.filename().string(), "python3."))
        for (const char* s : {"site-packages", "dist-packages"}) tries.push_back(d / s);
  std::vector<std::string> out;
  for (const auto& t : tries)
    if (is_dir(t) && std::find(out.begin(), out.end(), canonical_str(t)) == out.end()) out.push_back(canonical_str(t));
  return out;
}

// The sites in import order: the user site before the environment's own
// (Python puts it there, except in a venv), a venv's base after its own
// when it includes the system site packages; a setuptools develop install
// (an .egg-link) before the site holding it.
std::vector<std::string> import_order(const PythonScanInput& in, const PythonEnv& e) {
  std::vector<std::string> sites;
  const std::string home = env_var(in, "HOME");
  const bool venv = e.kind == "venv";
  if (e.kind == "site" || e.kind == "user-site") return {canonical_str(e.prefix)};
  const std::string user = home + "/.local/lib/python" + e.python + "/site-packages";
  const bool user_site = !venv || cfg_value(e.prefix, "include-system-site-packages") == "true";
  if (user_site && !home.empty() && !e.python.empty() && env_var(in, "PYTHONNOUSERSITE").empty() && is_dir(user))
    sites.push_back(canonical_str(user));
  for (const auto& s : own_sites(e.prefix, e.python)) sites.push_back(s);
  if (venv && cfg_value(e.prefix, "include-system-site-packages") == "true")
    for (const auto& s : own_sites(fs::path(cfg_value(e.prefix, "home")).parent_path(), e.python)) sites.push_back(s);
  std::vector<std::string> out;
  for (const auto& s : sites) {
    for (const auto& f : entries(s))
      if (f.extension() == ".egg-link") out.push_back(canonical_str(read_first_line(f.string())));
    out.push_back(s);
  }
  return out;
}

// "nvidia-cudnn-cu13 9.19.0.56" for each nvidia-* / cuda-toolkit wheel in `site`.
void cuda_wheels(const std::string& site, std::vector<std::string>& out) {
  for (const auto& d : entries(site)) {
    auto [name, version] = dist_info_name_version(d.filename().string());
    if (!starts(name, "nvidia_") && name != "cuda_toolkit") continue;
    std::replace(name.begin(), name.end(), '_', '-');
    out.push_back(name + " " + version);
  }
}

// conda's own CUDA runtime package in the environment, "" when none.
std::string conda_cuda(const fs::path& prefix) {
  for (const auto& f : entries(prefix / "conda-meta")) {
    const std::string n = f.filename().string();
    for (const char* pkg : {"cudatoolkit-", "cuda-cudart-"})
      if (starts(n, pkg) && Version::parse(n.substr(std::string(pkg).size())).known())
        return std::string(pkg).substr(0, std::string(pkg).size() - 1) + " " +
               Version::parse(n.substr(std::string(pkg).size())).str();
  }
  return "";
}

}  // namespace

// ---- the loader, over files ----

std::vector<std::string> ld_so_conf_dirs(const std::string& conf) {
  std::vector<std::string> out;
  std::function<void(const std::string&, int)> read = [&](const std::string& file, int depth) {
    std::stringstream ss(read_text_file(file));
    for (std::string line; std::getline(ss, line);) {
      line = line.substr(0, line.find('#'));
      line.erase(0, line.find_first_not_of(" \t"));
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
      if (starts(line, "include ") || starts(line, "include\t")) {
        const std::size_t at = line.find_first_not_of(" \t", 7);
        if (at == std::string::npos || depth >= 4) continue;
        fs::path pat = line.substr(at);
        if (pat.is_relative()) pat = fs::path(file).parent_path() / pat;
        const std::string suffix = pat.filename().string().substr(pat.filename().string().find('*') + 1);
        for (const auto& f : entries(pat.parent_path()))
          if (pat.filename().string().find('*') == std::string::npos ? f == pat
                                                                       : f.string().size() >= suffix.size() &&
                                                                             f.string().compare(f.string().size() - suffix.size(), suffix.size(), suffix) == 0)
            read(f.string(), depth + 1);
      } else if (!line.empty() && line[0] == '/') {
        out.push_back(line);
      }
    }
  };
  read(conf, 0);
  return out;
}

PythonLibrary resolve_library(const std::string& object, const ElfDynamic& dyn, const std::string& name,
                              const std::vector<std::string>& ld_library_path,
                              const std::vector<std::string>& conf_dirs,
                              const std::vector<std::string>& default_dirs) {
  // $ORIGIN is the folder of the object as it was opened: glibc does not
  // resolve a link to a shared object (only the program's own, /proc/self/exe).
  std::error_code abs_ec;
  const std::string origin = fs::absolute(fs::path(object), abs_ec).lexically_normal().parent_path().string();
  auto expand = [&](std::string d) {
    for (const char* o : {"$ORIGIN", "${ORIGIN}"})
      for (std::size_t p = 0; (p = d.find(o, p)) != std::string::npos; p += origin.size())
        d.replace(p, std::string(o).size(), origin);
    return d;
  };
  std::vector<std::pair<std::string, std::string>> order;  // folder, why
  if (dyn.runpath.empty())
    for (const auto& d : dyn.rpath) order.emplace_back(expand(d), "RPATH");
  for (const auto& d : ld_library_path) order.emplace_back(d, "LD_LIBRARY_PATH");
  for (const auto& d : dyn.runpath) order.emplace_back(expand(d), "RUNPATH");
  for (const auto& d : conf_dirs) order.emplace_back(d, "ld.so.conf");
  for (const auto& d : default_dirs) order.emplace_back(d, "default");
  PythonLibrary l;
  l.name = name;
  for (const auto& [dir, why] : order) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(dir) / name, ec)) continue;
    if (l.resolved.empty()) {
      l.resolved = canonical_str(fs::path(dir) / name);
      l.via = why;
    }
    if (l.own.empty() && (why == "RPATH" || why == "RUNPATH")) l.own = canonical_str(fs::path(dir) / name);
  }
  return l;
}

namespace {

// The version of a library file: its versioned real name, else the wheel
// (nvidia-*) whose folder holds it.
std::string library_version(const std::string& file) {
  if (file.empty()) return "";
  if (std::string v = version_from_soname(file); !v.empty()) return v;
  const std::size_t nv = file.rfind("/nvidia/");
  if (nv == std::string::npos) return "";
  const std::string base = fs::path(file).filename().string();
  static const std::vector<std::pair<std::string, std::string>> wheel = {
      {"libcudart.", "nvidia_cuda_runtime"}, {"libcublasLt.", "nvidia_cublas"}, {"libcublas.", "nvidia_cublas"},
      {"libcudnn", "nvidia_cudnn"},          {"libnccl.", "nvidia_nccl"}};
  for (const auto& [lib, dist] : wheel)
    if (starts(base, lib))
      for (const auto& d : entries(file.substr(0, nv))) {
        const auto [name, version] = dist_info_name_version(d.filename().string());
        if (name == dist || starts(name, dist + "_cu")) return version;
      }
  return "";
}

struct Loader {
  std::vector<std::string> ld_library_path, conf_dirs, default_dirs;
};

// The CUDA libraries `object` needs (DT_NEEDED) and `extra` (loaded by name
// later), as the loader would find them.
std::vector<PythonLibrary> libraries_of(const std::string& object, const std::vector<std::string>& extra,
                                        const Loader& ld) {
  const ElfDynamic dyn = read_elf_dynamic(object);
  std::vector<std::string> names;
  for (const auto& n : dyn.needed)
    for (const char* p : {"libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so"})
      if (starts(n, p)) names.push_back(n);
  for (const auto& n : extra)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  std::vector<PythonLibrary> out;
  for (const auto& n : names) {
    PythonLibrary l = resolve_library(object, dyn, n, ld.ld_library_path, ld.conf_dirs, ld.default_dirs);
    l.version = library_version(l.resolved);
    l.own_version = library_version(l.own);
    out.push_back(std::move(l));
  }
  return out;
}

// ---- each package, from its files ----

std::string dist_version(const std::string& site, const std::string& dist, std::string* found = nullptr) {
  for (const auto& d : entries(site)) {
    const auto [name, version] = dist_info_name_version(d.filename().string());
    if (name == dist) {
      if (found) *found = d.string();
      return version;
    }
  }
  return "";
}

std::vector<std::string> cuda_requirements(const std::string& dist_info) {
  std::vector<std::string> out;
  for (auto& r : metadata_requires(read_text_file(dist_info + "/METADATA")))
    if (starts(r, "nvidia-") || starts(r, "cuda-toolkit") || starts(r, "nvidia_")) out.push_back(r);
  return out;
}

// "9.19.0.56" from a "nvidia-cudnn-cu13==9.19.0.56; ..." requirement.
std::string pinned(const std::vector<std::string>& reqs, const std::string& dist) {
  for (const auto& r : reqs)
    if (starts(r, dist) && r.find("==") != std::string::npos) {
      const std::string v = r.substr(r.find("==") + 2);
      return v.substr(0, v.find_first_of("; ,"));
    }
  return "";
}

std::optional<PythonPackage> read_torch(const std::string& site, const Loader& ld) {
  const std::string text = read_text_file(site + "/torch/version.py");
  const auto version = python_string_assignment(text, "__version__");
  if (!version) return std::nullopt;
  PythonPackage p{"torch", *version, site + "/torch", site};
  p.cuda = python_string_assignment(text, "cuda").value_or("");
  std::string dist;
  dist_version(site, "torch", &dist);
  if (!dist.empty()) p.requires_cuda = cuda_requirements(dist);
  p.cudnn = pinned(p.requires_cuda, "nvidia-cudnn");
  if (const std::string lib = site + "/torch/lib/libtorch_cuda.so"; path_exists(lib)) {
    p.kernel_library = lib;
    p.libraries = libraries_of(lib, {}, ld);
  }
  return p;
}

std::optional<PythonPackage> read_jax(const std::string& site, const Loader& ld) {
  const auto version = python_string_assignment(read_text_file(site + "/jaxlib/version.py"), "_version");
  if (!version) return std::nullopt;
  PythonPackage p{"jax", "jaxlib " + *version, site + "/jaxlib", site};
  if (const auto plus = version->find("+cuda"); plus != std::string::npos)  // jaxlib 0.4.x: 0.4.26+cuda12.cudnn89
    p.cuda = version->substr(plus + 5, version->find('.', plus) - plus - 5);
  for (const char* major : {"13", "12", "11"}) {
    std::string dist;
    const std::string v = dist_version(site, std::string("jax_cuda") + major + "_plugin", &dist);
    if (v.empty()) continue;
    p.cuda = major;
    p.version += ", jax-cuda" + std::string(major) + "-plugin " + v;
    p.requires_cuda = cuda_requirements(dist);
    p.cudnn = pinned(p.requires_cuda, "nvidia-cudnn");
    const std::string lib = site + "/jax_plugins/xla_cuda" + major + "/xla_cuda_plugin.so";
    if (path_exists(lib)) p.libraries = libraries_of(lib, {"libcudart.so." + std::string(major)}, ld);
    break;
  }
  return p;
}

std::optional<PythonPackage> read_tensorflow(const std::string& site, const Loader& ld) {
  std::string dist;
  std::string version = dist_version(site, "tensorflow", &dist);
  if (version.empty() && (version = dist_version(site, "tensorflow_gpu", &dist)).empty()) return std::nullopt;
  PythonPackage p{"tensorflow", version, site + "/tensorflow", site};
  const std::string info = read_text_file(site + "/tensorflow/python/platform/build_info.py");
  if (python_dict_entry(info, "is_cuda_build").value_or("False") == "True") {
    p.cuda = python_dict_entry(info, "cuda_version").value_or("?");
    p.cudnn = python_dict_entry(info, "cudnn_version").value_or("");
    p.archs_listed = split(python_dict_entry(info, "cuda_compute_capabilities").value_or(""), ',');
  }
  p.requires_cuda = cuda_requirements(dist);
  const std::string major = p.cuda.substr(0, p.cuda.find('.'));
  if (const std::string lib = site + "/tensorflow/libtensorflow_framework.so.2"; path_exists(lib) && !p.cuda.empty())
    p.libraries = libraries_of(lib, {"libcudart.so." + major, "libcudnn.so." + p.cudnn.substr(0, p.cudnn.find('.'))}, ld);
  return p;
}

std::optional<PythonPackage> read_cupy(const std::string& site, const Loader&) {
  const auto version = python_string_assignment(read_text_file(site + "/cupy/_version.py"), "__version__");
  if (!version) return std::nullopt;
  PythonPackage p{"cupy", *version, site + "/cupy", site};
  p.cuda = "?";  // a source build: whatever toolkit it found
  for (const auto& d : entries(site)) {
    const auto [name, v] = dist_info_name_version(d.filename().string());
    if (starts(name, "cupy_cuda") && name.size() > 9) {  // cupy_cuda12x
      p.cuda = name.substr(9, name.find_first_not_of("0123456789", 9) - 9);
      p.requires_cuda = cuda_requirements(d.string());
    }
  }
  return p;
}

// Every package of every site, in import order: the first install of a
// name is the one Python imports; later ones are shadowed by it.
void read_packages(PythonEnv& e, const Loader& ld) {
  using Reader = std::optional<PythonPackage> (*)(const std::string&, const Loader&);
  std::map<std::string, std::string> first;
  for (const auto& site : e.sites)
    for (Reader read : {Reader(read_torch), Reader(read_jax), Reader(read_tensorflow), Reader(read_cupy)})
      if (auto p = read(site, ld)) {
        if (auto it = first.find(p->name); it != first.end()) p->shadowed_by = it->second;
        else first[p->name] = p->location;
        e.packages.push_back(std::move(*p));
      }
}

PythonEnv read_env(const Candidate& c, const PythonScanInput& in, const Loader& ld) {
  PythonEnv e;
  e.prefix = canonical_str(c.prefix);
  e.kind = !c.kind.empty() ? c.kind : kind_of(c.prefix);
  e.found_via = {c.via};
  if (e.kind == "site" || e.kind == "user-site") {
    const std::string n = c.prefix.parent_path().filename().string();
    e.python = starts(n, "python3.") ? n.substr(6) : "";
  } else {
    e.python = python_version_of(c.prefix);
    for (const char* exe : {"bin/python3", "bin/python"})
      if (e.interpreter.empty() && path_exists(c.prefix / exe)) e.interpreter = (fs::path(e.prefix) / exe).string();
  }
  e.sites = import_order(in, e);
  for (const auto& s : e.sites) cuda_wheels(s, e.cuda_wheels);
  if (e.kind == "conda") e.conda_cuda = conda_cuda(c.prefix);
  read_packages(e, ld);
  return e;
}

}  // namespace

std::string python_path_problem(const std::string& path) {
  if (classify(path, "")) return "";
  return path_exists(path) ? "--python " + path + ": not a Python interpreter (bin/python3), environment or site-packages folder"
                      : "--python " + path + ": no such file or folder";
}

PythonScan probe_python(const PythonScanInput& in) {
  const auto start = std::chrono::steady_clock::now();
  PythonScan scan;
  scan.scanned = true;
  const Loader ld{split(env_var(in, "LD_LIBRARY_PATH"), ':'), ld_so_conf_dirs(in.ld_so_conf), in.default_lib_dirs};
  std::map<std::string, std::size_t> seen;  // canonical prefix -> index
  for (const auto& c : candidates(in)) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent > in.deadline_s || scan.envs.size() >= in.max_envs) {
      scan.stopped = spent > in.deadline_s ? "the scan stopped at its deadline of " + std::to_string(int(in.deadline_s)) + " s"
                                           : "the scan stopped at " + std::to_string(in.max_envs) + " environments";
      break;
    }
    std::string key = canonical_str(c.prefix);
    if (auto it = seen.find(key); it != seen.end()) {
      auto& via = scan.envs[it->second].found_via;
      if (std::find(via.begin(), via.end(), c.via) == via.end()) via.push_back(c.via);
      continue;
    }
    PythonEnv e = read_env(c, in, ld);
    if (e.sites.empty() && e.packages.empty() && c.via.rfind("--python", 0) != 0) continue;  // not an environment
    // /bin and /usr/bin are one Python where /bin links to /usr/bin: the same sites.
    const std::string sites = e.kind + ":" + join(e.sites, ":");
    if (auto it = seen.find(sites); it != seen.end() && !e.sites.empty()) {
      scan.envs[it->second].found_via.push_back(c.via);
      continue;
    }
    seen[key] = seen[sites] = scan.envs.size();
    scan.envs.push_back(std::move(e));
  }
  scan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return scan;
}

PythonScanInput PythonScanInput::from_process(const std::vector<std::string>& given, bool import,
                                              const TorchInfo& torch) {
  PythonScanInput in;
  for (const auto& k : scan_variables())
    if (const char* v = std::getenv(k.c_str())) in.env[k] = v;
  if (const int s = std::atoi(env_var(in, "CUDABENCH_IMPORT_SECONDS").c_str()); s > 0) in.import_seconds = std::min(s, 600);
  std::error_code ec;
  in.cwd = fs::current_path(ec).string();
  in.given = given;
  in.import = import;
  // .../site-packages/torch/lib/libtorch_cpu.so: the venv the set-up made.
  if (const fs::path lib = torch.library_path; !lib.empty()) {
    const fs::path site = lib.parent_path().parent_path().parent_path();
    const bool in_venv = site.parent_path().parent_path().filename() == "lib";
    in.project_sites.push_back((in_venv ? site.parent_path().parent_path().parent_path() : site).string());
  }
  return in;
}

}  // namespace cudabench::env
