// Where the user's Python environments are: the ones named and active, the
// interpreters on PATH, and each environment manager's folders, from its
// own setting or its documented default (managers(), the one table of
// them; docs/doctor.md lists the same). Only folders are read here.
#include <algorithm>
#include <map>
#include <sstream>

#include "env/files.h"
#include "env/parsers.h"
#include "python_scan.h"

namespace cudabench::env {
namespace fs = std::filesystem;
namespace {

// A manager's folder of environments: the first way whose variable is set
// (its own setting, then XDG's folder, then $HOME's default), and the
// folder below that variable's value. `depth`: how many folders down an
// environment sits (hatch: <project>/<hash>/<env>).
struct Way {
  const char* var;
  const char* below;
};
struct Manager {
  const char* name;
  std::vector<Way> ways;
  int depth;
};

const std::vector<Manager>& managers() {
  static const std::vector<Manager> all = {
      {"poetry", {{"POETRY_VIRTUALENVS_PATH", ""}, {"POETRY_CACHE_DIR", "virtualenvs"},
                  {"XDG_CACHE_HOME", "pypoetry/virtualenvs"}, {"HOME", ".cache/pypoetry/virtualenvs"}}, 1},
      {"pipenv", {{"WORKON_HOME", ""}, {"XDG_DATA_HOME", "virtualenvs"}, {"HOME", ".local/share/virtualenvs"}}, 1},
      {"virtualenvwrapper", {{"WORKON_HOME", ""}, {"HOME", ".virtualenvs"}}, 1},
      {"hatch", {{"HATCH_DATA_DIR", "env/virtual"}, {"XDG_DATA_HOME", "hatch/env/virtual"},
                 {"HOME", ".local/share/hatch/env/virtual"}}, 3},
      {"pixi global", {{"PIXI_HOME", "envs"}, {"HOME", ".pixi/envs"}}, 1},
  };
  return all;
}

// The environments in `dir`, up to `depth` folders down.
void environments_in(const fs::path& dir, int depth, const std::string& via, std::vector<Candidate>& out) {
  for (const auto& e : list_dir(dir)) {
    if (!is_dir(e)) continue;
    if (auto c = classify(e, via); c && c->kind != "site") out.push_back(*c);
    else if (depth > 1) environments_in(e, depth - 1, via, out);
  }
}

void manager_candidates(const PythonScanInput& in, std::vector<Candidate>& out) {
  for (const auto& m : managers())
    for (const auto& w : m.ways) {
      const std::string base = env_var(in, w.var);
      if (base.empty()) continue;
      const fs::path dir = *w.below ? fs::path(base) / w.below : fs::path(base);
      const std::string shown = std::string(w.var) == "HOME" ? "~/" + std::string(w.below) : w.var;
      environments_in(dir, m.depth, std::string(m.name) + " (" + shown + ")", out);
      break;
    }
}

// The current folder and its parents: a project's own environments (uv's,
// poetry's and pipenv's in-project .venv, pixi's .pixi/envs/*, hatch's
// .hatch/*, $UV_PROJECT_ENVIRONMENT relative to a pyproject.toml's folder).
void project_candidates(const PythonScanInput& in, std::vector<Candidate>& out) {
  const std::string uv = env_var(in, "UV_PROJECT_ENVIRONMENT");
  if (!uv.empty() && fs::path(uv).is_absolute()) out.push_back({uv, "", "UV_PROJECT_ENVIRONMENT"});
  if (in.cwd.empty()) return;
  fs::path dir = fs::path(in.cwd).lexically_normal();
  for (int up = 0; up < 64; ++up) {
    if (auto c = classify(dir / ".venv", "the project's .venv (" + dir.string() + ")")) out.push_back(*c);
    if (!uv.empty() && fs::path(uv).is_relative() && path_exists(dir / "pyproject.toml"))
      out.push_back({dir / uv, "", "UV_PROJECT_ENVIRONMENT in " + dir.string()});
    environments_in(dir / ".pixi/envs", 1, "pixi (" + dir.string() + "/.pixi/envs)", out);
    environments_in(dir / ".hatch", 1, "hatch (" + dir.string() + "/.hatch)", out);
    if (!dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
}

// conda's envs_dirs (and micromamba's) from a .condarc: a block list
// ("envs_dirs:" then "  - path" lines) or a flow one ("envs_dirs: [a, b]").
std::vector<std::string> condarc_envs_dirs(const std::string& text, const std::string& home) {
  std::vector<std::string> out;
  auto add = [&](std::string v) {
    v.erase(0, v.find_first_not_of(" \t\"'"));
    while (!v.empty() && std::string(" \t\r\"'").find(v.back()) != std::string::npos) v.pop_back();
    if (starts(v, "~/") && !home.empty()) v = home + v.substr(1);
    if (!v.empty() && v[0] == '/') out.push_back(v);
  };
  std::stringstream ss(text);
  bool in_list = false;
  for (std::string line; std::getline(ss, line);) {
    line = line.substr(0, line.find(" #"));
    if (starts(line, "envs_dirs:")) {
      const std::string rest = line.substr(10);
      const auto open = rest.find('[');
      in_list = open == std::string::npos;
      if (!in_list)
        for (auto& item : split(rest.substr(open + 1, rest.find(']') - open - 1), ',')) add(item);
    } else if (in_list && line.find_first_not_of(" \t") != std::string::npos) {
      const auto dash = line.find_first_not_of(" \t");
      if (line[dash] != '-') in_list = false;  // "- /a" at column 0 is YAML's list too
      else add(line.substr(dash + 1));
    }
  }
  return out;
}

void conda_candidates(const PythonScanInput& in, std::vector<Candidate>& out) {
  const std::string home = env_var(in, "HOME");
  std::map<std::string, std::string> bases;  // a conda or micromamba root, and how it was found
  if (const std::string root = env_var(in, "MAMBA_ROOT_PREFIX"); !root.empty())
    bases.emplace(root, "micromamba (MAMBA_ROOT_PREFIX)");
  if (!home.empty()) bases.emplace(home + "/.local/share/mamba", "micromamba (~/.local/share/mamba)");  // 2.x's default
  if (const std::string exe = env_var(in, "CONDA_EXE"); !exe.empty())
    bases.emplace(fs::path(exe).parent_path().parent_path().string(), "");
  if (const fs::path p = env_var(in, "CONDA_PREFIX"); !p.empty())
    bases.emplace(p.parent_path().filename() == "envs" ? p.parent_path().parent_path().string() : p.string(), "");
  for (const char* b : {"miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba"}) {
    if (!home.empty()) bases.emplace(home + "/" + b, "");
    bases.emplace(std::string("/opt/") + b, "");
  }
  bases.emplace("/opt/conda", "");
  std::vector<std::string> rcs = {env_var(in, "CONDARC"), "/etc/conda/.condarc", "/etc/conda/condarc"};
  if (!home.empty()) {
    bases.emplace(home + "/.conda", "");
    for (const char* rc : {"/.condarc", "/.config/conda/.condarc", "/.config/conda/condarc", "/.conda/.condarc",
                           "/.conda/condarc", "/.mambarc"})
      rcs.push_back(home + rc);
  }
  for (const auto& [b, how] : bases) {
    if (path_exists(fs::path(b) / "conda-meta")) out.push_back({b, "conda", how.empty() ? "conda install " + b : how});
    for (const auto& e : list_dir(fs::path(b) / "envs"))
      if (path_exists(e / "conda-meta")) out.push_back({e, "conda", how.empty() ? "conda envs of " + b : how});
    rcs.push_back(b + "/.condarc");
  }
  std::vector<std::pair<std::string, std::string>> dirs;  // folder, from
  for (const auto& d : split(env_var(in, "CONDA_ENVS_PATH") + ":" + env_var(in, "CONDA_ENVS_DIRS"), ':'))
    dirs.emplace_back(d, "CONDA_ENVS_DIRS");
  for (const auto& rc : rcs)
    if (!rc.empty())
      for (const auto& d : condarc_envs_dirs(read_text_file(rc, 1 << 16), home)) dirs.emplace_back(d, "envs_dirs of " + rc);
  for (const auto& [d, from] : dirs)
    for (const auto& e : list_dir(d))
      if (path_exists(e / "conda-meta")) out.push_back({e, "conda", from});
  if (home.empty()) return;
  std::stringstream list(read_text_file(home + "/.conda/environments.txt"));
  for (std::string line; std::getline(list, line);)
    if (!line.empty() && line[0] == '/') out.push_back({line, "conda", "~/.conda/environments.txt"});
}

// A real interpreter on PATH, not a launcher script (pyenv's shims are).
bool is_binary(const fs::path& p) {
  return is_regular(p) && starts(read_text_file(p.string(), 4), "\x7f" "ELF");
}

void cudabench_candidates(const PythonScanInput& in, std::vector<Candidate>& out) {
  for (const auto& s : in.project_sites)
    if (auto c = classify(s, "cudabench's own venv (its LibTorch)")) out.push_back(*c);
  const std::string home = env_var(in, "HOME");
  const std::string cache = !env_var(in, "CUDABENCH_CACHE").empty() ? env_var(in, "CUDABENCH_CACHE")
                            : home.empty()                          ? ""
                                                                    : home + "/.cache/cudabench";
  for (const std::string v : {env_var(in, "CUDABENCH_VENV"), cache.empty() ? "" : cache + "/venv"})
    if (!v.empty() && is_dir(v)) out.push_back({v, "", "cudabench's own venv"});
}

}  // namespace

std::string env_var(const PythonScanInput& in, const std::string& key) {
  const auto it = in.env.find(key);
  return it == in.env.end() ? "" : it->second;
}

std::optional<Candidate> classify(const fs::path& p, const std::string& via) {
  const std::string name = p.filename().string();
  if (is_dir(p) && (name == "site-packages" || name == "dist-packages")) return Candidate{p, "site", via};
  if (is_dir(p) && (path_exists(p / "pyvenv.cfg") || path_exists(p / "conda-meta") || path_exists(p / "bin/python3") ||
                    path_exists(p / "bin/python")))
    return Candidate{p, "", via};
  if (is_regular(p) && starts(name, "python") && p.parent_path().filename() == "bin")
    return Candidate{p.parent_path().parent_path(), "", via};
  return std::nullopt;
}

std::vector<Candidate> candidates(const PythonScanInput& in) {
  std::vector<Candidate> out;
  for (const auto& g : in.given)
    if (auto c = classify(g, "--python " + g)) out.push_back(*c);
  for (const char* active : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const std::string v = env_var(in, active); !v.empty()) out.push_back({v, "", active});
  project_candidates(in, out);
  for (const auto& dir : split(env_var(in, "PATH"), ':'))
    for (const char* exe : {"python3", "python"})
      if (is_binary(fs::path(dir) / exe))  // /bin/python3 is /usr's where /bin links to /usr/bin
        out.push_back({fs::path(canonical_str(dir)).parent_path(), "", std::string("PATH ") + exe});
  conda_candidates(in, out);
  manager_candidates(in, out);
  const std::string home = env_var(in, "HOME");
  const std::string pyenv = !env_var(in, "PYENV_ROOT").empty() ? env_var(in, "PYENV_ROOT") : home.empty() ? "" : home + "/.pyenv";
  if (!pyenv.empty())
    for (const auto& v : list_dir(fs::path(pyenv) / "versions")) out.push_back({v, "pyenv", "pyenv versions"});
  if (!home.empty())
    for (const auto& d : list_dir(fs::path(home) / ".local/lib"))
      if (is_dir(d / "site-packages")) out.push_back({d / "site-packages", "user-site", "the user site"});
  cudabench_candidates(in, out);
  return out;
}

// The variables the scan reads: where each manager keeps its environments.
const std::vector<std::string>& scan_variables() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = {"PATH", "HOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_EXE", "CONDARC",
                                  "CONDA_ENVS_PATH", "CONDA_ENVS_DIRS", "MAMBA_ROOT_PREFIX", "PYENV_ROOT",
                                  "UV_PROJECT_ENVIRONMENT", "LD_LIBRARY_PATH", "PYTHONNOUSERSITE", "CUDABENCH_VENV",
                                  "CUDABENCH_CACHE", "CUDABENCH_IMPORT_SECONDS"};
    for (const auto& m : managers())
      for (const auto& w : m.ways)
        if (std::find(v.begin(), v.end(), w.var) == v.end()) v.push_back(w.var);
    return v;
  }();
  return all;
}

}  // namespace cudabench::env
