// Output files are written whole or not at all: a temporary file beside the
// target, then rename(2), which replaces the target in one step.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace cudabench::data {

inline bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!(f << text) || !f.flush()) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace cudabench::data
