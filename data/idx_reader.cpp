#include "idx_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "common/atomic_file.h"  // same_file
#include "common/cli.h"          // folder_problem

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

std::optional<std::uint64_t> idx_implied_size(const std::uint8_t* b, std::size_t n) {
  if (n < 4 || b[0] != 0 || b[1] != 0) return std::nullopt;
  std::uint64_t elem = 0;
  switch (b[2]) {
    case 0x08: case 0x09: elem = 1; break;  // unsigned, signed byte
    case 0x0B: elem = 2; break;             // short
    case 0x0C: case 0x0D: elem = 4; break;  // int, float
    case 0x0E: elem = 8; break;             // double
    default: return std::nullopt;
  }
  const unsigned dims = b[3];
  if (dims < 1 || dims > 4) return std::nullopt;
  const std::size_t header = 4 + 4 * std::size_t{dims};
  if (n < header) return std::nullopt;
  std::uint64_t size = elem;
  for (unsigned d = 0; d < dims; ++d) {
    const std::uint64_t extent = (std::uint64_t{b[4 + 4 * d]} << 24) | (std::uint64_t{b[5 + 4 * d]} << 16) |
                                 (std::uint64_t{b[6 + 4 * d]} << 8) | std::uint64_t{b[7 + 4 * d]};
    if (extent != 0 && size > (kMaxIdxBytes + 1) / extent) return kMaxIdxBytes + 1;  // beyond the cap
    size *= extent;
  }
  return header + size;
}

namespace {

std::string size_text(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  return buf;
}

#ifdef CUDABENCH_HAVE_ZLIB
// Inflates gzip data, and stops as soon as the output passes the size its
// IDX header implies: a small file cannot inflate into gigabytes. Output
// that is not IDX at all stops after its first bytes; the parser then
// names what is wrong with them.
std::vector<std::uint8_t> gunzip_idx(const std::vector<std::uint8_t>& raw, const std::string& name) {
  if (raw.size() > std::numeric_limits<uInt>::max()) bad(name, "gzip file too large (" + size_text(raw.size()) + ")");
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) bad(name, "zlib init failed");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::vector<std::uint8_t> out(64);  // enough for any IDX header first
  std::optional<std::uint64_t> limit;
  std::uint64_t have = 0;  // over every member (inflateReset zeroes total_out)
  z.next_in = const_cast<std::uint8_t*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  for (;;) {
    z.next_out = out.data() + have;
    z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(out.size() - have, std::numeric_limits<uInt>::max()));
    const uInt room = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
      bad(name, std::string("corrupt gzip data (") + (z.msg ? z.msg : "zlib error") + ")");
    have += room - z.avail_out;
    const bool done = rc == Z_STREAM_END && z.avail_in == 0;
    if (!limit) {
      limit = idx_implied_size(out.data(), have);
      if (!limit && (have >= 20 || done || (have >= 4 && (out[0] != 0 || out[1] != 0)))) {
        out.resize(have);  // not an IDX header: the parser says what is wrong
        return out;
      }
      if (limit && *limit > kMaxIdxBytes)
        bad(name, "its header implies more than " + size_text(kMaxIdxBytes) + ": not an MNIST-format file");
    }
    if (limit && have > *limit)
      bad(name, "gzip data inflates beyond the " + size_text(*limit) + " its IDX header implies");
    if (done) break;
    // A file may hold several members (pigz, `cat a.gz b.gz`): gzip reads on.
    if (rc == Z_STREAM_END && inflateReset(&z) != Z_OK) bad(name, "zlib reset failed");
    if (rc == Z_BUF_ERROR && z.avail_in == 0) bad(name, "truncated gzip data");
    if (have == out.size()) {
      // Grow toward the implied size (one byte past it shows an overrun).
      std::uint64_t next = std::max<std::uint64_t>(out.size() * 2, 1 << 16);
      if (limit) next = std::min<std::uint64_t>(next, *limit + 1);
      if (next <= out.size()) next = out.size() + 1;
      out.resize(next);
    }
  }
  out.resize(have);
  return out;
}
#endif

}  // namespace

std::vector<std::uint8_t> decode_idx_bytes(std::vector<std::uint8_t> raw, const std::string& name) {
  if (raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
#ifdef CUDABENCH_HAVE_ZLIB
    return gunzip_idx(raw, name);
#else
    bad(name, "gzip-compressed, and this build has no zlib: gunzip it first");
#endif
  }
  return raw;
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  // Non-blocking: a FIFO in a file's place must not hang the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) bad(path, std::string("cannot open: ") + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) bad(path, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) bad(path, "is a directory, not an IDX file");
  if (!S_ISREG(st.st_mode)) bad(path, "is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxIdxBytes)
    bad(path, "is " + size_text(st.st_size) + ", more than the " + size_text(kMaxIdxBytes) + " this reader takes");
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < raw.size()) {
    const ssize_t n = ::read(fd, raw.data() + done, raw.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) bad(path, std::string("read failed: ") + std::strerror(errno));
    if (n == 0) break;  // shrank while reading
    done += static_cast<std::size_t>(n);
  }
  raw.resize(done);
  return decode_idx_bytes(std::move(raw), path);
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
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}
}  // namespace

MnistSplit load_mnist_split(const std::string& dir, const std::string& prefix) {
  const std::string ib = prefix + "-images-idx3-ubyte", lb = prefix + "-labels-idx1-ubyte";
  const std::string ip = pick(dir, ib), lp = pick(dir, lb);
  if (ip.empty()) bad((fs::path(dir) / ib).string(), "missing (nor .gz)");
  if (lp.empty()) bad((fs::path(dir) / lb).string(), "missing (nor .gz)");
  MnistSplit s{read_idx_images(ip), read_idx_labels(lp), ip, lp};
  if (s.images.rows != kMnistSide || s.images.cols != kMnistSide)
    bad(ip, "images are " + std::to_string(s.images.rows) + "x" + std::to_string(s.images.cols) +
                "; MNIST-format data is " + std::to_string(kMnistSide) + "x" + std::to_string(kMnistSide));
  if (s.images.count == 0) bad(ip, "holds no images");
  if (s.images.count != s.labels.count)
    bad(dir, ip + " has " + std::to_string(s.images.count) + " images but " + lp + " has " +
                 std::to_string(s.labels.count) + " labels");
  return s;
}

constexpr const char* kNoIdxFiles =
    "no MNIST-format IDX files (train-images-idx3-ubyte[.gz], t10k-images-idx3-ubyte[.gz], and their label files)";

std::string find_dataset_dir(const std::string& flag_dir) {
  std::vector<std::pair<std::string, std::string>> tried;
  auto has = [](const std::string& d) {
    return !pick(d, "train-images-idx3-ubyte").empty() && !pick(d, "t10k-images-idx3-ubyte").empty();
  };
  if (!flag_dir.empty()) {
    if (has(flag_dir)) return flag_dir;
    if (const std::string why = folder_problem(flag_dir); !why.empty())
      throw IdxError("--data-dir " + flag_dir + ": " + why);
    throw IdxError(flag_dir + ": " + kNoIdxFiles);
  }
  // A folder the user named is used or refused, never passed over.
  if (const char* e = std::getenv("CUDABENCH_DATA_DIR"); e && *e) {
    if (has(e)) return e;
    const std::string why = folder_problem(e);
    throw IdxError(std::string("CUDABENCH_DATA_DIR=") + e + ": " + (why.empty() ? kNoIdxFiles : why) +
                   "; unset it to use " + kDebianFashionMnist);
  }
  if (has(kDebianFashionMnist)) return kDebianFashionMnist;
  tried.emplace_back(kDebianFashionMnist, "Debian's dataset-fashion-mnist");
  std::string msg = "no dataset found; looked in:";
  for (const auto& [d, why] : tried) msg += " " + d + " (" + why + ");";
  msg += " install it with scripts/setup.sh (apt-get install dataset-fashion-mnist) or pass --data-dir";
  throw IdxError(msg);
}

std::string dataset_file_named(const std::string& out, const std::string& flag_dir) {
  if (out.empty()) return "";
  std::string dir;
  try {
    dir = find_dataset_dir(flag_dir);
  } catch (const IdxError&) {
    return "";  // no dataset, nothing to replace
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (same_file(out, e.path().string())) return e.path().string();
  return "";
}

}  // namespace cudabench::data
