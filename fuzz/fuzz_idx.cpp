// libFuzzer target: the IDX reader on plain bytes (images and labels).
// An IdxError is the expected answer to bad bytes; anything else (a crash,
// an uncaught exception, a sanitizer report, an allocation beyond the
// fuzzer's limit) is a defect.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/idx_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudabench::data;
  std::vector<std::uint8_t> bytes(data, data + size);
  try {
    parse_idx_images(decode_idx_bytes(bytes, "fuzz"), "fuzz");
  } catch (const IdxError&) {
  }
  try {
    parse_idx_labels(bytes, "fuzz");
  } catch (const IdxError&) {
  }
  (void)idx_implied_size(data, size);
  return 0;
}
