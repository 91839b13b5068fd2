// What the numbers in a pasted message mean (explain.h's decode_message):
// the version codes CUDA's libraries report ("found version 11040", JAX's
// "Found cuDNN version 8600, but JAX was built against version 8800") and
// the architecture a torch build lacks ("sm_120 is not compatible"), each
// turned into words for the scenario it belongs to.
#include <algorithm>
#include <cctype>

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

}  // namespace

Decoded decode_message(const std::string& t) {
  Decoded out;
  driver_number(t, out);
  jax_versions(t, out);
  torch_arch(t, out);
  return out;
}

}  // namespace cudabench::doctor
