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

// The dotted number at `p` ("535.104.05"), at most 24 characters; "" when none.
std::string number_at(const std::string& t, std::size_t p) {
  std::string n(env::dotted_at(t, p).substr(0, 24));
  while (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

// A small whole number (at most 7 digits), -1 when `n` is not one.
int small_number(const std::string& n) {
  const bool digits = !n.empty() && n.size() <= 7 && std::all_of(n.begin(), n.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  return digits ? std::stoi(n) : -1;
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
      {"gb200", 10, 0},       {"b200", 10, 0},        {"gh200", 9, 0},        {"h200", 9, 0},
      {"h100", 9, 0},         {"h800", 9, 0},         {"l40s", 8, 9},         {"l40", 8, 9},
      {"l4", 8, 9},           {"rtx 6000 ada", 8, 9}, {"rtx 5000 ada", 8, 9}, {"rtx 4000 ada", 8, 9},
      {"rtx 2000 ada", 8, 9}, {"quadro rtx", 7, 5},   {"rtx 8000", 7, 5},     {"rtx 6000", 7, 5},
      {"rtx 5000", 7, 5},     {"rtx 4000", 7, 5},     {"a100", 8, 0},         {"a800", 8, 0},
      {"a30", 8, 0},          {"a6000", 8, 6},        {"a5000", 8, 6},        {"a4000", 8, 6},
      {"a40", 8, 6},          {"a10g", 8, 6},         {"a10", 8, 6},          {"a2", 8, 6},
      {"rtx 50", 12, 0},      {"rtx 40", 8, 9},       {"rtx 30", 8, 6},       {"rtx 20", 7, 5},
      {"gtx 16", 7, 5},       {"titan rtx", 7, 5},    {"t4", 7, 5},           {"titan v", 7, 0},
      {"v100", 7, 0},         {"p100", 6, 0},         {"p40", 6, 1},          {"p4", 6, 1},
      {"gtx 10", 6, 1},       {"titan x", 6, 1},      {"m40", 5, 2},          {"m60", 5, 2},
      {"gtx 9", 5, 2},        {"k80", 3, 7},          {"k40", 3, 5},          {"jetson orin", 8, 7},
      {"xavier", 7, 2},       {"jetson nano", 5, 3},
  };
  return all;
}

bool word_start(const std::string& t, std::size_t p) {
  return p == 0 || !std::isalnum(static_cast<unsigned char>(t[p - 1]));
}

// "NVIDIA GeForce RTX 3070 Laptop GPU", "Tesla V100-SXM2-32GB", "sm_120".
// The table's most specific names first; a stretch of text names one GPU.
void gpus_in(const std::string& t, PasteFacts& f) {
  std::vector<std::pair<std::size_t, std::size_t>> taken;
  for (const auto& g : gpu_names()) {
    const std::string n = g.name;
    // A series ("rtx 30") goes on with exactly two digits: "rtx 3070", not "rtx 3000".
    const bool series = std::isdigit(static_cast<unsigned char>(n.back())) && n.find(' ') != std::string::npos && n.size() <= 6;
    for (auto p = t.find(n); p != std::string::npos; p = t.find(n, p + 1)) {
      std::size_t e = p + n.size();
      if (series) {
        if (e + 2 > t.size() || !std::isdigit(static_cast<unsigned char>(t[e])) || !std::isdigit(static_cast<unsigned char>(t[e + 1])))
          continue;
        e += 2;
      }
      const bool ends = e >= t.size() || !std::isalnum(static_cast<unsigned char>(t[e]));
      const bool overlaps = std::any_of(taken.begin(), taken.end(), [&](const auto& r) { return p < r.second && r.first < e; });
      if (!word_start(t, p) || !ends || overlaps) continue;
      std::size_t w = e;
      while (w < t.size() && (std::isalnum(static_cast<unsigned char>(t[w])) || t[w] == '-')) ++w;
      taken.emplace_back(p, w);
      const std::string shown = t.substr(p, w - p);
      if (std::none_of(f.gpus.begin(), f.gpus.end(), [&](const PasteGpu& x) { return x.name == shown; }))
        f.gpus.push_back({shown, g.major, g.minor});
    }
  }
  if (const int sm = small_number(after(t, {"capability sm_"})); f.gpus.empty() && sm >= 10 && sm < 1000)
    f.gpus.push_back({"sm_" + std::to_string(sm), sm / 10, sm % 10});
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
  // A driver version has dots and a major of 200 or more: not "CUDA Driver
  // Version : 12020" (CuPy's CUDA number), not "nvidia-smi 8.0".
  f.driver = after(t, {"driver version: ", "driver version : ", "kernel module ", "this kernel module has the version ",
                       "nvidia-smi "});
  if (const Version v = Version::parse(f.driver); f.driver.find('.') == std::string::npos || v.major < 200 || v.major > 9999)
    f.driver.clear();
  if (const Version c = Version::parse(after(t, {"cuda version: ", "cuda version : "})); c.known() && c.major < 100)
    f.driver_cuda = c.major * 1000 + c.minor * 10;
  if (const int n = small_number(after(t, {"too old (found version "})); n >= 1000) f.driver_cuda = n;
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
