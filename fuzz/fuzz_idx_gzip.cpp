// libFuzzer target: the IDX reader's gzip path (decode_idx_bytes inflates,
// bounded by the size the IDX header implies), then the parsers. Inputs
// that are not gzip are skipped: the seeds are .gz files.
//
// A custom mutator (libFuzzer's "compressed input" pattern) mutates half
// the time the bytes as they are (damaged streams: the inflate error
// paths), and half the time what they inflate to, deflated again (valid
// streams whose IDX content varies: headers that imply less or more than
// the data, the bound on inflation).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "data/idx_reader.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {
constexpr std::size_t kMaxPlain = 1 << 16;

std::size_t inflate_some(const std::uint8_t* in, std::size_t n, std::vector<std::uint8_t>& out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return 0;
  z.next_in = const_cast<std::uint8_t*>(in);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_FINISH);
  const std::size_t got = z.total_out;
  inflateEnd(&z);
  return got;
}

std::size_t deflate_into(const std::uint8_t* in, std::size_t n, std::uint8_t* out, std::size_t max) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
  z.next_in = const_cast<std::uint8_t*>(in);
  z.avail_in = static_cast<uInt>(n);
  z.next_out = out;
  z.avail_out = static_cast<uInt>(max);
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t got = z.total_out;
  deflateEnd(&z);
  return rc == Z_STREAM_END ? got : 0;
}
}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  if (seed % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::vector<std::uint8_t> plain(kMaxPlain);
  std::size_t n = inflate_some(data, size, plain);
  n = LLVMFuzzerMutate(plain.data(), n, plain.size());
  std::vector<std::uint8_t> packed(max_size);
  const std::size_t m = deflate_into(plain.data(), n, packed.data(), packed.size());
  if (m == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, packed.data(), m);
  return m;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudabench::data;
  if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) return -1;  // not gzip: not kept in the corpus
  try {
    const std::vector<std::uint8_t> plain = decode_idx_bytes({data, data + size}, "fuzz.gz");
    try {
      parse_idx_images(plain, "fuzz.gz");
    } catch (const IdxError&) {
    }
    parse_idx_labels(plain, "fuzz.gz");
  } catch (const IdxError&) {
  }
  return 0;
}
