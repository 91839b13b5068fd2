// The machine the fake libcuda.so.1 and libnvidia-ml.so.1 describe: a JSON
// file named by $CUDABENCH_FAKE_GPU (tests/fixtures/gpus/*.json), read
// again whenever its content changes, so one test process can switch
// machines between calls. A value given as an array is a sequence: each
// read returns the next element and the last one repeats (clocks, power and
// throttle reasons that change while a benchmark runs). A field that is
// absent is "not supported".
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace fake {

class Machine {
 public:
  // The current description ({} when the variable or the file is missing).
  static Machine& get() {
    static Machine m;
    std::lock_guard<std::mutex> lock(m.mu_);
    m.reload();
    return m;
  }
  const nlohmann::json& json() const { return j_; }
  int gpu_count() const { return j_.contains("gpus") ? static_cast<int>(j_["gpus"].size()) : 0; }
  const nlohmann::json* gpu(int i) const {
    return i >= 0 && i < gpu_count() ? &j_["gpus"][static_cast<std::size_t>(i)] : nullptr;
  }
  // The value at `path` ("nvml/power_usage_mw") under `node`, stepping
  // through a sequence with a counter per (key, device). Null when absent.
  nlohmann::json read(const nlohmann::json& node, const std::string& path, const std::string& key) {
    const nlohmann::json* v = &node;
    std::stringstream ss(path);
    std::string part;
    while (std::getline(ss, part, '/')) {
      if (!v->is_object() || !v->contains(part)) return nullptr;
      v = &(*v)[part];
    }
    if (!v->is_array()) return *v;
    if (v->empty()) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t& k = steps_[key];
    const nlohmann::json out = (*v)[std::min(k, v->size() - 1)];
    ++k;
    return out;
  }

 private:
  void reload() {
    const char* path = std::getenv("CUDABENCH_FAKE_GPU");
    std::string text;
    if (path) {
      std::ifstream f(path);
      std::ostringstream o;
      o << f.rdbuf();
      text = o.str();
    }
    if (text == text_ && loaded_) return;
    loaded_ = true;
    text_ = text;
    steps_.clear();
    j_ = text.empty() ? nlohmann::json::object() : nlohmann::json::parse(text, nullptr, false);
    if (j_.is_discarded()) j_ = nlohmann::json::object();
  }
  std::mutex mu_;
  bool loaded_ = false;
  std::string text_;
  nlohmann::json j_ = nlohmann::json::object();
  std::map<std::string, std::size_t> steps_;
};

// "0000:19:00.0" and "00000000:19:00.0" name the same device.
inline std::string normalize_bus_id(const std::string& id) {
  const auto colon = id.find(':');
  if (colon == std::string::npos) return id;
  unsigned long domain = std::strtoul(id.substr(0, colon).c_str(), nullptr, 16);
  std::string rest = id.substr(colon);
  for (auto& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::to_string(domain) + rest;
}

inline void copy_string(const std::string& s, char* out, unsigned len) {
  if (!len) return;
  std::size_t n = std::min<std::size_t>(s.size(), len - 1);
  s.copy(out, n);
  out[n] = 0;
}

}  // namespace fake
