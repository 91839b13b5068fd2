// libFuzzer target: every text parser of the environment probe
// (env/parsers.h). The first byte picks the parser, the rest is the text:
// version.json, version.txt, a wheel's dist-info name, a conda-meta record
// name, cuda_runtime_api.h, /proc/driver/nvidia/version, `nvcc --version`,
// a library's versioned file name, Version::parse itself, and what the
// Python scan reads (a version.py assignment, a build_info.py dict entry, a
// dist-info folder name, a METADATA file's requirements). Each must
// return a version or nothing for any bytes: never throw, crash or read out
// of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "env/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudabench::env;
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  Version v;
  std::string s;
  switch (data[0] % 13) {
    case 0: v = parse_version_json(text); break;
    case 1: v = parse_version_txt(text); break;
    case 2: v = parse_wheel_dist_info(text); break;
    case 3: v = parse_conda_meta_name(text); break;
    case 4: v = parse_cudart_header(text); break;
    case 5: s = parse_proc_driver_version(text); break;
    case 6: v = parse_nvcc_version(text); break;
    case 7: s = version_from_soname(text); break;
    case 8: v = Version::parse(text); break;
    case 9: s = python_string_assignment(text, "__version__").value_or(""); break;
    case 10: s = python_dict_entry(text, "cuda_version").value_or(""); break;
    case 11: s = dist_info_name_version(text).second; break;
    case 12:
      for (const auto& r : metadata_requires(text))
        if (r.size() > size) __builtin_trap();
      break;
  }
  // What callers do with the answer must hold too.
  (void)v.str();
  (void)v.major_minor();
  (void)v.compare(Version::parse("13.0"));
  if (!s.empty() && s.size() > size) __builtin_trap();  // an answer is a part of the text
  return 0;
}
