// libFuzzer target: the IDX reader's gzip path (decode_idx_bytes inflates,
// bounded by the size the IDX header implies), then the parsers. Inputs
// that are not gzip are skipped: the seeds are .gz files.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "idx_reader.h"

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
