// The doctor on the user's own Python: for the torch, jax, tensorflow or
// cupy that each environment imports, can it use this machine's GPUs, and
// if not, why (with the evidence) and the one fix, naming the build that
// fits from the table the set-up uses (scripts/stacks.json).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "env/parsers.h"
#include "env/report.h"
#include "explain.h"
#include "fatbin.h"
#include "rules.h"
#include "stacks_json.h"

namespace cudabench::doctor {
using namespace env;
namespace {
using L = Verdict::Level;

Verdict make(std::string id, L level, std::string message, std::string fix, std::vector<std::string> evidence) {
  return Verdict{std::move(id), level, std::move(message), std::move(fix), std::move(evidence)};
}

const Verdict* machine_verdict(const Report& r, const std::vector<std::string>& ids) {
  for (const auto& v : r.verdicts)
    if ((v.level == L::Warning || v.level == L::Error) && std::find(ids.begin(), ids.end(), v.id) != ids.end())
      return &v;
  return nullptr;
}

bool gpu_hardware(const Report& r) {
  return !r.gpus.empty() || !r.nvml_gpus.empty() ||
         std::any_of(r.system.pci.begin(), r.system.pci.end(), [](const PciDevice& p) { return p.is_gpu(); });
}

int driver_cuda(const Report& r) {
  const DriverInfo& d = r.driver;
  return d.libcuda_found && !d.libcuda_is_stub ? d.cuda_version : 0;
}

std::string driver_words(const Report& r) {
  const DriverInfo& d = r.driver;
  const std::string v = !d.nvml_driver_version.empty() ? d.nvml_driver_version : d.libcuda_file_version;
  return "this driver" + (v.empty() ? "" : " (" + v + ")") + " supports CUDA " +
         Version::from_cuda_int(d.cuda_version).major_minor();
}

// tensorflow's build info ("sm_60", "compute_90") as arch_verdict's list.
std::string archs_of_list(const std::vector<std::string>& listed) {
  std::string s;
  for (const auto& a : listed) {
    const bool ptx = a.rfind("compute_", 0) == 0;
    const std::string n = a.substr(a.find('_') + 1);
    s += (s.empty() ? "" : ";") + n + (ptx ? "-virtual" : "-real");
  }
  return s;
}

std::string build_archs(const TorchBuild& b) {
  std::string s;
  for (int a : b.sass) s += (s.empty() ? "" : ";") + std::to_string(a) + "-real";
  for (int a : b.ptx) s += (s.empty() ? "" : ";") + std::to_string(a) + "-virtual";
  return s;
}

bool covers_every_gpu(const std::string& archs, const Report& r) {
  for (const auto& g : gpus_with_cc(r))
    if (arch_verdict(archs, g.cc_major, g.cc_minor, g.name).level == L::Error) return false;
  return true;
}

// The build to install instead, as one line.
std::string fix_for(const std::string& package, const Report& r) {
  const int dc = driver_cuda(r);
  const int major = dc ? Version::from_cuda_int(dc).major : 0;
  const std::string cu = major >= 13 ? "13" : "12";
  if (package == "jax") return "pip install -U \"jax[cuda" + cu + "]\" (JAX's CUDA " + cu + " plugin and its wheels)";
  if (package == "tensorflow") return "pip install \"tensorflow[and-cuda]\" (TensorFlow's CUDA 12 wheels)";
  if (package == "cupy") return "pip install cupy-cuda" + cu + "x (uninstall the other cupy first)";
  if (const TorchBuild* b = fitting_torch_build(r)) return torch_build_fix(*b);
  const TorchBuild& newest = torch_builds().at(0);
  if (!covers_every_gpu(build_archs(newest), r))
    return "no torch build in cudabench's table covers these GPUs: an older torch whose release notes list them, or "
           "a build from source with TORCH_CUDA_ARCH_LIST naming them";
  return "no torch build in cudabench's table runs on " + driver_words(r) + ": update the driver (>= " +
         newest.oldest_driver + " for torch " + newest.torch + ")";
}

// The machine keeps every CUDA build off the GPU: no driver, no device nodes.
bool machine_cause(const PythonPackage& p, const std::string& who, const Report& r, std::vector<Verdict>& out) {
  if (const Verdict* m = machine_verdict(r, {"driver.device_nodes"})) {
    out.push_back(make("python.device_nodes", L::Error,
                       who + " cannot reach a GPU: this container has no /dev/nvidia* device nodes (" + m->id + ")",
                       m->fix, {m->message}));
    return true;
  }
  if (!r.driver.probe_failure.empty()) {
    const Verdict stuck = driver_stuck_verdict(r.driver);
    out.push_back(make("python.driver_stuck", L::Error,
                       who + " cannot reach the GPU now: " + r.driver.probe_failure +
                           ", and torch.cuda.is_available() or any first CUDA call hangs or crashes there too",
                       stuck.fix, {stuck.message}));
    return true;
  }
  if (driver_cuda(r) > 0) return false;
  const Verdict* m = machine_verdict(r, {"driver.module_missing", "driver.stub", "driver.missing"});
  const bool gpu = gpu_hardware(r);
  out.push_back(make("python.no_driver", gpu ? L::Error : L::Warning,
                     who + " is a CUDA " + p.cuda + " build, but this machine has no NVIDIA driver" +
                         (gpu ? "" : " (and no NVIDIA GPU)") + ": torch.cuda.is_available() is False, and CUDA calls "
                         "raise \"Found no NVIDIA driver on your system\"",
                     (Version::parse(p.cuda).known() ? "on a GPU machine install the NVIDIA driver, >= " +
                                                           min_driver_for_major(Version::parse(p.cuda).major) + " for CUDA " +
                                                           std::to_string(Version::parse(p.cuda).major) + ".x"
                                                     : std::string("on a GPU machine install the NVIDIA driver")) +
                         (m && m->id == "driver.module_missing" ? " (" + m->fix + ")" : ""),
                     {m ? m->message : "libcuda.so.1 not found", "the package's CUDA: " + p.cuda}));
  return true;
}

// The build's CUDA against the driver's, with minor-version compatibility:
// a 12.4 build runs on a 12.2 driver; a 13.0 build needs a 13.x driver.
void driver_fit(const PythonPackage& p, const std::string& who, const Report& r, std::vector<Verdict>& out) {
  const Version need = Version::parse(p.cuda), have = Version::from_cuda_int(driver_cuda(r));
  if (!need.known()) return;
  const std::vector<std::string> seen = {"the package's CUDA: " + p.cuda, "cuDriverGetVersion: " + std::to_string(driver_cuda(r))};
  if (need.major > have.major)
    out.push_back(make("python.driver_too_old", L::Error,
                       who + " needs a CUDA " + std::to_string(need.major) + ".x driver, and " + driver_words(r) +
                           ": it cannot use the GPU (\"The NVIDIA driver on your system is too old\")",
                       fix_for(p.name, r), seen));
  else if (need.major >= 11 && need.major == have.major && need.parts > 1 && have.minor < need.minor)
    out.push_back(make("python.driver_minor", L::Info,
                       who + " is CUDA " + need.major_minor() + " and " + driver_words(r) +
                           ": it runs by minor-version compatibility (what it JIT-compiles from newer PTX does not)",
                       "", seen));
}

void architectures(const PythonPackage& p, const std::string& who, const Report& r, std::vector<Verdict>& out) {
  const std::string archs = p.fatbin.read() ? archs_of(p.fatbin) : archs_of_list(p.archs_listed);
  const std::string from = p.fatbin.read() ? p.fatbin.file + ": " + fatbin_summary(p.fatbin)
                                           : "build info: " + join(p.archs_listed, " ");
  if (archs.empty()) return;
  for (const auto& g : gpus_with_cc(r)) {
    const Verdict v = arch_verdict(archs, g.cc_major, g.cc_minor, g.name);
    if (v.level != L::Error && v.level != L::Warning) continue;
    const std::string sm = "sm_" + std::to_string(g.cc_major * 10 + g.cc_minor);
    out.push_back(make("python.arch", v.level,
                       v.level == L::Error ? who + " has no kernels for " + g.name + " (" + sm + ") and no PTX to "
                                             "JIT-compile: \"" + sm + " is not compatible with the current PyTorch installation\""
                                           : who + " has no SASS for " + g.name + " (" + sm + "): the driver JIT-compiles "
                                             "its PTX at first use",
                       fix_for(p.name, r), {from, g.name + ": compute capability " + std::to_string(g.cc_major) + "." +
                                                      std::to_string(g.cc_minor)}));
  }
}

void libraries(const PythonPackage& p, const std::string& who, std::vector<Verdict>& out) {
  for (const auto& l : p.libraries) {
    if (!l.shadowed()) continue;
    const Version got = Version::parse(l.version), own = Version::parse(l.own_version);
    const bool older = got.known() && own.known() && got < own;
    out.push_back(make("python.library_shadowed", older ? L::Error : L::Warning,
                       who + " would load " + l.name + " from " + l.resolved + " (" + l.via + ")" +
                           (older ? ", older than its own " + l.own_version : "") + ", not its own copy " + l.own,
                       "take " + l.resolved.substr(0, l.resolved.rfind('/')) + " out of " +
                           (l.via == "LD_LIBRARY_PATH" ? "LD_LIBRARY_PATH" : l.via) + " when running this Python",
                       {l.name + ": " + l.resolved + " " + (l.version.empty() ? "(version unknown)" : l.version),
                        "its own: " + l.own + " " + l.own_version}));
  }
}

// What --import saw, its output read as --explain reads a pasted message.
void import_verdict(const PythonImport& i, const PythonEnv& e, std::vector<Verdict>& out) {
  std::vector<std::string> ev;
  for (const auto& w : i.warnings) ev.push_back("printed: " + w);
  for (const Scenario* s : match_scenarios(join(i.warnings, "\n")))
    ev.push_back("that is bench --explain's [" + std::to_string(s->number) + "] " + s->title);
  if (!i.error.empty()) {
    out.push_back(make("python.import", L::Error, i.error + " (" + e.interpreter + ")",
                       "run " + e.interpreter + " -c 'import " + i.package + "' and read what it prints", ev));
    return;
  }
  const std::string n = std::to_string(i.device_count);
  out.push_back(make("python.import", i.cuda_available ? L::Ok : L::Info,
                     "import " + i.package + " " + i.version + " in " + e.prefix + ": " +
                         (i.cuda_available ? "the GPU is available (" + n + " devices)" : "no GPU available to it"),
                     "", ev));
}

}  // namespace

const std::vector<TorchBuild>& torch_builds() {
  static const std::vector<TorchBuild> all = [] {
    std::vector<TorchBuild> out;
    const auto table = nlohmann::json::parse(kStacksJson);  // alive through the loop
    for (const auto& j : table.at("stacks"))
      out.push_back({j.at("torch"), j.at("cuda"), j.at("driver_cuda"), j.at("oldest_driver"), j.at("sass"), j.at("ptx")});
    return out;
  }();
  return all;
}

const TorchBuild* fitting_torch_build(const Report& r) {
  const int dc = driver_cuda(r);
  for (const auto& b : torch_builds())
    if ((dc == 0 || dc >= b.driver_cuda) && covers_every_gpu(build_archs(b), r)) return &b;
  return nullptr;
}

std::string torch_build_fix(const TorchBuild& b) {
  std::string cu = b.cuda;
  cu.erase(std::remove(cu.begin(), cu.end(), '.'), cu.end());
  return "install torch " + b.torch + ", the cu" + cu + " build (CUDA " + b.cuda + "): pip install torch==" + b.torch +
         " --index-url https://download.pytorch.org/whl/cu" + cu;
}

std::vector<Verdict> python_env_verdicts(const PythonEnv& e, const Report& r) {
  std::vector<Verdict> out;
  for (const auto& p : e.packages) {
    const std::string who = p.name + " " + p.version + " in " + e.prefix;
    if (!p.shadowed_by.empty()) {
      out.push_back(make("python.shadowed_install", L::Warning,
                         who + " is never imported: Python finds " + p.shadowed_by + " first",
                         "pip uninstall one of them (the first: " + p.shadowed_by + ")", {p.location, p.shadowed_by}));
      continue;
    }
    if (p.cuda.empty()) {
      const std::string says = p.name == "torch" ? "torch.cuda.is_available() is always False (\"Torch not compiled with "
                                                   "CUDA enabled\")"
                               : p.name == "jax" ? "jax.devices('cuda') fails (\"Unable to initialize backend 'cuda'\")"
                                                 : "it lists no GPU";
      out.push_back(make("python.cpu_only", gpu_hardware(r) ? L::Warning : L::Info,
                         who + " is a CPU-only build: " + says,
                         fix_for(p.name, r), {p.location}));
      continue;
    }
    if (machine_cause(p, who, r, out)) continue;
    driver_fit(p, who, r, out);
    architectures(p, who, r, out);
    libraries(p, who, out);
  }
  for (const auto& i : e.imports) import_verdict(i, e, out);
  const bool pip_cuda = std::any_of(e.cuda_wheels.begin(), e.cuda_wheels.end(),
                                    [](const std::string& w) { return w.rfind("nvidia-", 0) == 0; });
  if (!e.conda_cuda.empty() && pip_cuda)
    out.push_back(make("python.conda_pip_mix", L::Warning,
                       e.prefix + " holds two CUDA runtimes: conda's " + e.conda_cuda + " and pip's nvidia-* wheels; "
                       "which one a library gets depends on its RPATH and LD_LIBRARY_PATH",
                       "keep one: conda remove the CUDA packages (pip's torch brings its own), or pip uninstall the "
                       "nvidia-* wheels and take torch from conda",
                       {e.conda_cuda + " (conda-meta)", join(e.cuda_wheels)}));
  return out;
}

}  // namespace cudabench::doctor
