// Each package of a Python environment, read from its files: torch, jax
// (jaxlib and its CUDA plugin), tensorflow and cupy. A build is named from
// all the evidence there is (decide_build()): the package's own version
// file, the local tag of its dist-info's version, the CUDA wheels its
// METADATA requires, the libraries it ships and needs. A piece that cannot
// be read is named in `unread`; it never turns into another verdict.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "env/files.h"
#include "env/parsers.h"
#include "python_scan.h"

namespace cudabench::env {
namespace fs = std::filesystem;
namespace {

// A site's .dist-info, .egg-info, .egg-link and .pth entries, all of them.
const std::vector<fs::path>& entries(const std::string& site) { return site_listing(site).meta; }

// The version of a library file: the wheel (nvidia-*) whose folder holds
// it, else its versioned real name. The wheel first: a cu11 wheel's
// libcudart.so.11.0 is the runtime 11.8.89, and its soname says only 11.0.
std::string library_version(const std::string& file) {
  if (file.empty()) return "";
  const std::size_t nv = file.rfind("/nvidia/");
  if (nv == std::string::npos) return version_from_soname(file);
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
  return version_from_soname(file);
}

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

// ---- the evidence ----

// The dist-info of `dist` in `site`: its version ("" none) and folder.
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

// An editable install (pip install -e): its source is elsewhere, named by
// an __editable__ .pth or the dist-info's direct_url.json.
bool editable(const std::string& site, const std::string& name) {
  for (const auto& d : entries(site)) {
    const std::string n = d.filename().string();
    if (starts(n, "__editable__." + name + "-") || starts(n, "__editable___" + name + "_")) return true;
    if (starts(n, name + "-") && n.size() > 10 && n.compare(n.size() - 10, 10, ".dist-info") == 0 &&
        read_text_file((d / "direct_url.json").string(), 1 << 16).find("\"editable\": true") != std::string::npos)
      return true;
  }
  return false;
}

// A version file as Python source: its text, or "" with why not in `unread`.
std::string source_of(PythonPackage& p, const std::string& site, const std::string& rel) {
  if (const std::string problem = file_problem(site + "/" + rel); !problem.empty()) {
    const std::string dist = p.name == "jax" ? "jaxlib" : p.name;
    p.unread.push_back(rel + ": " + (problem == "missing" && editable(site, dist)
                                         ? "not in the site (an editable install: its source is elsewhere)"
                                         : problem));
    return "";
  }
  return read_text_file(site + "/" + rel);
}

// What a version's local tag names: "+cu124" -> {cuda, 12.4}, "+cu130" ->
// {cuda, 13.0}, "+rocm6.2" -> {rocm, 6.2}, "+cpu" -> {cpu, ""}; {} none.
std::pair<std::string, std::string> build_of_tag(const std::string& version) {
  const auto plus = version.find('+');
  if (plus == std::string::npos) return {};
  const std::string tag = version.substr(plus + 1);
  if (starts(tag, "cpu")) return {"cpu", ""};
  if (starts(tag, "rocm")) return {"rocm", tag.substr(4)};
  const std::string d = starts(tag, "cu") ? tag.substr(2, tag.find_first_not_of("0123456789", 2) - 2) : "";
  if (d.size() >= 2) return {"cuda", d.substr(0, d.size() - 1) + "." + d.back()};
  return {};
}

// The CUDA the requirements pin: the runtime wheel's version
// (nvidia-cuda-runtime-cu12==12.4.127 -> 12.4), else a "-cuNN" wheel's major.
// Requirements behind an extra ("; extra == \"and-cuda\"") are left out:
// installing the package does not install them.
std::string cuda_of_requirements(const std::vector<std::string>& all) {
  std::vector<std::string> reqs;
  for (const auto& r : all)
    if (r.find("extra ==") == std::string::npos) reqs.push_back(r);
  if (const Version v = Version::parse(pinned(reqs, "nvidia-cuda-runtime")); v.known()) return v.major_minor();
  for (const auto& r : reqs)
    for (auto cu = r.find("-cu"); cu != std::string::npos; cu = r.find("-cu", cu + 1))
      if (cu + 3 < r.size() && std::isdigit(static_cast<unsigned char>(r[cu + 3])))
        return r.substr(cu + 3, r.find_first_not_of("0123456789", cu + 3) - cu - 3);
  return "";
}

void set_build(PythonPackage& p, const std::string& build, const std::string& cuda, const std::string& from) {
  p.build = build;
  p.cuda = build == "cuda" ? cuda : "";
  p.build_from = from;
}

// Which build it is, from the first evidence that tells, most trusted
// first: what its own version file states (`said`: cuda's value, or
// nullopt when the file does not say), the local tag of its version, the
// CUDA wheels it requires, the CUDA runtime its library needs. Else unknown.
void decide_build(PythonPackage& p, const std::optional<std::string>& said, const std::string& file,
                  const std::string& hip = "") {
  if (said && !said->empty()) return set_build(p, "cuda", *said, file);
  if (!hip.empty()) {
    p.rocm = Version::parse(hip).known() ? Version::parse(hip).major_minor() : hip;
    return set_build(p, "rocm", "", file);
  }
  if (said) return set_build(p, "cpu", "", file);
  if (const auto [build, v] = build_of_tag(p.version); !build.empty()) {
    if (build == "rocm") p.rocm = v;
    return set_build(p, build, v, "the local tag of " + p.version);
  }
  if (const std::string cu = cuda_of_requirements(p.requires_cuda); !cu.empty())
    return set_build(p, "cuda", cu, "its CUDA wheels (METADATA)");
  for (const auto& l : p.libraries)
    if (starts(l.name, "libcudart.so.")) return set_build(p, "cuda", l.name.substr(13), "the runtime its library needs");
  set_build(p, "unknown", "", "");
}

// ---- each package ----

std::optional<PythonPackage> read_torch(const std::string& site, const Loader& ld) {
  std::string dist;
  const std::string dist_v = dist_version(site, "torch", &dist);
  if (dist.empty() && !path_exists(site + "/torch/version.py") && !is_link(site + "/torch/version.py"))
    return std::nullopt;
  PythonPackage p{"torch", "", site + "/torch", site};
  const std::string text = source_of(p, site, "torch/version.py");
  const auto version = python_string_assignment(text, "__version__");
  if (!version && !dist.empty() && p.unread.empty()) p.unread.push_back("torch/version.py: no __version__ in it");
  if (!version && dist.empty()) return std::nullopt;
  p.version = version ? *version : dist_v;
  if (!dist.empty()) p.requires_cuda = cuda_requirements(dist);
  else p.unread.push_back("torch's dist-info: missing");
  p.cudnn = pinned(p.requires_cuda, "nvidia-cudnn");
  if (const std::string lib = site + "/torch/lib/libtorch_cuda.so"; is_regular(lib)) {
    p.kernel_library = lib;
    p.libraries = libraries_of(lib, {}, ld);
  }
  const auto said = python_string_assignment(text, "cuda");
  if (!said && p.unread.empty() && !text.empty()) p.unread.push_back("torch/version.py: no cuda line (truncated?)");
  decide_build(p, said, "torch/version.py", python_string_assignment(text, "hip").value_or(""));
  if (p.build == "unknown" && path_exists(site + "/torch/lib/libtorch_hip.so")) set_build(p, "rocm", "", "torch/lib/libtorch_hip.so");
  return p;
}

std::optional<PythonPackage> read_jax(const std::string& site, const Loader& ld) {
  std::string dist;
  const std::string dist_v = dist_version(site, "jaxlib", &dist);
  if (dist.empty() && !path_exists(site + "/jaxlib/version.py")) return std::nullopt;
  PythonPackage p{"jax", "", site + "/jaxlib", site};
  const auto version = python_string_assignment(source_of(p, site, "jaxlib/version.py"), "_version");
  if (!version && dist.empty()) return std::nullopt;
  p.version = "jaxlib " + (version ? *version : dist_v);
  std::optional<std::string> said = std::string();  // jaxlib alone is a CPU build
  for (const std::string& v : {p.version, dist_v})  // jaxlib 0.4.x: 0.4.25+cuda12.cudnn89 (the file or the dist-info)
    if (const auto plus = v.find("+cuda"); plus != std::string::npos)
      said = v.substr(plus + 5, v.find('.', plus) - plus - 5);
  for (const char* major : {"13", "12", "11"}) {
    std::string plugin;
    const std::string v = dist_version(site, std::string("jax_cuda") + major + "_plugin", &plugin);
    if (v.empty()) continue;
    said = major;
    p.version += ", jax-cuda" + std::string(major) + "-plugin " + v;
    p.requires_cuda = cuda_requirements(plugin);
    p.cudnn = pinned(p.requires_cuda, "nvidia-cudnn");
    const std::string lib = site + "/jax_plugins/xla_cuda" + major + "/xla_cuda_plugin.so";
    if (is_regular(lib)) p.libraries = libraries_of(lib, {"libcudart.so." + std::string(major)}, ld);
    break;
  }
  std::string hip;
  for (const auto& d : entries(site))
    if (const auto [name, v] = dist_info_name_version(d.filename().string()); starts(name, "jax_rocm"))
      hip = name.size() > 9 ? name.substr(8, 1) + "." + name.substr(9, 1) : "?";  // jax_rocm60_plugin: 6.0
  decide_build(p, hip.empty() ? said : std::nullopt, "jaxlib and its plugins' dist-info", hip);
  return p;
}

std::optional<PythonPackage> read_tensorflow(const std::string& site, const Loader& ld) {
  std::string dist;
  std::string version;
  for (const char* name : {"tensorflow", "tensorflow_gpu", "tensorflow_rocm"})
    if (version.empty()) version = dist_version(site, name, &dist);
  if (version.empty()) return std::nullopt;
  PythonPackage p{"tensorflow", version, site + "/tensorflow", site};
  const std::string file = "tensorflow/python/platform/build_info.py";
  const std::string info = source_of(p, site, file);
  p.requires_cuda = cuda_requirements(dist);
  std::optional<std::string> said;
  if (const auto cuda = python_dict_entry(info, "is_cuda_build"); cuda) said = *cuda == "True" ? python_dict_entry(info, "cuda_version").value_or("?") : "";
  if (said && !said->empty()) {
    p.cudnn = python_dict_entry(info, "cudnn_version").value_or("");
    p.archs_listed = split(python_dict_entry(info, "cuda_compute_capabilities").value_or(""), ',');
  }
  if (python_dict_entry(info, "is_rocm_build").value_or("") == "True" || dist.find("tensorflow_rocm-") != std::string::npos)
    p.rocm = python_dict_entry(info, "rocm_version").value_or(""), set_build(p, "rocm", "", file);
  else
    decide_build(p, said, file);
  const std::string major = p.cuda.substr(0, p.cuda.find('.'));
  std::vector<std::string> by_name = {"libcudart.so." + major};  // loaded later by name
  if (!p.cudnn.empty()) by_name.push_back("libcudnn.so." + p.cudnn.substr(0, p.cudnn.find('.')));
  if (const std::string lib = site + "/tensorflow/libtensorflow_framework.so.2"; is_regular(lib) && !p.cuda.empty() && p.cuda != "?")
    p.libraries = libraries_of(lib, by_name, ld);
  return p;
}

std::optional<PythonPackage> read_cupy(const std::string& site, const Loader&) {
  std::string dist, dist_v;
  for (const auto& d : entries(site))  // cupy_cuda12x, cupy_rocm_6_0, cupy (a source build)
    if (const auto [name, v] = dist_info_name_version(d.filename().string()); name == "cupy" || starts(name, "cupy_cuda") || starts(name, "cupy_rocm"))
      std::tie(dist, dist_v) = std::pair{d.string(), v};
  if (dist.empty() && !path_exists(site + "/cupy/_version.py")) return std::nullopt;
  PythonPackage p{"cupy", "", site + "/cupy", site};
  const auto version = python_string_assignment(source_of(p, site, "cupy/_version.py"), "__version__");
  if (!version && dist.empty()) return std::nullopt;
  p.version = version ? *version : dist_v;
  const std::string name = dist_info_name_version(fs::path(dist).filename().string()).first;
  if (!dist.empty()) p.requires_cuda = cuda_requirements(dist);
  if (starts(name, "cupy_cuda") && name.size() > 9) {  // cupy_cuda12x: 12; cupy_cuda110: 11.0; cupy_cuda102: 10.2
    const std::string d = name.substr(9, name.find_first_not_of("0123456789", 9) - 9);
    const bool major_only = name.size() > 9 + d.size() && name[9 + d.size()] == 'x';
    set_build(p, "cuda", major_only || d.size() < 3 ? d : d.substr(0, d.size() - 1) + "." + d.back(),
              fs::path(dist).filename().string());
  }
  else if (starts(name, "cupy_rocm"))
    p.rocm = name.size() > 12 ? name.substr(10, 1) + "." + name.substr(12, 1) : "",  // cupy_rocm_6_0: 6.0
    set_build(p, "rocm", "", fs::path(dist).filename().string());
  else
    set_build(p, "cuda", "?", "a source build (cupy): whatever toolkit it found");
  return p;
}

}  // namespace

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

}  // namespace cudabench::env
