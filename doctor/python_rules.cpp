// The doctor on the user's own Python: for the torch, jax, tensorflow or
// cupy that each environment imports, can it use this machine's GPUs, and
// if not, why (with the evidence) and the one fix, naming the build that
// fits from the table the set-up uses (doctor/stacks.json).
#include <algorithm>
#include <filesystem>

#include "env/files.h"
#include "env/parsers.h"
#include "env/report.h"
#include "explain.h"
#include "fatbin.h"
#include "rules.h"

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

// How each package says it has no GPU.
std::string no_gpu_words(const std::string& package) {
  if (package == "torch") return "torch.cuda.is_available() is False";
  if (package == "jax") return "jax.devices('cuda') fails (\"Unable to initialize backend 'cuda'\")";
  if (package == "tensorflow") return "tf.config.list_physical_devices('GPU') is empty";
  return "cupy.cuda.runtime.getDeviceCount() fails";
}

// The machine keeps every CUDA build off the GPU: no device nodes (the
// driver's fit is still checked: it is the next cause the user meets), a
// stuck driver, no driver (nothing more can be checked: true).
bool machine_cause(const PythonPackage& p, const std::string& who, const Report& r, std::vector<Verdict>& out) {
  if (const Verdict* m = machine_verdict(r, {"driver.device_nodes"}))
    out.push_back(make("python.device_nodes", L::Error,
                       who + " cannot reach a GPU: this container has no /dev/nvidia* device nodes (" + m->id + ")",
                       m->fix, {m->message}));
  if (!r.driver.probe_failure.empty()) {
    const Verdict stuck = driver_stuck_verdict(r.driver);
    out.push_back(make("python.driver_stuck", L::Error,
                       who + " cannot reach the GPU now: " + r.driver.probe_failure +
                           ", and its first CUDA call hangs or crashes there too",
                       stuck.fix, {stuck.message}));
    return true;
  }
  if (usable_driver_cuda(r) > 0 || machine_verdict(r, {"driver.device_nodes"})) return false;
  const Verdict* m = machine_verdict(r, {"driver.module_missing", "driver.stub", "driver.missing"});
  const bool gpu = gpu_hardware(r);
  out.push_back(make("python.no_driver", gpu ? L::Error : L::Warning,
                     who + " is a CUDA " + p.cuda + " build, but this machine has no NVIDIA driver" +
                         (gpu ? "" : " (and no NVIDIA GPU)") + ": " + no_gpu_words(p.name) +
                         (p.name == "torch" ? ", and CUDA calls raise \"Found no NVIDIA driver on your system\"" : ""),
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
void driver_fit(const PythonPackage& p, const std::string& who, const Report& r, const std::string& fix,
                std::vector<Verdict>& out) {
  const Version need = Version::parse(p.cuda), have = Version::from_cuda_int(usable_driver_cuda(r));
  if (!need.known()) return;
  const std::vector<std::string> seen = {"the package's CUDA: " + p.cuda, "cuDriverGetVersion: " + std::to_string(usable_driver_cuda(r))};
  if (need.major > have.major)
    out.push_back(make("python.driver_too_old", L::Error,
                       who + " needs a CUDA " + std::to_string(need.major) + ".x driver, and " + driver_words(r) +
                           ": it cannot use the GPU (\"The NVIDIA driver on your system is too old\")",
                       fix, seen));
  else if (need.major >= 11 && need.major == have.major && need.parts > 1 && have.minor < need.minor)
    out.push_back(make("python.driver_minor", L::Info,
                       who + " is CUDA " + need.major_minor() + " and " + driver_words(r) +
                           ": it runs by minor-version compatibility (what it JIT-compiles from newer PTX does not)",
                       "", seen));
}

void architectures(const PythonPackage& p, const std::string& who, const Report& r, const std::string& fix,
                   std::vector<Verdict>& out) {
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
                       fix, {from, g.name + ": compute capability " + std::to_string(g.cc_major) + "." +
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
                       "run " + shell_word(e.interpreter) + " -c 'import " + i.package + "' and read what it prints", ev));
    return;
  }
  const std::string n = std::to_string(i.device_count);
  out.push_back(make("python.import", i.cuda_available ? L::Ok : L::Info,
                     "import " + i.package + " " + i.version + " in " + e.prefix + ": " +
                         (i.cuda_available ? "the GPU is available (" + n + " devices)" : "no GPU available to it"),
                     "", ev));
}

// "pip install --force-reinstall --no-deps torch==2.5.1 --index-url
// .../cu124": the same build again, for an install whose files broke
// (conda's own install: conda reinstalls it).
std::string reinstall(const PythonPackage& p, const PythonEnv& e) {
  std::string v = p.version.rfind("jaxlib ", 0) == 0 ? p.version.substr(7, p.version.find(',') - 7) : p.version;
  const auto plus = v.find('+');
  const std::string tag = plus == std::string::npos ? "" : v.substr(plus + 1);
  if (conda_installed(e, p.name))
    return "conda install -p " + shell_word(e.prefix) + " --force-reinstall " + (p.name == "torch" ? "pytorch" : p.name == "jax" ? "jaxlib" : p.name) +
           (v.empty() ? "" : "=" + v.substr(0, plus));
  std::string dist = p.name == "jax" ? "jaxlib" : p.name;
  if (p.name == "cupy" && p.build_from.rfind("cupy_", 0) == 0) {  // cupy_cuda12x-13.3.0.dist-info: cupy-cuda12x
    dist = p.build_from.substr(0, p.build_from.find('-'));
    std::replace(dist.begin(), dist.end(), '_', '-');
  }
  const std::string pip = pip_of(&e) + " install --force-reinstall --no-deps ";
  if (v.empty()) return pip + dist;
  if (p.name == "torch" && !tag.empty())
    return pip + "torch==" + v.substr(0, plus) + " --index-url https://download.pytorch.org/whl/" + tag;
  return pip + dist + "==" + v;
}

// conda-meta's record of torch against the torch on disk: pip installed
// over conda's files (another version), or conda took the CPU build beside
// pytorch-cuda, or pytorch-cuda names another CUDA than the build. The fix
// goes through conda, which owns the record: `pip uninstall torch` would
// delete files conda still lists.
void conda_record(const PythonPackage& p, const std::string& who, const PythonEnv& e, std::vector<Verdict>& out) {
  if (p.name != "torch") return;
  std::string rec, cuda_rec;
  for (const auto& c : e.conda_packages) {
    if (c.rfind("pytorch ", 0) == 0) rec = c;
    if (c.rfind("pytorch-cuda ", 0) == 0) cuda_rec = c;
  }
  if (rec.empty()) return;
  const auto words = split(rec, ' '), cuda_words = split(cuda_rec, ' ');
  const std::string rec_version = words.size() > 1 ? words[1] : "", build = words.size() > 2 ? words[2] : "";
  const std::string disk = p.version.substr(0, p.version.find('+'));
  const std::string want_cuda = cuda_words.size() > 1 ? cuda_words[1] : "";
  std::string why;
  if (!rec_version.empty() && rec_version != disk)
    why = "conda-meta records pytorch " + rec_version + ", but the torch on disk is " + p.version +
          ": another installer (pip) wrote over conda's files";
  else if (!want_cuda.empty() && p.build != "cuda")
    why = "conda installed pytorch-cuda " + want_cuda + ", but its pytorch is the " + p.build + " build (" + build +
          "): the solver took a CPU build";
  else if (!want_cuda.empty() && Version::parse(want_cuda).major_minor() != Version::parse(p.cuda).major_minor())
    why = "conda installed pytorch-cuda " + want_cuda + ", but its torch is built for CUDA " + p.cuda;
  if (why.empty()) return;
  const std::string cuda = !want_cuda.empty() ? want_cuda : p.cuda;
  out.push_back(make("python.conda_record", Verdict::Level::Error, who + ": " + why,
                     "let conda put back what it owns (not pip uninstall, which deletes files conda still lists): conda install -p " +
                         shell_word(e.prefix) + " --force-reinstall \"pytorch=" + rec_version + "=*cuda*\"" +
                         (cuda.empty() ? "" : " \"pytorch-cuda=" + cuda + "\"") + " -c pytorch -c nvidia",
                     {"conda-meta: " + rec + (cuda_rec.empty() ? "" : ", " + cuda_rec), "on disk: " + p.location + " " + p.version}));
}

// The import itself fails: a version file that cannot be read, a CUDA
// library that resolves nowhere. The first causes the user meets.
// torch's own fallback (_preload_cuda_deps): a library its loader misses is
// looked for in every site's nvidia/*/lib.
bool in_a_wheel(const std::string& name, const std::vector<std::string>& sites) {
  for (const auto& site : sites) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(site + "/nvidia", ec), end; !ec && it != end; it.increment(ec))
      if (std::error_code e2; std::filesystem::exists(it->path() / "lib" / name, e2)) return true;
  }
  return false;
}

void import_blockers(const PythonPackage& p, const std::string& who, const PythonEnv& e, std::vector<Verdict>& out) {
  const std::vector<std::string>& sites = e.sites;
  std::vector<std::string> broken, incomplete;
  for (const auto& u : p.unread)
    if (u.find("dist-info") == std::string::npos && u.find("editable install") == std::string::npos)
      (u.find("no __version__") != std::string::npos || u.find("truncated") != std::string::npos ? incomplete : broken).push_back(u);
  if (!broken.empty() || !incomplete.empty())
    out.push_back(make("python.broken_install", broken.empty() ? L::Warning : L::Error,
                       who + ": " + join(broken.empty() ? incomplete : broken, "; ") +
                           (broken.empty() ? ": an incomplete file, import " + p.name + " may fail"
                                           : ": import " + p.name + " fails" +
                                                 (join(broken).find("FIFO") != std::string::npos ? " (or, on the FIFO, hangs)" : "")),
                       reinstall(p, e), {}));
  if (p.build != "cuda") return;
  for (const auto& l : p.libraries) {
    if (!l.resolved.empty() || (p.name == "torch" && in_a_wheel(l.name, sites))) continue;
    static const std::vector<std::pair<std::string, std::string>> wheels = {
        {"libcudart.", "nvidia-cuda-runtime"}, {"libcublas", "nvidia-cublas"}, {"libcudnn", "nvidia-cudnn"}, {"libnccl", "nvidia-nccl"}};
    std::string wheel;
    for (const auto& [lib, w] : wheels)
      if (l.name.rfind(lib, 0) == 0) wheel = w;
    std::string req;
    for (const auto& q : p.requires_cuda)
      if (!wheel.empty() && q.rfind(wheel, 0) == 0) req = q.substr(0, q.find(';'));
    const std::string major = p.cuda.substr(0, p.cuda.find('.'));
    out.push_back(make("python.library_missing", L::Error,
                       who + " needs " + l.name + ", which is in no folder the loader searches: " +
                           (p.name == "torch" ? "import torch fails" : "it cannot load it, and runs without the GPU") +
                           " (\"" + l.name + ": cannot open shared object file\")",
                       pip_of(&e) + " install " + shell_word(req.empty() ? wheel + "-cu" + major : req) + " (" + p.name +
                           "'s own wheel of it), or put the folder that holds " + l.name + " on LD_LIBRARY_PATH",
                       {l.name + ": not in " + (p.kernel_library.empty() ? std::string("the package's library") : p.kernel_library) +
                            "'s RPATH/RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.conf or the default folders"}));
  }
}

// Not a CUDA build: CPU-only, ROCm, or one cudabench could not tell.
bool not_cuda(const PythonPackage& p, const std::string& who, const Report& r, const PythonEnv& e,
              const std::string& fix, std::vector<Verdict>& out) {
  const L level = gpu_hardware(r) ? L::Warning : L::Info;
  if (p.build == "cpu")
    out.push_back(make("python.cpu_only", level,
                       who + " is a CPU-only build: " + no_gpu_words(p.name) +
                           (p.name == "torch" ? " (\"Torch not compiled with CUDA enabled\")" : ""),
                       fix, {p.location + " (" + p.build_from + ")"}));
  else if (p.build == "rocm")
    out.push_back(make("python.rocm", level,
                       who + " is a ROCm build" + (p.rocm.empty() ? "" : " (ROCm " + p.rocm + ")") +
                           ", for AMD GPUs: it cannot use an NVIDIA GPU, and " + no_gpu_words(p.name),
                       fix, {p.location + " (" + p.build_from + ")"}));
  else if (p.build == "unknown")
    out.push_back(make("python.build_unknown", L::Warning,
                       who + ": which build this is (CUDA, ROCm or CPU-only) shows in none of its files",
                       reinstall(p, e), {p.location}));
  return p.build != "cuda";
}

// JAX's CUDA plugin from another release than jaxlib ("jaxlib 0.4.38,
// jax-cuda12-plugin 0.5.0"): the PJRT API versions differ, and JAX says
// "Unable to initialize backend 'cuda'" in either direction.
void jax_skew(const PythonPackage& p, const std::string& who, const PythonEnv& e, const std::string& fix,
              const Report& r, std::vector<Verdict>& out) {
  const auto comma = p.version.find(", jax-cuda");
  if (p.name != "jax" || comma == std::string::npos || p.version.rfind("jaxlib ", 0) != 0) return;
  const std::string lib = p.version.substr(7, comma - 7), plugin_part = p.version.substr(comma + 2);  // "jax-cuda12-plugin 0.5.0"
  const std::string plugin = plugin_part.substr(0, plugin_part.find(' ')), version = plugin_part.substr(plugin_part.find(' ') + 1);
  const std::string base = lib.substr(0, lib.find('+'));
  if (Version::parse(base).parts < 2 || Version::parse(base) == Version::parse(version)) return;  // 0.x: not known()
  const std::string pjrt = plugin.substr(0, plugin.rfind('-')) + "-pjrt";
  out.push_back(make("python.jax_skew", L::Error,
                     who + ": " + plugin + " " + version + " is " + (Version::parse(version) < Version::parse(base) ? "older" : "newer") +
                         " than jaxlib " + base + ": their PJRT API versions differ (\"Unable to initialize backend 'cuda'\")",
                     // The package's fix when the driver is too old for the plugin (python.driver_too_old's), else the pins.
                     usable_driver_cuda(r) > 0 && Version::from_cuda_int(usable_driver_cuda(r)).major < Version::parse(p.cuda).major
                         ? fix
                         : pip_of(&e) + " install \"jaxlib==" + base + "\" \"" + plugin + "==" + base + "\" \"" + pjrt + "==" + base + "\"",
                     {"jaxlib " + lib, plugin + " " + version}));
}

// One package's verdicts, in the order the user meets their causes: the
// import, the build, the machine, the driver, the kernels, the libraries.
std::vector<Verdict> package_verdicts(const PythonPackage& p, const std::string& who, const PythonEnv& e,
                                      const Report& r) {
  std::vector<Verdict> out;
  if (!p.shadowed_by.empty()) {
    out.push_back(make("python.shadowed_install", L::Warning, who + " is never imported: Python finds " + p.shadowed_by + " first",
                       "pip uninstall one of them (the first: " + p.shadowed_by + ")", {p.location, p.shadowed_by}));
    return out;
  }
  import_blockers(p, who, e, out);
  // One fix for every cause of the package: two causes never give two
  // builds. conda's own record, where it disagrees, is put back first.
  conda_record(p, who, e, out);
  const bool recorded = !out.empty() && out.back().id == "python.conda_record";
  const std::string fix = recorded ? out.back().fix : fix_for(p.name, target_of(r), &e, &p);
  jax_skew(p, who, e, fix, r, out);
  if (not_cuda(p, who, r, e, fix, out) || machine_cause(p, who, r, out)) return out;
  if (usable_driver_cuda(r) > 0) driver_fit(p, who, r, fix, out);
  architectures(p, who, r, fix, out);
  libraries(p, who, out);
  return out;
}

// Every blocking cause is named, in order ("cause 1 of 2: ..."), and every
// verdict says which evidence could not be read.
void numbered_causes(const PythonPackage& p, std::vector<Verdict>& mine) {
  const auto n = std::count_if(mine.begin(), mine.end(), [](const Verdict& v) { return v.level == L::Error; });
  int k = 0;
  for (auto& v : mine) {
    if (n > 1 && v.level == L::Error) v.message = "cause " + std::to_string(++k) + " of " + std::to_string(n) + ": " + v.message;
    for (const auto& u : p.unread) v.evidence.push_back("not read: " + u);
    if (!p.unread.empty() && !p.build_from.empty()) v.evidence.push_back("the build named by: " + p.build_from);
  }
}

// The nvidia-* wheels' names: "nvidia-cudnn-cu13 9.19.0.56" -> "nvidia-cudnn-cu13".
std::string nvidia_wheels(const PythonEnv& e) {
  std::vector<std::string> names;
  for (const auto& w : e.cuda_wheels)
    if (w.rfind("nvidia-", 0) == 0) names.push_back(w.substr(0, w.find(' ')));
  return join(names, " ");
}

}  // namespace

int usable_driver_cuda(const Report& r) {
  const DriverInfo& d = r.driver;
  return d.libcuda_found && !d.libcuda_is_stub ? d.cuda_version : 0;
}

std::vector<Verdict> python_env_verdicts(const PythonEnv& e, const Report& r) {
  std::vector<Verdict> out;
  for (const auto& p : e.packages) {
    std::vector<Verdict> mine = package_verdicts(p, p.name + " " + p.version + " in " + e.prefix, e, r);
    numbered_causes(p, mine);
    out.insert(out.end(), mine.begin(), mine.end());
  }
  for (const auto& i : e.imports) import_verdict(i, e, out);
  const bool pip_cuda = std::any_of(e.cuda_wheels.begin(), e.cuda_wheels.end(),
                                    [](const std::string& w) { return w.rfind("nvidia-", 0) == 0; });
  if (!e.conda_cuda.empty() && pip_cuda) {
    // One way out, the one that keeps the torch this environment imports:
    // conda's torch uses conda's runtime, pip's brings its own wheels.
    const bool conda_torch = conda_installed(e, "torch");
    out.push_back(make("python.conda_pip_mix", L::Warning,
                       e.prefix + " holds two CUDA runtimes: conda's " + e.conda_cuda + " and pip's nvidia-* wheels; "
                       "which one a library gets depends on its RPATH and LD_LIBRARY_PATH",
                       conda_torch ? "keep conda's (its torch uses it): " + pip_of(&e) + " uninstall -y " + nvidia_wheels(e)
                                   : "keep pip's (its torch brings them): conda remove -p " + shell_word(e.prefix) +
                                         " --force " + e.conda_cuda.substr(0, e.conda_cuda.find(' ')),
                       {e.conda_cuda + " (conda-meta)", join(e.cuda_wheels)}));
  }
  return out;
}

}  // namespace cudabench::doctor
