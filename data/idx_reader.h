// MNIST-format IDX files (plain or .gz): images (magic 0x00000803, 3
// dimensions) and labels (magic 0x00000801, 1 dimension), big-endian sizes.
// Every check names the file and what was wrong: magic number, dimensions,
// a file shorter or longer than its header says, labels out of range,
// images and labels that disagree in count.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudabench::data {

class IdxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct IdxImages {
  std::int64_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
};

struct IdxLabels {
  std::int64_t count = 0;
  std::vector<std::uint8_t> labels;
};

// The most an IDX file may hold, inflated: MNIST is 47 MB, EMNIST 0.7 GB.
constexpr std::uint64_t kMaxIdxBytes = 8ull << 30;
// The side of an MNIST-format image.
constexpr std::int64_t kMnistSide = 28;

// A whole regular file's bytes (IdxError naming the file and strerror on
// any failure: missing, a folder, unreadable), gunzipped when it starts
// with the gzip magic.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);
// `raw` as read from a file named `name`, gunzipped when it starts with the
// gzip magic. Inflating stops as soon as the output passes the size its IDX
// header implies (a gzip bomb ends there) or when the first bytes are not
// an IDX header at all.
std::vector<std::uint8_t> decode_idx_bytes(std::vector<std::uint8_t> raw, const std::string& name);
// The total size the IDX header at the start of `b` implies (header plus
// data), kMaxIdxBytes + 1 when larger, nullopt while `b` is too short or
// not an IDX header.
std::optional<std::uint64_t> idx_implied_size(const std::uint8_t* b, std::size_t n);

IdxImages parse_idx_images(const std::vector<std::uint8_t>& bytes, const std::string& name);
IdxLabels parse_idx_labels(const std::vector<std::uint8_t>& bytes, const std::string& name,
                           int num_classes = 10);
IdxImages read_idx_images(const std::string& path);
IdxLabels read_idx_labels(const std::string& path, int num_classes = 10);

struct MnistSplit {
  IdxImages images;
  IdxLabels labels;
  std::string images_path, labels_path;
};
// `prefix` is "train" or "t10k": reads <dir>/<prefix>-images-idx3-ubyte[.gz]
// and <prefix>-labels-idx1-ubyte[.gz], and checks that the images are
// 28x28, that there is at least one, and that the counts agree.
MnistSplit load_mnist_split(const std::string& dir, const std::string& prefix);

// Where the dataset is: the flag's folder if given, else $CUDABENCH_DATA_DIR,
// else Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist). A folder
// the flag or the variable names must hold the files (IdxError naming it
// otherwise: never a silent fall-back); IdxError naming every place it
// looked when none holds them.
std::string find_dataset_dir(const std::string& flag_dir = "");
constexpr const char* kDebianFashionMnist = "/usr/share/datasets/fashion-mnist";

// The dataset file that the output `out` would replace (through links), or
// "": the folder of `flag_dir` (find_dataset_dir's search), none if no
// dataset is found. An output is refused there, never written over an input.
std::string dataset_file_named(const std::string& out, const std::string& flag_dir = "");

}  // namespace cudabench::data
