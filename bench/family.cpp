#include "family.h"

#include <algorithm>

namespace cudabench::bench {
namespace {
// Built on first use: families declare themselves from static initializers,
// in whatever order the linker runs them.
std::vector<Family>& families() {
  static std::vector<Family> all;
  return all;
}
}  // namespace

bool declare_family(const Family& family) {
  families().push_back(family);
  return true;
}

std::vector<Family> declared_families() {
  std::vector<Family> all = families();
  std::stable_sort(all.begin(), all.end(), [](const Family& a, const Family& b) { return a.order < b.order; });
  return all;
}

std::string register_families(const RunOptions& run, const Usable& usable) {
  for (const Family& f : declared_families()) {
    if (f.needs == Needs::Gpu && !usable.gpu) continue;
    if (std::string bad = f.add(run, usable); !bad.empty()) return bad;
  }
  return "";
}

std::string rows_filter(const std::string& kind) {
  const bool cpu = kind == "gate" || kind == "gate-cpu", gpu = kind == "gate" || kind == "gate-gpu";
  std::string out;
  auto add = [&out](const char* rows) {
    if (*rows) out += (out.empty() ? "" : "|") + std::string(rows);
  };
  for (const Family& f : declared_families()) {
    if (kind == "default") add(f.rows.default_rows);
    if (cpu) add(f.rows.gate_cpu);
    if (gpu) add(f.rows.gate_gpu);
  }
  return out.empty() ? "" : "^(" + out + ")";
}

}  // namespace cudabench::bench
