// Inside the Python scan (probe_python.cpp): where the environments are
// (python_places.cpp) and what one holds. Private to env/.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "env/probe.h"

namespace cudabench::env {

// A folder that may be a Python environment, and how it was found.
struct Candidate {
  std::filesystem::path prefix;
  std::string kind;  // "" = from the folder (venv, conda, system), or site, user-site, pyenv, conda
  std::string via;   // "poetry (POETRY_VIRTUALENVS_PATH)", "PATH python3", ...
};

// An interpreter (prefix/bin/python3), an environment, or a site folder.
std::optional<Candidate> classify(const std::filesystem::path& p, const std::string& via);
// Every folder in reach that may be an environment, in the order the
// report lists them (what the user named first, then the active ones, then
// each manager's).
std::vector<Candidate> candidates(const PythonScanInput& in);
// The environment variables the scan reads (PythonScanInput::env).
const std::vector<std::string>& scan_variables();
// The value of an environment variable of the scan's input ("" unset).
std::string env_var(const PythonScanInput& in, const std::string& key);

// The dynamic loader's folders, as the scan walks them over files.
struct Loader {
  std::vector<std::string> ld_library_path, conf_dirs, default_dirs;
};
// Every torch, jax, tensorflow and cupy of `e`'s sites, in import order
// (python_packages.cpp): the first install of a name is the one Python
// imports; later ones are shadowed by it.
void read_packages(PythonEnv& e, const Loader& ld);

}  // namespace cudabench::env
