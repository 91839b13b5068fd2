// What a pasted error shows of the machine it came from (explain.h's
// read_facts): the driver (nvidia-smi's header, the kernel module's
// version, PyTorch's "found version 11040"), the CUDA it supports, the
// GPUs it names and their compute capability, and the package the paste is
// about. The answer says these first, fits its fix to them, and compares
// them with this machine's before offering this machine's state as a cause.
#include <algorithm>
#include <cctype>

#include "env/parsers.h"
#include "explain.h"
#include "rules.h"

namespace cudabench::doctor {
using env::join;
using env::Version;
namespace {

// The dotted number at `p` ("535.104.05"), "" when none.
std::string number_at(const std::string& t, std::size_t p) {
  std::size_t e = p;
  while (e < t.size() && (std::isdigit(static_cast<unsigned char>(t[e])) || t[e] == '.')) ++e;
  while (e > p && t[e - 1] == '.') --e;
  return t.substr(p, e - p);
}

// The number after the first of `keys` in `t`.
std::string after(const std::string& t, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    for (auto p = t.find(k); p != std::string::npos; p = t.find(k, p + 1))
      if (std::string n = number_at(t, p + std::string(k).size()); !n.empty()) return n;
  return "";
}

// GPU names as users' pastes spell them (lower case, without "nvidia"/
// "geforce"), most specific first, and their compute capability.
struct GpuName {
  const char* name;
  int major, minor;
};
const std::vector<GpuName>& gpu_names() {
  static const std::vector<GpuName> all = {
      {"gb200", 10, 0}, {"b200", 10, 0},    {"gh200", 9, 0},     {"h200", 9, 0},     {"h100", 9, 0},
      {"h800", 9, 0},   {"l40s", 8, 9},     {"l40", 8, 9},       {"l4", 8, 9},       {"rtx 6000 ada", 8, 9},
      {"a100", 8, 0},   {"a800", 8, 0},     {"a30", 8, 0},       {"a6000", 8, 6},    {"a5000", 8, 6},
      {"a4000", 8, 6},  {"a40", 8, 6},      {"a10g", 8, 6},      {"a10", 8, 6},      {"a2", 8, 6},
      {"rtx 50", 12, 0}, {"rtx 40", 8, 9},  {"rtx 30", 8, 6},    {"rtx 20", 7, 5},   {"gtx 16", 7, 5},
      {"titan rtx", 7, 5}, {"quadro rtx", 7, 5}, {"t4", 7, 5},   {"titan v", 7, 0},  {"v100", 7, 0},
      {"p100", 6, 0},   {"p40", 6, 1},      {"p4", 6, 1},        {"gtx 10", 6, 1},   {"titan x", 6, 1},
      {"m40", 5, 2},    {"m60", 5, 2},      {"gtx 9", 5, 2},     {"k80", 3, 7},      {"k40", 3, 5},
      {"gtx 7", 3, 0},  {"jetson orin", 8, 7}, {"orin", 8, 7},   {"xavier", 7, 2},   {"jetson nano", 5, 3},
  };
  return all;
}

bool word_start(const std::string& t, std::size_t p) {
  return p == 0 || !std::isalnum(static_cast<unsigned char>(t[p - 1]));
}

// "NVIDIA GeForce RTX 3070 Laptop GPU", "Tesla V100-SXM2-32GB", "sm_120".
void gpus_in(const std::string& t, PasteFacts& f) {
  for (const auto& g : gpu_names()) {
    const std::string n = g.name;
    for (auto p = t.find(n); p != std::string::npos; p = t.find(n, p + 1)) {
      const std::size_t e = p + n.size();
      // "rtx 30" must go on with digits ("rtx 3070"); "a10" must not ("a100").
      const bool series = std::isdigit(static_cast<unsigned char>(n.back())) && n.find(' ') != std::string::npos;
      const bool ends = e >= t.size() || !std::isalnum(static_cast<unsigned char>(t[e])) ||
                        (series && std::isdigit(static_cast<unsigned char>(t[e])));
      if (!word_start(t, p) || !ends) continue;
      std::size_t w = e;
      while (w < t.size() && (std::isalnum(static_cast<unsigned char>(t[w])) || t[w] == '-')) ++w;
      const std::string shown = t.substr(p, w - p);
      if (std::none_of(f.gpus.begin(), f.gpus.end(), [&](const PasteGpu& x) { return x.name == shown; }))
        f.gpus.push_back({shown, g.major, g.minor});
      break;
    }
  }
  for (const char* key : {"capability sm_", "cuda capability sm_"})
    if (const std::string sm = after(t, {key}); sm.size() >= 2 && sm.size() <= 3 && f.gpus.empty())
      f.gpus.push_back({"sm_" + sm, std::stoi(sm) / 10, std::stoi(sm) % 10});
}

// The package the paste is about: the most specific one it names.
std::string package_in(const std::string& t) {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> signs = {
      {"onnxruntime", {"onnxruntime", "cudaexecutionprovider"}},
      {"cupy", {"cupy"}},
      {"numba", {"numba"}},
      {"jax", {"jaxlib", "jax_plugins", "jax-cuda", "jax_cuda", "jax.", "backend 'cuda'", "jax "}},
      {"tensorflow", {"tensorflow", "tf-trt"}},
      {"torch", {"torch", "pytorch"}},
  };
  for (const auto& [package, words] : signs)
    for (const char* w : words)
      if (t.find(w) != std::string::npos) return package;
  return "";
}

}  // namespace

PasteFacts read_facts(const std::string& t) {
  PasteFacts f;
  f.driver = after(t, {"driver version: ", "driver version : ", "kernel module  ", "kernel module ",
                       "this kernel module has the version ", "nvidia-smi "});
  if (Version::parse(f.driver).major < 200) f.driver.clear();  // "nvidia-smi 8.0" is not a driver
  if (const std::string c = after(t, {"cuda version: ", "cuda version : "}); Version::parse(c).known())
    f.driver_cuda = Version::parse(c).major * 1000 + Version::parse(c).minor * 10;
  if (const std::string n = after(t, {"too old (found version "}); n.size() >= 4 && n.find('.') == std::string::npos)
    f.driver_cuda = std::stoi(n);
  if (f.driver_cuda == 0 && !f.driver.empty()) f.driver_cuda = driver_cuda_of(Version::parse(f.driver));
  gpus_in(t, f);
  f.package = package_in(t);
  return f;
}

std::string facts_text(const PasteFacts& f) {
  std::vector<std::string> parts;
  if (!f.driver.empty() || f.driver_cuda)
    parts.push_back((f.driver.empty() ? "a driver" : "driver " + f.driver) +
                    (f.driver_cuda ? " (CUDA " + Version::from_cuda_int(f.driver_cuda).major_minor() + ")" : ""));
  for (const auto& g : f.gpus)
    parts.push_back("GPU " + g.name + " (compute capability " + std::to_string(g.major) + "." + std::to_string(g.minor) + ")");
  if (!f.package.empty()) parts.push_back("the package " + f.package);
  if (!f.libraries.empty()) parts.push_back("the library " + join(f.libraries, ", "));
  return join(parts, "; ");
}

}  // namespace cudabench::doctor
