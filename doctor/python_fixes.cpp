// The builds the doctor recommends for a user's torch, jax, tensorflow or
// cupy, and the fix that fits a target (this machine, or the machine a
// pasted error came from): the newest build its driver runs (whose kernels
// cover its GPUs, for torch), and for every newer build, the oldest driver
// that runs it; as a command for the environment it goes into (pip through
// its own interpreter, conda or pixi where they installed the package).
// torch's builds are the set-up's table (doctor/stacks.json: "stacks",
// then "older"); the others are builds(), below.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "env/parsers.h"
#include "rules.h"
#include "stacks_json.h"

namespace cudabench::doctor {
using namespace env;
namespace {

std::string build_archs(const TorchBuild& b) {
  std::string s;
  for (int a : b.sass) s += (s.empty() ? "" : ";") + std::to_string(a) + "-real";
  for (int a : b.ptx) s += (s.empty() ? "" : ";") + std::to_string(a) + "-virtual";
  return s;
}

bool covers_every_gpu(const TorchBuild& b, const Target& t) {
  for (const auto& g : t.gpus)
    if (arch_verdict(build_archs(b), g.cc_major, g.cc_minor, g.name).level == Verdict::Level::Error) return false;
  return true;
}

std::string cu_tag(std::string cuda) {
  cuda.erase(std::remove(cuda.begin(), cuda.end(), '.'), cuda.end());
  return "cu" + cuda;
}

// JAX's, TensorFlow's and CuPy's builds, newest first: the CUDA they are
// built for, the oldest driver CUDA (and Linux driver) that runs them by
// minor-version compatibility, pip's arguments and conda-forge's. From each
// project's install guide: JAX dropped CUDA 11 after 0.4.25, TensorFlow
// after 2.14, CuPy after v13 (v14 has cupy-cuda13x); onnxruntime-gpu on
// PyPI is CUDA 12 with cuDNN 9 since 1.19, its CUDA 11.8 builds are on
// its own feed.
const std::vector<PackageBuild>& builds() {
  static const std::vector<PackageBuild> all = {
      {"jax", "jax[cuda13]", "13", 13000, "580.65.06", "install -U \"jax[cuda13]\"", "jax \"jaxlib=*=*cuda*\" \"cuda-version=13\""},
      {"jax", "jax[cuda12]", "12", 12000, "525.60.13", "install -U \"jax[cuda12]\"", "jax \"jaxlib=*=*cuda*\" \"cuda-version=12\""},
      {"jax", "jax 0.4.25 (CUDA 11.8)", "11.8", 11000, "450.80.02",
       "install \"jax[cuda11_pip]==0.4.25\" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html",
       "\"jax=0.4.25\" \"jaxlib=0.4.25=*cuda*\" \"cuda-version=11.8\""},
      {"tensorflow", "tensorflow[and-cuda] (CUDA 12)", "12", 12000, "525.60.13", "install \"tensorflow[and-cuda]\"",
       "tensorflow-gpu \"cuda-version=12\""},
      {"tensorflow", "tensorflow 2.14 (CUDA 11.8)", "11.8", 11000, "450.80.02", "install \"tensorflow[and-cuda]==2.14.1\"",
       "\"tensorflow-gpu=2.14\" \"cuda-version=11.8\""},
      {"cupy", "cupy-cuda13x", "13", 13000, "580.65.06", "install cupy-cuda13x", "cupy \"cuda-version=13\""},
      {"cupy", "cupy-cuda12x", "12", 12000, "525.60.13", "install cupy-cuda12x", "cupy \"cuda-version=12\""},
      {"cupy", "cupy-cuda11x (CuPy 13)", "11", 11000, "450.80.02", "install \"cupy-cuda11x<14\"", "\"cupy<14\" \"cuda-version=11\""},
      {"onnxruntime", "onnxruntime-gpu (CUDA 12, cuDNN 9)", "12", 12000, "525.60.13",
       "install \"onnxruntime-gpu[cuda,cudnn]\"", "onnxruntime \"cuda-version=12\""},
      {"onnxruntime", "onnxruntime-gpu for CUDA 11.8", "11.8", 11000, "450.80.02",
       "install onnxruntime-gpu --extra-index-url "
       "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-11/pypi/simple/",
       "onnxruntime \"cuda-version=11.8\""},
  };
  return all;
}

// conda's name for a package the doctor reads.
std::string conda_name(const std::string& package) {
  return package == "torch" ? "pytorch" : package == "jax" ? "jaxlib" : package;
}

// The package's pip distributions to take out before `b` goes in: JAX's
// CUDA plugin of another major (jax[cuda12] beside jax-cuda13-plugin
// leaves the newer plugin loaded), another cupy wheel (two fight over
// cupy/).
std::vector<std::string> to_uninstall(const PackageBuild& b, const PythonPackage& p) {
  if (p.name == "jax")
    for (const char* major : {"13", "12", "11"})
      if (p.version.find("jax-cuda" + std::string(major) + "-plugin") != std::string::npos && b.cuda.rfind(major, 0) != 0)
        return {"jax-cuda" + std::string(major) + "-plugin", "jax-cuda" + std::string(major) + "-pjrt"};
  if (p.name == "onnxruntime") return {"onnxruntime", "onnxruntime-gpu"};  // the CPU package's files would win
  if (p.name == "cupy" && p.build_from.rfind("cupy_", 0) == 0) {  // cupy_cuda12x-13.3.0.dist-info
    std::string dist = p.build_from.substr(0, p.build_from.find('-'));
    std::replace(dist.begin(), dist.end(), '_', '-');
    if (b.name.rfind(dist, 0) != 0) return {dist};
  }
  return {};
}

}  // namespace

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_./:=@+,-%").find(c) != std::string::npos;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Target target_of(const Report& r) {
  const DriverInfo& d = r.driver;
  return {usable_driver_cuda(r), !d.nvml_driver_version.empty() ? d.nvml_driver_version : d.libcuda_file_version,
          gpus_with_cc(r)};
}

bool conda_installed(const PythonEnv& e, const std::string& package) {
  const std::string record = conda_name(package) + " ";
  return std::any_of(e.conda_packages.begin(), e.conda_packages.end(),
                     [&](const std::string& c) { return c.rfind(record, 0) == 0; });
}

std::string pip_of(const PythonEnv* e) {
  return e && !e->interpreter.empty() ? shell_word(e->interpreter) + " -m pip" : "pip";
}

std::string install_command(const PackageBuild& b, const PythonEnv* e, const PythonPackage* p) {
  if (e && e->pixi) {  // .pixi/envs/NAME: the project is two folders up; without a manifest there, pixi global's
    const std::string project = e->prefix.substr(0, e->prefix.rfind("/.pixi/envs/"));
    std::error_code ec;
    if (!std::filesystem::exists(project + "/pixi.toml", ec) && !std::filesystem::exists(project + "/pyproject.toml", ec))
      return "pixi global add --environment " + shell_word(e->prefix.substr(e->prefix.rfind('/') + 1)) + " " + b.conda;
    return "cd " + shell_word(project) + " && " +
           (p && !conda_installed(*e, p->name) ? "pixi remove --pypi " + (p->name == "jax" ? std::string("jax jaxlib") : p->name) + " && " : "") +
           "pixi add " + b.conda;
  }
  if (e && p && conda_installed(*e, p->name)) return "conda install -p " + shell_word(e->prefix) + " -c conda-forge " + b.conda;
  const std::string pip = pip_of(e);
  const std::vector<std::string> out = p ? to_uninstall(b, *p) : std::vector<std::string>{};
  return (out.empty() ? "" : pip + " uninstall -y " + join(out, " ") + " && ") + pip + " " + b.pip;
}

const std::vector<TorchBuild>& torch_builds() {
  static const std::vector<TorchBuild> all = [] {
    std::vector<TorchBuild> out;
    const auto table = nlohmann::json::parse(kStacksJson);  // alive through the loop
    for (const char* part : {"stacks", "older"})
      for (const auto& j : table.at(part))
        out.push_back({j.at("torch"), j.at("cuda"), j.at("driver_cuda"), j.at("oldest_driver"), j.at("sass"), j.at("ptx")});
    return out;
  }();
  return all;
}

std::vector<PackageBuild> package_builds(const std::string& package, const Target& t) {
  std::vector<PackageBuild> out;
  if (package == "torch") {
    for (const auto& b : torch_builds())
      if (covers_every_gpu(b, t))
        out.push_back({"torch", "torch " + b.torch + " (" + cu_tag(b.cuda) + ")", b.cuda, b.driver_cuda, b.oldest_driver,
                       "install torch==" + b.torch + " --index-url https://download.pytorch.org/whl/" + cu_tag(b.cuda),
                       "\"pytorch-gpu=" + b.torch + "\" \"cuda-version=" + b.cuda.substr(0, b.cuda.find('.')) + "\""});
    return out;
  }
  for (const auto& b : builds())
    if (b.package == package) out.push_back(b);
  return out;
}

std::vector<const TorchBuild*> torch_builds_for(int cc_major, int cc_minor) {
  std::vector<const TorchBuild*> out;
  for (const auto& b : torch_builds())
    if (arch_verdict(build_archs(b), cc_major, cc_minor, "").level != Verdict::Level::Error) out.push_back(&b);
  return out;
}

const TorchBuild* fitting_torch_build(const Report& r) {
  const Target t = target_of(r);
  for (const auto& b : torch_builds())
    if ((t.driver_cuda == 0 || t.driver_cuda >= b.driver_cuda) && covers_every_gpu(b, t)) return &b;
  return nullptr;
}

std::string torch_build_fix(const TorchBuild& b) {
  return "install torch " + b.torch + ", the " + cu_tag(b.cuda) + " build (CUDA " + b.cuda + "): pip install torch==" +
         b.torch + " --index-url https://download.pytorch.org/whl/" + cu_tag(b.cuda);
}

std::string fix_for(const std::string& package, const Target& t, const PythonEnv* e, const PythonPackage* p) {
  const std::vector<PackageBuild> all = package_builds(package, t);
  if (all.empty())
    return "no torch build in cudabench's table covers these GPUs: an older torch whose release notes list them, or "
           "a build from source with TORCH_CUDA_ARCH_LIST naming them";
  const int dc = t.driver_cuda;
  const auto fits = std::find_if(all.begin(), all.end(), [&](const PackageBuild& b) { return dc == 0 || dc >= b.driver_cuda; });
  std::string newer;  // the newest build of each CUDA newer than the one that fits, with the driver it needs
  std::set<std::string> named;
  for (auto b = all.begin(); b != fits; ++b)
    if (named.insert(b->cuda).second) newer += (newer.empty() ? "" : ", ") + (">= " + b->oldest_driver + " for " + b->name);
  const std::string driver = t.whose + " (CUDA " + Version::from_cuda_int(dc).major_minor() + ")";
  if (fits == all.end()) return "no " + package + " build runs on " + driver + ": update the driver (" + newer + ")";
  // "torch 2.10.0, the cu128 build (CUDA 12.8)", "cupy-cuda12x"
  const std::string what = package != "torch" ? fits->name
                                              : fits->name.substr(0, fits->name.find(" (")) + ", the " +
                                                    cu_tag(fits->cuda) + " build (CUDA " + fits->cuda + ")";
  std::string fix = "install " + what + (dc == 0 ? "" : ", the newest " + package + " build " + driver + " runs") + ": " +
                    install_command(*fits, e, p);
  if (!newer.empty()) fix += "; a newer build needs a newer driver (" + newer + ")";
  return fix;
}

}  // namespace cudabench::doctor
