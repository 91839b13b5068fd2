// What the numbers in a pasted message mean (explain.h's decode_message):
// the version codes CUDA's libraries report ("found version 11040", JAX's
// "Found cuDNN version 8600, but JAX was built against version 8800") and
// the architecture a torch build lacks ("sm_120 is not compatible"), each
// turned into words for the scenario it belongs to.
#include <algorithm>
#include <cctype>
#include <tuple>

#include "env/parsers.h"
#include "explain.h"
#include "rules.h"

namespace cudabench::doctor {
using env::Version;
namespace {
using Decoded = std::vector<std::pair<std::string, std::string>>;

std::string digits_at(const std::string& t, std::size_t p) {
  std::size_t e = p;
  while (e < t.size() && e - p < 7 && std::isdigit(static_cast<unsigned char>(t[e]))) ++e;
  return t.substr(p, e - p);
}

// A library's version code as its header defines it: cuDNN 8 and cuSOLVER,
// cuSPARSE, cuFFT count major*1000 + minor*100 + patch; cuDNN 9 and cuBLAS
// count major*10000 + minor*100 + patch; the CUDA runtime, major*1000 + minor*10.
std::string library_version(const std::string& lib, int n) {
  if (lib == "cuda") return Version::from_cuda_int(n).major_minor();
  if (lib == "cupti") return std::to_string(n);  // CUPTI counts its API versions: no scheme to read
  const bool wide = (lib == "cudnn" && n >= 90000) || (lib == "cublas" && n >= 100000);
  const int major = wide ? n / 10000 : n / 1000, minor = wide ? n / 100 % 100 : n / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(n % 100);
}

std::string library_name(const std::string& lib) {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"cuda", "the CUDA runtime (libcudart)"}, {"cudnn", "cuDNN (libcudnn)"}, {"cusolver", "cuSOLVER (libcusolver)"},
      {"cusparse", "cuSPARSE (libcusparse)"},   {"cufft", "cuFFT (libcufft)"}, {"cublas", "cuBLAS (libcublas)"},
      {"cupti", "CUPTI (libcupti)"},            {"nccl", "NCCL (libnccl)"}};
  for (const auto& [k, v] : names)
    if (k == lib) return v;
  return lib;
}

// PyTorch's "The NVIDIA driver on your system is too old (found version 11040)".
void driver_number(const std::string& t, Decoded& out) {
  const std::string key = "too old (found version ";
  for (auto p = t.find(key); p != std::string::npos; p = t.find(key, p + 1)) {
    const std::string d = digits_at(t, p + key.size());
    if (d.size() < 4) continue;
    const Version v = Version::from_cuda_int(std::stoi(d));
    std::string needs;
    for (int major : {11, 12, 13})
      if (major > v.major) needs += (needs.empty() ? "" : ", ") + std::to_string(major) + ".x >= " + min_driver_for_major(major);
    out.emplace_back("driver_older_than_runtime",
                     "\"found version " + d + "\" is the driver's CUDA as cuDriverGetVersion counts it: CUDA " +
                         v.major_minor() + (needs.empty() ? "" : "; a build for CUDA " + needs));
  }
}

// JAX's "Found cuDNN version 8600, but JAX was built against version 8800, which is newer".
void jax_versions(const std::string& t, Decoded& out) {
  const std::string key = ", but jax was built against version ";
  for (auto p = t.find(key); p != std::string::npos; p = t.find(key, p + 1)) {
    const auto found = t.rfind("found ", p);
    if (found == std::string::npos || p - found > 60) continue;
    const std::string what = t.substr(found + 6, p - found - 6);  // "cudnn version 8600"
    const auto v = what.find(" version ");
    const std::string lib = what.substr(0, v), have = v == std::string::npos ? "" : digits_at(what, v + 9);
    const std::string built = digits_at(t, p + key.size());
    if (have.empty() || built.empty()) continue;
    const std::string a = library_version(lib, std::stoi(have)), b = library_version(lib, std::stoi(built));
    out.emplace_back("jax_library_too_old",
                     library_name(lib) + " " + a + " (" + have + ") is the copy this process found, and JAX was built "
                     "against " + b + " (" + built + "): that copy is too old; it wins over the one JAX's CUDA plugin "
                     "brings when it is on LD_LIBRARY_PATH, from conda or from a system toolkit");
  }
}

// PyTorch's "... with CUDA capability sm_120 is not compatible with the current PyTorch installation".
void torch_arch(const std::string& t, Decoded& out) {
  for (auto p = t.find("sm_"); p != std::string::npos; p = t.find("sm_", p + 1)) {
    const std::string d = digits_at(t, p + 3);
    if (d.size() < 2 || d.size() > 3 || t.compare(p + 3 + d.size(), 21, " is not compatible wi") != 0) continue;
    const int sm = std::stoi(d), major = sm / 10, minor = sm % 10;
    std::string carry, first;
    for (const TorchBuild* b : torch_builds_for(major, minor)) {
      std::string cu = b->cuda;
      cu.erase(std::remove(cu.begin(), cu.end(), '.'), cu.end());
      carry += (carry.empty() ? "" : ", ") + ("torch " + b->torch + " (cu" + cu + ", driver >= " + b->oldest_driver + ")");
      first = "torch " + b->torch + " (cu" + cu + ")";
    }
    out.emplace_back("no_kernel_image",
                     "sm_" + d + " is compute capability " + std::to_string(major) + "." + std::to_string(minor) +
                         (carry.empty() ? "; no torch build in cudabench's table carries it: a newer torch whose "
                                          "release notes list it, or a build from source with TORCH_CUDA_ARCH_LIST=\"" +
                                              std::to_string(major) + "." + std::to_string(minor) + "\""
                                        : "; the first torch build in cudabench's table that carries it is " + first +
                                              "; the builds that do: " + carry));
  }
}

// The dotted version at `p` ("570.153.02", "8.1"), "" when none.
std::string version_at(const std::string& t, std::size_t p) { return std::string(env::dotted_at(t, p)); }

// The versions after `a` and after `b` (where `b` follows `a` within 160 characters).
std::pair<std::string, std::string> two_versions(const std::string& t, const std::string& a, const std::string& b) {
  const auto p = t.find(a);
  if (p == std::string::npos) return {};
  const auto q = t.find(b, p + a.size());
  if (q == std::string::npos || q - p > 160) return {};
  return {version_at(t, p + a.size()), version_at(t, q + b.size())};
}

// The kernel module against the user-space driver, in the words the kernel
// log, nvidia-modeset and JAX use.
void module_versions(const std::string& t, Decoded& out) {
  for (const auto& [a, b, user_first] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"has the version ", "this kernel module has the version ", true},  // "the client ['gnome-shell'] has ..."
           {"kernel version ", "does not match dso version ", false}}) {
    const auto [x, y] = two_versions(t, a, b);
    if (x.empty() || y.empty()) continue;
    const std::string user = user_first ? x : y, module = user_first ? y : x;
    const bool older = Version::parse(module) < Version::parse(user);
    out.emplace_back("driver_module_mismatch",
                     "the user-space driver is " + user + " and the kernel module " + module + ": the module is " +
                         (older ? "older (the old one is loaded, or after a reboot the one on disk was not rebuilt or updated)"
                                : "newer (the user-space driver was not updated with it)"));
  }
  for (const char* modeset : {"nvidia-modeset(", "nvidia-modeset.ko("})
    if (const auto [x, y] = two_versions(t, "nvidia.ko(", modeset); !x.empty() && !y.empty())
      out.emplace_back("driver_module_mismatch", "the kernel modules nvidia.ko (" + x + ") and nvidia-modeset (" + y +
                                                     ") are from different drivers: a module on disk was not rebuilt");
  if (const auto p = t.find("nvml library version: "); p != std::string::npos)
    out.emplace_back("nvml_module_mismatch", "NVML (user space) is " + version_at(t, p + 22) +
                                                 ": the kernel module loaded is another version (modinfo -F version nvidia "
                                                 "shows the one on disk)");
}

// A container image's "unsatisfied condition: cuda>=11.8".
void container_cuda(const std::string& t, Decoded& out) {
  for (const char* key : {"unsatisfied condition: cuda>=", "unsatisfied condition: cuda >= "}) {
    const auto p = t.find(key);
    if (p == std::string::npos) continue;
    const Version v = Version::parse(version_at(t, p + std::string(key).size()));
    if (!v.known()) continue;
    const std::string need = min_driver_for_toolkit(v);
    out.emplace_back("container_driver_too_old",
                     "the image needs a driver for CUDA " + v.major_minor() + (need.empty() ? "" : " (>= " + need + ")") +
                         ": the host driver is older");
    return;
  }
}

// PTX ISA versions and the CUDA release that introduced each.
std::string cuda_of_ptx(const std::string& isa) {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"6.0", "9.0"},  {"6.1", "9.1"},  {"6.2", "9.2"},  {"6.3", "10.0"}, {"6.4", "10.1"}, {"6.5", "10.2"},
      {"7.0", "11.0"}, {"7.1", "11.1"}, {"7.2", "11.2"}, {"7.3", "11.3"}, {"7.4", "11.4"}, {"7.5", "11.5"},
      {"7.6", "11.6"}, {"7.7", "11.7"}, {"7.8", "11.8"}, {"8.0", "12.0"}, {"8.1", "12.1"}, {"8.2", "12.2"},
      {"8.3", "12.3"}, {"8.4", "12.4"}, {"8.5", "12.5"}, {"8.6", "12.7"}, {"8.7", "12.8"}, {"8.8", "12.9"},
      {"9.0", "13.0"}};
  for (const auto& [k, v] : table)
    if (k == isa) return v;
  return "";
}

// ptxas's "Unsupported .version 8.1; current version is '8.0'".
void ptx_isa(const std::string& t, Decoded& out) {
  const auto [code, driver] = two_versions(t, "unsupported .version ", "current version is '");
  if (code.empty() || driver.empty()) return;
  const std::string a = cuda_of_ptx(code), b = cuda_of_ptx(driver);
  out.emplace_back("ptx_too_new", "the code is PTX ISA " + code + (a.empty() ? "" : " (CUDA " + a + ")") +
                                      " and the driver reads up to " + driver + (b.empty() ? "" : " (CUDA " + b + ")") +
                                      ": the driver is older than the toolkit that built the code");
}

// The first CUDA release whose nvcc knows an architecture ("compute_86": 11.1).
std::string first_cuda_for(int arch) {
  static const std::vector<std::pair<int, std::string>> table = {
      {50, "6.0"}, {60, "8.0"}, {70, "9.0"}, {72, "10.0"}, {75, "10.0"}, {80, "11.0"}, {86, "11.1"}, {87, "11.4"},
      {89, "11.8"}, {90, "11.8"}, {100, "12.8"}, {101, "12.8"}, {103, "12.9"}, {110, "13.0"}, {120, "12.8"}, {121, "12.9"}};
  std::string best;
  for (const auto& [a, cuda] : table)
    if (a <= arch && arch - a < 10 && a / 10 == arch / 10) best = cuda;
  return best;
}

// What a toolkit that refuses architecture `arch` says: too old for it, or
// so new it dropped it (CUDA 12 dropped sm_35 and sm_37, CUDA 13 sm_50 to sm_72).
std::string refused_arch(int arch, const std::string& who) {
  const std::string first = first_cuda_for(arch);
  if (arch < 50) return "CUDA 12 and newer dropped it: build it with a CUDA 11 toolkit, or drop the architecture";
  if (arch <= 72)
    return "CUDA 13 dropped sm_50 to sm_72: with a CUDA 13 " + who + " use CUDA 12 (or drop the architecture); an older " +
           who + " needs CUDA " + first + " or newer";
  return "it needs " + who + " from CUDA " + (first.empty() ? "a release that knows it" : first + " or newer") +
         ": the toolkit in use is older, too old for this GPU";
}

// nvcc's "Unsupported gpu architecture 'compute_86'" and NVRTC's "-arch=compute_61".
void architecture(const std::string& t, Decoded& out) {
  for (const auto& [key, id] : std::vector<std::pair<std::string, std::string>>{
           {"unsupported gpu architecture 'compute_", "nvcc_arch_unsupported"},
           {"unsupported gpu architecture 'sm_", "nvcc_arch_unsupported"},
           {"value 'sm_", "nvcc_arch_unsupported"},
           {"-arch=compute_", "nvrtc_arch_unsupported"},
           {"-arch=sm_", "nvrtc_arch_unsupported"}}) {
    const auto p = t.find(key);
    if (p == std::string::npos) continue;
    const std::string d = digits_at(t, p + key.size());
    if (d.size() < 2 || d.size() > 3) continue;
    const int arch = std::stoi(d);
    const std::string prefix = key.substr(key.rfind('\'') == std::string::npos ? key.find('=') + 1 : key.rfind('\'') + 1);
    out.emplace_back(id, prefix + d + " (compute capability " + std::to_string(arch / 10) + "." + std::to_string(arch % 10) +
                             "): " + refused_arch(arch, id == "nvrtc_arch_unsupported" ? "NVRTC" : "nvcc"));
  }
}

// cuDNN's versions as PyTorch ("compiled against (8, 5, 0) but found runtime
// version (8, 4, 1)") and XLA ("Loaded runtime CuDNN library: 8.5.0 but source
// was compiled with: 8.6.0") print them.
void cudnn_versions(const std::string& t, Decoded& out) {
  auto tuple = [&](std::size_t p) {  // "(8, 5, 0)" -> "8.5.0", within 16 characters
    std::string v;
    for (const std::size_t end = std::min(t.size(), p + 16); p < end && t[p] != ')'; ++p)
      if (std::isdigit(static_cast<unsigned char>(t[p]))) v += t[p];
      else if (t[p] == ',') v += '.';
    return v;
  };
  std::string built, loaded;
  if (const auto p = t.find("compiled against ("); p != std::string::npos) {
    built = tuple(p + 18);
    for (const char* k : {"found runtime version (", "linked against ("})
      if (const auto q = t.find(k, p); q != std::string::npos && loaded.empty()) loaded = tuple(q + std::string(k).size());
  }
  if (const auto [l, b] = two_versions(t, "loaded runtime cudnn library: ", "compiled with: "); !l.empty()) loaded = l, built = b;
  if (const auto [l, b] = two_versions(t, "loaded runtime cudnn library: ", "compiled with "); !l.empty() && built.empty())
    loaded = l, built = b;  // TensorFlow 1.x: "7103 (compatibility version 7100) but source was compiled with 7005"
  if (built.empty() || loaded.empty()) return;
  for (std::string* v : {&built, &loaded}) {
    if (v->size() > 12 || v->find("..") != std::string::npos) return;
    if (v->find('.') == std::string::npos && v->size() >= 4 && v->size() <= 6) *v = library_version("cudnn", std::stoi(*v));
  }
  const bool older = Version::parse(loaded) < Version::parse(built);
  out.emplace_back("two_library_copies", "cuDNN " + loaded + " was loaded, " + (older ? "older than" : "another version from") +
                                             " the " + built + " the build was compiled against: another copy on the "
                                             "library path (LD_LIBRARY_PATH, a system or conda cuDNN) wins");
  out.emplace_back("two_library_copies", "fix: take the folder of cuDNN " + loaded + " out of LD_LIBRARY_PATH so that the "
                                         "build's own cuDNN loads, or install cuDNN " + built + (older ? " or newer" : "") +
                                         " in its place");
}

// ONNX Runtime's "Require cuDNN 9.* and CUDA 12.*".
void onnxruntime_needs(const std::string& t, Decoded& out) {
  const auto [cudnn, cuda] = two_versions(t, "require cudnn ", "and cuda ");
  if (!cudnn.empty() && !cuda.empty())
    out.emplace_back("onnxruntime_cuda_provider", "this onnxruntime-gpu build requires cuDNN " + cudnn + " and CUDA " + cuda +
                                                      ": the installed versions (or the ones on the library path) differ");
}

// The pip wheel that ships a CUDA library, for CUDA 11 and newer:
// libnvrtc of CUDA 11 is nvidia-cuda-nvrtc-cu11; cuDNN 9 for CUDA 12 is
// nvidia-cudnn-cu12. "" when there is none.
std::string wheel_of(const std::string& base, const std::string& cuda_major, const std::string& cudnn_major) {
  static const std::vector<std::pair<std::string, std::string>> wheels = {
      {"libcudart", "nvidia-cuda-runtime"}, {"libnvrtc", "nvidia-cuda-nvrtc"}, {"libcublas", "nvidia-cublas"},
      {"libcufft", "nvidia-cufft"},         {"libcurand", "nvidia-curand"},    {"libcusolver", "nvidia-cusolver"},
      {"libcusparse", "nvidia-cusparse"},   {"libnvjitlink", "nvidia-nvjitlink"}, {"libcudnn", "nvidia-cudnn"}};
  for (const auto& [lib, wheel] : wheels)
    if (base.rfind(lib, 0) == 0) {
      if (!cudnn_major.empty()) return std::atoi(cudnn_major.c_str()) >= 8 ? "\"" + wheel + "-cu12==" + cudnn_major + ".*\" (-cu11 for CUDA 11)" : "";
      return std::atoi(cuda_major.c_str()) >= 11 ? wheel + "-cu" + cuda_major : "";
    }
  return "";
}

// What a missing library's soname says: libcudart.so.10.1 is the CUDA 10.1
// runtime, libcublasLt.so.11 CUDA 11's cuBLAS (any 11.x: from CUDA 11 on a
// soname names the major only), libcudnn_ops_infer.so.8 cuDNN 8. Only
// CUDA's own libraries (those with a wheel): not libnvinfer, libnvidia-ml.
void library_versions(const std::string& t, Decoded& out) {
  for (const auto& name : libraries_named(t)) {
    const std::string base = name.substr(0, name.find(".so")), v = name.size() > base.size() + 4 ? name.substr(base.size() + 4) : "";
    const bool dnn = base.rfind("libcudnn", 0) == 0;
    const int major = std::atoi(v.substr(0, std::min<std::size_t>(v.find('.'), 3)).c_str());
    if (v.empty() || major <= 0 || wheel_of(base, "11", "").empty()) continue;
    const std::string what = dnn ? "cuDNN " + std::to_string(major)
                                 : "CUDA " + (major >= 11 ? std::to_string(major) + ".x" : v);
    const std::string said = name + " is " + what + "'s " + base.substr(3) + ": the program was built for " + what +
                             ", and that version is not installed (another one is) or not on the library path";
    const std::string wheel = dnn ? wheel_of(base, "", std::to_string(major)) : wheel_of(base, std::to_string(major), "");
    const std::string conda = dnn ? "" : major >= 12 ? ", conda's cuda-version=" + std::to_string(major) + " with its libraries"
                                       : ", conda's cudatoolkit=" + (major == 11 ? std::string("11.8") : v);
    const std::string fix = "fix: install " + what + "'s " + base.substr(3) + " (" +
                            (wheel.empty() ? "" : "pip install " + wheel + ", or ") + "the " + what +
                            (dnn ? " library" : " toolkit") + conda +
                            ") and put its folder on the library path (LD_LIBRARY_PATH), or use the program's build for the "
                            "CUDA you have";
    for (const char* id : {"library_not_found", "onnxruntime_cuda_provider"}) {
      out.emplace_back(id, said);
      out.emplace_back(id, fix);
    }
  }
}

// JAX's packages against each other.
void jax_skew(const std::string& t, Decoded& out) {
  if (const auto [lib, jax] = two_versions(t, "jaxlib version ", "incompatible with jax version "); !lib.empty())
    out.emplace_back("jax_version_skew", "jaxlib " + lib + " and jax " + jax + " are different releases");
  if (const auto [lib, need] = two_versions(t, "jaxlib is version ", "requires version "); !lib.empty())
    out.emplace_back("jax_version_skew", "jaxlib " + lib + " is older than the " + need + " this jax requires");
  if (t.find("built with a later version than the framework") != std::string::npos)
    out.emplace_back("jax_version_skew", "the CUDA plugin (jax-cuda12-plugin / jax-cuda12-pjrt) is newer than jax and jaxlib");
  if (const auto [plugin, lib] = two_versions(t, "_plugin version ", "jaxlib version "); !plugin.empty() && !lib.empty())
    out.emplace_back("jax_version_skew", "the CUDA plugin is " + plugin + " and jaxlib " + lib + ": a version mismatch");
}

}  // namespace

Decoded decode_message(const std::string& t) {
  Decoded out;
  for (auto* decode : {driver_number, jax_versions, torch_arch, module_versions, container_cuda, ptx_isa, architecture,
                       cudnn_versions, onnxruntime_needs, library_versions, jax_skew})
    decode(t, out);
  return out;
}

}  // namespace cudabench::doctor
