#include "idx_reader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifdef CUDABENCH_HAVE_ZLIB
#include <zlib.h>
#endif

namespace fs = std::filesystem;

namespace cudabench::data {
namespace {

std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
         (std::uint32_t{b[at + 2]} << 8) | std::uint32_t{b[at + 3]};
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw IdxError(name + ": " + what);
}

}  // namespace

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, "cannot open (missing or unreadable)");
  std::vector<std::uint8_t> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
#ifdef CUDABENCH_HAVE_ZLIB
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) bad(path, "zlib init failed");
    std::vector<std::uint8_t> out;
    out.resize(raw.size() * 4 + 1024);
    z.next_in = raw.data();
    z.avail_in = static_cast<uInt>(raw.size());
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (z.total_out == out.size()) out.resize(out.size() * 2);
      z.next_out = out.data() + z.total_out;
      z.avail_out = static_cast<uInt>(out.size() - z.total_out);
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_BUF_ERROR && z.avail_in == 0) {
        inflateEnd(&z);
        bad(path, "truncated gzip data");
      }
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        inflateEnd(&z);
        bad(path, std::string("corrupt gzip data (") + (z.msg ? z.msg : "zlib error") + ")");
      }
    }
    out.resize(z.total_out);
    inflateEnd(&z);
    return out;
#else
    bad(path, "gzip-compressed, and this build has no zlib: gunzip it first");
#endif
  }
  return raw;
}

IdxImages parse_idx_images(const std::vector<std::uint8_t>& b, const std::string& name) {
  if (b.size() >= 4 && be32(b, 0) != 0x00000803)
    bad(name, "bad magic " + hex(be32(b, 0)) + " (expected 0x00000803): not an IDX image file" +
                  (be32(b, 0) == 0x00000801 ? " (this is a label file)" : ""));
  if (b.size() < 16) bad(name, "too short for an IDX image header (" + std::to_string(b.size()) + " bytes, need 16)");
  IdxImages img;
  img.count = be32(b, 4);
  img.rows = be32(b, 8);
  img.cols = be32(b, 12);
  if (img.rows <= 0 || img.cols <= 0 || img.rows > 4096 || img.cols > 4096)
    bad(name, "implausible image size " + std::to_string(img.rows) + "x" + std::to_string(img.cols));
  const std::uint64_t want = 16 + static_cast<std::uint64_t>(img.count) * img.rows * img.cols;
  if (b.size() != want)
    bad(name, std::string(b.size() < want ? "truncated" : "longer than its header says") + ": header says " +
                  std::to_string(img.count) + " images of " + std::to_string(img.rows) + "x" +
                  std::to_string(img.cols) + " = " + std::to_string(want) + " bytes, file has " +
                  std::to_string(b.size()));
  img.pixels.assign(b.begin() + 16, b.end());
  return img;
}

IdxLabels parse_idx_labels(const std::vector<std::uint8_t>& b, const std::string& name, int num_classes) {
  if (b.size() >= 4 && be32(b, 0) != 0x00000801)
    bad(name, "bad magic " + hex(be32(b, 0)) + " (expected 0x00000801): not an IDX label file" +
                  (be32(b, 0) == 0x00000803 ? " (this is an image file)" : ""));
  if (b.size() < 8) bad(name, "too short for an IDX label header (" + std::to_string(b.size()) + " bytes, need 8)");
  IdxLabels l;
  l.count = be32(b, 4);
  const std::uint64_t want = 8 + static_cast<std::uint64_t>(l.count);
  if (b.size() != want)
    bad(name, std::string(b.size() < want ? "truncated" : "longer than its header says") + ": header says " +
                  std::to_string(l.count) + " labels = " + std::to_string(want) + " bytes, file has " +
                  std::to_string(b.size()));
  l.labels.assign(b.begin() + 8, b.end());
  for (std::size_t i = 0; i < l.labels.size(); ++i)
    if (l.labels[i] >= num_classes)
      bad(name, "label " + std::to_string(l.labels[i]) + " at index " + std::to_string(i) +
                    " is out of range 0.." + std::to_string(num_classes - 1));
  return l;
}

IdxImages read_idx_images(const std::string& path) { return parse_idx_images(read_file_bytes(path), path); }
IdxLabels read_idx_labels(const std::string& path, int num_classes) {
  return parse_idx_labels(read_file_bytes(path), path, num_classes);
}

namespace {
std::string pick(const fs::path& dir, const std::string& base) {
  for (const std::string& suffix : {"", ".gz"}) {
    const fs::path p = dir / (base + suffix);
    if (fs::exists(p)) return p.string();
  }
  return "";
}
}  // namespace

MnistSplit load_mnist_split(const std::string& dir, const std::string& prefix) {
  const std::string ib = prefix + "-images-idx3-ubyte", lb = prefix + "-labels-idx1-ubyte";
  const std::string ip = pick(dir, ib), lp = pick(dir, lb);
  if (ip.empty()) bad((fs::path(dir) / ib).string(), "missing (nor .gz)");
  if (lp.empty()) bad((fs::path(dir) / lb).string(), "missing (nor .gz)");
  MnistSplit s{read_idx_images(ip), read_idx_labels(lp)};
  if (s.images.count != s.labels.count)
    bad(dir, ip + " has " + std::to_string(s.images.count) + " images but " + lp + " has " +
                 std::to_string(s.labels.count) + " labels");
  return s;
}

std::string find_dataset_dir(const std::string& flag_dir) {
  std::vector<std::pair<std::string, std::string>> tried;
  auto has = [](const std::string& d) {
    return !pick(d, "train-images-idx3-ubyte").empty() && !pick(d, "t10k-images-idx3-ubyte").empty();
  };
  if (!flag_dir.empty()) {
    if (has(flag_dir)) return flag_dir;
    throw IdxError(flag_dir + ": no MNIST-format IDX files (train-images-idx3-ubyte[.gz], "
                              "t10k-images-idx3-ubyte[.gz], and their label files)");
  }
  if (const char* e = std::getenv("CUDABENCH_DATA_DIR"); e && *e) {
    if (has(e)) return e;
    tried.emplace_back(e, "$CUDABENCH_DATA_DIR");
  }
  if (has(kDebianFashionMnist)) return kDebianFashionMnist;
  tried.emplace_back(kDebianFashionMnist, "Debian's dataset-fashion-mnist");
  std::string msg = "no dataset found; looked in:";
  for (const auto& [d, why] : tried) msg += " " + d + " (" + why + ");";
  msg += " install it with scripts/setup.sh (apt-get install dataset-fashion-mnist) or pass --data-dir";
  throw IdxError(msg);
}

}  // namespace cudabench::data
