#include <cctype>
#include <cstdio>

#include "env_types.h"

namespace cudabench::env {

Version Version::parse(std::string_view s) {
  Version v;
  std::size_t i = 0;
  while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (s[i] != 'V' && s[i] != 'v' && s[i] != ' ') return v;
    ++i;
  }
  int* fields[] = {&v.major, &v.minor, &v.patch, &v.build};
  int k = 0;
  while (k < 4 && i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    long x = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      x = x * 10 + (s[i] - '0');
      if (x > 1000000000) return Version{};
      ++i;
    }
    *fields[k++] = static_cast<int>(x);
    if (i < s.size() && s[i] == '.' && i + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])))
      ++i;
    else
      break;
  }
  v.parts = k;
  return v;
}

Version Version::from_cuda_int(int x) {
  Version v;
  if (x <= 0) return v;
  v.major = x / 1000;
  v.minor = (x % 1000) / 10;
  v.parts = 2;
  return v;
}

std::string Version::str() const {
  if (!known()) return "unknown";
  std::string s = std::to_string(major);
  const int n = parts > 0 ? parts : 2;
  if (n >= 2) s += "." + std::to_string(minor);
  if (n >= 3) s += "." + std::to_string(patch);
  if (n >= 4) s += "." + std::to_string(build);
  return s;
}

std::string Version::major_minor() const {
  if (!known()) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

int Version::compare(const Version& o) const {
  const int a[] = {major, minor, patch, build};
  const int b[] = {o.major, o.minor, o.patch, o.build};
  for (int i = 0; i < 4; ++i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

const char* level_name(Verdict::Level l) {
  switch (l) {
    case Verdict::Level::Ok: return "ok";
    case Verdict::Level::Info: return "info";
    case Verdict::Level::Warning: return "warning";
    case Verdict::Level::Error: return "error";
  }
  return "?";
}

std::string ToolkitInstall::summary() const {
  if (has_nvcc && has_runtime) return "compiler + runtime libraries";
  if (has_nvcc) return "compiler only";
  if (has_runtime) return "runtime libraries only (no nvcc)";
  return "headers only";
}

}  // namespace cudabench::env
