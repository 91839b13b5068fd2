#include "files.h"

#include <algorithm>
#include <sstream>

namespace cudabench::env {
namespace fs = std::filesystem;

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::string canonical_str(const fs::path& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

std::vector<fs::path> list_dir(const fs::path& d, std::size_t limit) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end && out.size() < limit; it.increment(ec))
    out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, sep);)
    if (!p.empty()) out.push_back(p);
  return out;
}

}  // namespace cudabench::env
