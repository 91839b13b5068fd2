#include <chrono>
#include <filesystem>
#include <map>

#include "doctor.h"
#include "env/probe.h"
#include "fatbin.h"
#include "rules.h"

namespace cudabench::doctor {

const env::Report& examine() {
  static const env::Report report = [] {
    env::Report r = env::collect();
    if (r.runtime.compiled_in) {
      std::error_code ec;
      const auto exe = std::filesystem::canonical("/proc/self/exe", ec);
      r.binary_fatbin = read_fatbin_archs(ec ? "/proc/self/exe" : exe.string());
    }
    for (const auto& l : r.loaded)
      if (l.name == "libtorch_cuda.so") r.torch_fatbin = read_fatbin_archs(l.path);
    r.verdicts = evaluate(r);
    return r;
  }();
  return report;
}

env::Report examine_with_python(const env::PythonScanInput& in) {
  env::Report r = examine();
  r.python = env::probe_python(in);
  r.python.imported = in.import;
  std::map<std::string, env::FatbinArchs> fatbins;  // one read per file: environments share installs
  const auto start = std::chrono::steady_clock::now();
  constexpr double kImportBudget = 300;  // seconds, all the imports together
  for (auto& e : r.python.envs) {
    for (auto& p : e.packages)
      if (!p.kernel_library.empty() && p.shadowed_by.empty()) {
        auto it = fatbins.find(p.kernel_library);
        if (it == fatbins.end()) it = fatbins.emplace(p.kernel_library, read_fatbin_archs(p.kernel_library)).first;
        p.fatbin = it->second;
      }
    if (in.import && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < kImportBudget)
      e.imports = env::imports(e, in.import_seconds);
    else if (in.import && r.python.stopped.empty())
      r.python.stopped = "--import stopped at its budget of 300 s: the environments after " + e.prefix + " were not imported";
    e.verdicts = python_env_verdicts(e, r);
  }
  return r;
}

}  // namespace cudabench::doctor
