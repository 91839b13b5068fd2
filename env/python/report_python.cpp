// The Python environments' section of bench --env: each environment, its
// packages with what their files say, where each CUDA library would be
// loaded from, what --import saw, and the doctor's verdicts on it. The JSON
// holds the same facts under "python" (docs/doctor.md lists the keys).
#include "common/utf8.h"
#include "env/parsers.h"
#include "env/report.h"

namespace cudabench::env {
namespace {
using json = nlohmann::json;

json fatbin_of(const FatbinArchs& f) {
  json a = {{"file", f.file}, {"error", f.error}, {"sass", json::array()}, {"ptx", json::array()}};
  for (const auto& [sm, n] : f.sass) a["sass"].push_back("sm_" + std::to_string(sm));
  for (const auto& [sm, n] : f.ptx) a["ptx"].push_back("compute_" + std::to_string(sm));
  return a;
}

json package_json(const PythonPackage& p) {
  json libs = json::array();
  for (const auto& l : p.libraries)
    libs.push_back({{"name", l.name}, {"resolved", l.resolved}, {"via", l.via}, {"version", l.version},
                    {"own", l.own}, {"own_version", l.own_version}, {"shadowed", l.shadowed()}});
  return {{"name", p.name}, {"version", p.version}, {"location", p.location}, {"site", p.site},
          {"build", p.build}, {"build_from", p.build_from}, {"unread", p.unread}, {"cuda", p.cuda},
          {"cuda_build", p.build == "cuda"}, {"rocm", p.rocm}, {"cudnn", p.cudnn}, {"requires_cuda", p.requires_cuda},
          {"kernel_library", p.kernel_library}, {"fatbin", fatbin_of(p.fatbin)}, {"archs_listed", p.archs_listed},
          {"libraries", libs}, {"shadowed_by", p.shadowed_by}};
}

json env_json(const PythonEnv& e) {
  json j = {{"prefix", e.prefix}, {"kind", e.kind}, {"interpreter", e.interpreter}, {"python", e.python},
            {"found_via", e.found_via}, {"sites", e.sites}, {"cuda_wheels", e.cuda_wheels},
            {"conda_cuda", e.conda_cuda}, {"conda_packages", e.conda_packages}, {"pixi", e.pixi}, {"unread", e.unread}, {"packages", json::array()}, {"imports", json::array()},
            {"verdicts", json::array()}};
  for (const auto& p : e.packages) j["packages"].push_back(package_json(p));
  for (const auto& i : e.imports)
    j["imports"].push_back({{"package", i.package}, {"error", i.error}, {"version", i.version},
                            {"cuda_available", i.cuda_available}, {"device_count", i.device_count},
                            {"warnings", i.warnings}});
  for (const auto& v : e.verdicts) j["verdicts"].push_back(verdict_json(v));
  return j;
}

std::string build_text(const PythonPackage& p) {
  if (p.build == "cuda") return "CUDA " + p.cuda + (p.cudnn.empty() ? "" : ", cuDNN " + p.cudnn);
  if (p.build == "rocm") return "ROCm build" + (p.rocm.empty() ? "" : " (ROCm " + p.rocm + ")");
  if (p.build == "cpu") return "CPU-only build";
  return "build unknown";
}

std::string package_text(const PythonPackage& p) {
  std::string t = "    " + p.name + " " + (p.version.empty() ? "(version unknown)" : p.version) + ": " + build_text(p) +
                  (p.unread.empty() || p.build_from.empty() ? "" : ", named by " + p.build_from) + "  (" + visible(p.location) + ")";
  for (const auto& u : p.unread) t += "\n      NOT READ: " + visible(u);
  if (!p.shadowed_by.empty()) t += "\n      SHADOWED: Python imports " + p.shadowed_by + " first";
  if (!p.fatbin.file.empty()) t += "\n      kernels (fatbin): " + fatbin_summary(p.fatbin);
  if (!p.archs_listed.empty()) t += "\n      kernels (build info): " + join(p.archs_listed, " ");
  for (const auto& l : p.libraries) {
    t += "\n      " + l.name + " -> " + (l.resolved.empty() ? "not found" : l.resolved + " (" + l.via + ")");
    if (!l.version.empty()) t += " " + l.version;
    if (l.shadowed()) t += "; its own copy " + l.own + (l.own_version.empty() ? "" : " " + l.own_version) + " loses";
  }
  return t;
}

std::string import_text(const PythonImport& i) {
  std::string t = "    --import " + i.package + ": ";
  if (!i.error.empty()) t += i.error;
  else t += std::string("GPU ") + (i.cuda_available ? "available" : "NOT available") + ", " +
            std::to_string(i.device_count) + " device" + (i.device_count == 1 ? "" : "s");
  for (const auto& w : i.warnings) t += "\n      printed: " + w;
  return t;
}

}  // namespace

std::string python_text(const PythonScan& s) {
  std::string t = "Python environments (" + std::to_string(s.envs.size()) + ", read from files" +
                  (s.imported ? ", then imported" : ", not imported: --import runs them") + ")";
  if (!s.stopped.empty()) t += "\n  " + s.stopped + ": the rest was not read";
  for (const auto& e : s.envs) {
    t += "\n  " + visible(e.prefix) + "  [" + e.kind + (e.python.empty() ? "" : ", Python " + e.python) + "; " +
         visible(join(e.found_via)) + "]";
    if (e.packages.empty()) t += e.unread.empty() ? ": no torch, jax, tensorflow or cupy" : ": not read whole";
    for (const auto& u : e.unread) t += "\n    NOT READ: " + visible(u);
    if (!e.conda_cuda.empty()) t += "\n    conda's CUDA: " + e.conda_cuda;
    if (!e.conda_packages.empty()) t += "\n    conda installed: " + join(e.conda_packages, ", ");
    for (const auto& p : e.packages) t += "\n" + package_text(p);
    for (const auto& i : e.imports) t += "\n" + import_text(i);
    for (const auto& v : e.verdicts) t += "\n" + verdict_text(v, "    ");
  }
  return t;
}

nlohmann::json python_json(const PythonScan& s) {
  json j = {{"imported", s.imported}, {"stopped", s.stopped}, {"seconds", s.seconds}, {"envs", json::array()}};
  for (const auto& e : s.envs) j["envs"].push_back(env_json(e));
  return j;
}

}  // namespace cudabench::env
