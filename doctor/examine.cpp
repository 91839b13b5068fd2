#include <filesystem>

#include "doctor.h"
#include "env/probe.h"
#include "fatbin.h"
#include "rules.h"

namespace cudabench::doctor {

const env::Report& examine() {
  static const env::Report report = [] {
    env::Report r = env::collect();
    if (r.runtime.compiled_in) {
      std::error_code ec;
      const auto exe = std::filesystem::canonical("/proc/self/exe", ec);
      r.binary_fatbin = read_fatbin_archs(ec ? "/proc/self/exe" : exe.string());
    }
    for (const auto& l : r.loaded)
      if (l.name == "libtorch_cuda.so") r.torch_fatbin = read_fatbin_archs(l.path);
    r.verdicts = evaluate(r);
    return r;
  }();
  return report;
}

}  // namespace cudabench::doctor
