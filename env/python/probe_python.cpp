// The user's own Python environments, read from files. Where they are:
// candidates() (python_places.cpp); what one holds: read_env(); each package
// (python_packages.cpp); where a CUDA library would be loaded from:
// resolve_library(), the loader's own order over files.
// Nothing here imports or runs Python (imports() in python_import.cpp does,
// when asked, in a child with a deadline).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "common/settings.h"
#include "common/utf8.h"
#include "env/files.h"
#include "env/parsers.h"
#include "python_scan.h"

namespace cudabench::env {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> entries(const fs::path& d) { return list_dir(d); }
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
  for (const auto& d : entries(prefix / "lib")) {
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
    for (const auto& d : entries(prefix / lib))
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
  auto add = [&out](const std::string& s) {  // each folder once, where Python first meets it
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const auto& s : sites) {
    for (const auto& f : site_listing(s).meta)
      if (f.extension() == ".egg-link" && !past_scan_deadline()) add(canonical_str(read_first_line(f.string())));
    add(s);
  }
  return out;
}

// "nvidia-cudnn-cu13 9.19.0.56" for each nvidia-* / cuda-toolkit wheel in `site`.
void cuda_wheels(const std::string& site, std::vector<std::string>& out) {
  for (const auto& d : site_listing(site).meta) {
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

// conda-meta's records of the packages the doctor reads, as
// "name version build": pytorch-2.1.0-py3.10_cuda12.1_cudnn8.9.2_0.json.
std::vector<std::string> conda_packages(const fs::path& prefix) {
  std::vector<std::string> out;
  for (const auto& f : entries(prefix / "conda-meta")) {
    std::string n = f.filename().string();
    if (n.size() < 6 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
    n.resize(n.size() - 5);
    const auto b = n.rfind('-'), v = b == std::string::npos || b == 0 ? std::string::npos : n.rfind('-', b - 1);
    if (v == std::string::npos) continue;
    const std::string name = n.substr(0, v);
    for (const char* pkg : {"pytorch", "pytorch-cuda", "jaxlib", "tensorflow", "cupy"})
      if (name == pkg) out.push_back(name + " " + n.substr(v + 1, b - v - 1) + " " + n.substr(b + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
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
    if (!is_regular(fs::path(dir) / name)) continue;
    if (l.resolved.empty()) {
      l.resolved = canonical_str(fs::path(dir) / name);
      l.via = why;
    }
    if (l.own.empty() && (why == "RPATH" || why == "RUNPATH")) l.own = canonical_str(fs::path(dir) / name);
  }
  return l;
}

namespace {

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
  for (const auto& s : e.sites)
    if (const SiteListing& l = site_listing(s); !l.problem.empty()) e.unread.push_back(s + ": " + l.problem);
  if (e.kind == "conda") {
    e.conda_cuda = conda_cuda(c.prefix);
    e.conda_packages = conda_packages(c.prefix);
    e.pixi = e.prefix.find("/.pixi/envs/") != std::string::npos;
  }
  read_packages(e, ld);
  return e;
}

}  // namespace

std::string python_path_problem(const std::string& raw) {
  if (classify(raw, "")) return "";
  const std::string path = visible(raw);  // named in one line, whatever it holds
  // What cannot be looked into is not "no Python": the system says why.
  if (::access(raw.c_str(), F_OK) != 0 && errno != ENOENT) return "--python " + path + ": " + std::strerror(errno);
  if (is_dir(raw) && ::access(raw.c_str(), R_OK | X_OK) != 0) return "--python " + path + ": " + std::strerror(errno);
  return path_exists(raw) ? "--python " + path + ": not a Python interpreter (bin/python3), environment or site-packages folder"
                      : "--python " + path + ": no such file or folder";
}

PythonScan probe_python(const PythonScanInput& in) {
  const auto start = std::chrono::steady_clock::now();
  PythonScan scan;
  scan.scanned = true;
  set_scan_deadline(in.deadline_s);
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
    if (past_scan_deadline()) {  // inside it: what was read is kept, and said to be partial
      scan.stopped = "the scan stopped at its deadline of " + std::to_string(int(in.deadline_s)) + " s, inside " + e.prefix;
      e.unread.push_back("the rest: the scan stopped at its deadline");
      scan.envs.push_back(std::move(e));
      break;
    }
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
  clear_scan_deadline();
  scan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return scan;
}

PythonScanInput PythonScanInput::from_process(const std::vector<std::string>& given, bool import,
                                              const TorchInfo& torch) {
  PythonScanInput in;
  for (const auto& k : scan_variables())
    if (const char* v = std::getenv(k.c_str())) in.env[k] = v;
  in.import_seconds = static_cast<int>(setting("CUDABENCH_IMPORT_SECONDS"));  // checked at the start (check_settings)
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
