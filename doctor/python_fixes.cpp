// The builds the doctor recommends for a user's torch, jax, tensorflow or
// cupy, and the fix that fits this machine: the newest build this driver
// runs (whose kernels cover every GPU here, for torch), and for every newer
// build, the oldest driver that runs it. torch's builds are the set-up's
// table (scripts/stacks.json: "stacks", then "older"); the others are
// builds(), below.
#include <algorithm>
#include <nlohmann/json.hpp>

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

bool covers_every_gpu(const TorchBuild& b, const Report& r) {
  for (const auto& g : gpus_with_cc(r))
    if (arch_verdict(build_archs(b), g.cc_major, g.cc_minor, g.name).level == Verdict::Level::Error) return false;
  return true;
}

// JAX's, TensorFlow's and CuPy's builds, newest first: the CUDA they are
// built for, the oldest driver CUDA (and Linux driver) that runs them by
// minor-version compatibility, and how to install them. From each
// project's install guide: JAX dropped CUDA 11 after 0.4.25, TensorFlow
// after 2.14, CuPy after v13; CuPy v14 has cupy-cuda13x.
const std::vector<PackageBuild>& builds() {
  static const std::vector<PackageBuild> all = {
      {"jax", "jax[cuda13]", "13", 13000, "580.65.06", "pip install -U \"jax[cuda13]\""},
      {"jax", "jax[cuda12]", "12", 12000, "525.60.13", "pip install -U \"jax[cuda12]\""},
      {"jax", "jax 0.4.25 (CUDA 11.8)", "11.8", 11000, "450.80.02",
       "pip install \"jax[cuda11_pip]==0.4.25\" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"},
      {"tensorflow", "tensorflow[and-cuda] (CUDA 12)", "12", 12000, "525.60.13", "pip install \"tensorflow[and-cuda]\""},
      {"tensorflow", "tensorflow 2.14 (CUDA 11.8)", "11.8", 11000, "450.80.02", "pip install \"tensorflow[and-cuda]==2.14.1\""},
      {"cupy", "cupy-cuda13x", "13", 13000, "580.65.06", "pip install cupy-cuda13x"},
      {"cupy", "cupy-cuda12x", "12", 12000, "525.60.13", "pip install cupy-cuda12x"},
      {"cupy", "cupy-cuda11x (CuPy 13)", "11", 11000, "450.80.02", "pip install \"cupy-cuda11x<14\""},
  };
  return all;
}

}  // namespace

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

std::vector<PackageBuild> package_builds(const std::string& package, const Report& r) {
  std::vector<PackageBuild> out;
  if (package == "torch") {
    for (const auto& b : torch_builds()) {
      if (!covers_every_gpu(b, r)) continue;
      std::string cu = b.cuda;
      cu.erase(std::remove(cu.begin(), cu.end(), '.'), cu.end());
      out.push_back({"torch", "torch " + b.torch + " (cu" + cu + ")", b.cuda, b.driver_cuda, b.oldest_driver,
                     torch_build_fix(b)});
    }
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
  const int dc = usable_driver_cuda(r);
  for (const auto& b : torch_builds())
    if ((dc == 0 || dc >= b.driver_cuda) && covers_every_gpu(b, r)) return &b;
  return nullptr;
}

std::string torch_build_fix(const TorchBuild& b) {
  std::string cu = b.cuda;
  cu.erase(std::remove(cu.begin(), cu.end(), '.'), cu.end());
  return "install torch " + b.torch + ", the cu" + cu + " build (CUDA " + b.cuda + "): pip install torch==" + b.torch +
         " --index-url https://download.pytorch.org/whl/cu" + cu;
}

std::string fix_for(const std::string& package, const Report& r) {
  const std::vector<PackageBuild> all = package_builds(package, r);
  if (all.empty())
    return "no torch build in cudabench's table covers these GPUs: an older torch whose release notes list them, or "
           "a build from source with TORCH_CUDA_ARCH_LIST naming them";
  const int dc = usable_driver_cuda(r);
  const auto fits = std::find_if(all.begin(), all.end(), [&](const PackageBuild& b) { return dc == 0 || dc >= b.driver_cuda; });
  std::string newer;  // each build newer than the one that fits, with the driver it needs
  for (auto b = all.begin(); b != fits; ++b)
    if (b == all.begin() || b->cuda != (b - 1)->cuda) newer += (newer.empty() ? "" : ", ") + (">= " + b->oldest_driver + " for " + b->name);
  const std::string driver = "this driver (CUDA " + Version::from_cuda_int(dc).major_minor() + ")";
  if (fits == all.end())
    return "no " + package + " build runs on " + driver + ": update the driver (" + newer + ")";
  std::string fix = (package == "torch" ? ""
                     : dc == 0   ? "the newest " + package + " build: "
                                 : "the newest " + package + " build " + driver + " runs: ") +
                    fits->install;
  if (package == "cupy") fix += " (uninstall the other cupy first)";
  if (!newer.empty()) fix += "; a newer build needs a newer driver (" + newer + ")";
  return fix;
}

}  // namespace cudabench::doctor
