// Writes small MNIST-format IDX files (and damaged ones) for the tests.
#pragma once

#ifdef CUDABENCH_HAVE_ZLIB
#include <zlib.h>
#endif

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace cudabench::testing {

inline void put_be32(std::vector<std::uint8_t>& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

inline std::vector<std::uint8_t> idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                                            std::uint32_t magic = 0x803) {
  std::vector<std::uint8_t> b;
  put_be32(b, magic);
  put_be32(b, count);
  put_be32(b, rows);
  put_be32(b, cols);
  for (std::uint32_t i = 0; i < count * rows * cols; ++i) b.push_back(static_cast<std::uint8_t>((i * 37) & 0xff));
  return b;
}

inline std::vector<std::uint8_t> idx_labels(std::uint32_t count, std::uint32_t magic = 0x801) {
  std::vector<std::uint8_t> b;
  put_be32(b, magic);
  put_be32(b, count);
  for (std::uint32_t i = 0; i < count; ++i) b.push_back(static_cast<std::uint8_t>(i % 10));
  return b;
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                           static_cast<std::streamsize>(b.size()));
}

#ifdef CUDABENCH_HAVE_ZLIB
inline void write_gz(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  std::filesystem::create_directories(p.parent_path());
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
}
#else
// Without zlib: write plain bytes under the .gz name is wrong, so tests that
// need gzip skip themselves (see CUDABENCH_HAVE_ZLIB in the tests).
inline void write_gz(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  write_bytes(p.parent_path() / p.stem(), b);
}
#endif

}  // namespace cudabench::testing
