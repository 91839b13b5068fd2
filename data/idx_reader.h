// MNIST-format IDX files (plain or .gz): images (magic 0x00000803, 3
// dimensions) and labels (magic 0x00000801, 1 dimension), big-endian sizes.
// Every check names the file and what was wrong: magic number, dimensions,
// a file shorter or longer than its header says, labels out of range,
// images and labels that disagree in count.
#pragma once

#include <cstdint>
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

// A whole file's bytes, gunzipped when it starts with the gzip magic.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

IdxImages parse_idx_images(const std::vector<std::uint8_t>& bytes, const std::string& name);
IdxLabels parse_idx_labels(const std::vector<std::uint8_t>& bytes, const std::string& name,
                           int num_classes = 10);
IdxImages read_idx_images(const std::string& path);
IdxLabels read_idx_labels(const std::string& path, int num_classes = 10);

struct MnistSplit {
  IdxImages images;
  IdxLabels labels;
};
// `prefix` is "train" or "t10k": reads <dir>/<prefix>-images-idx3-ubyte[.gz]
// and <prefix>-labels-idx1-ubyte[.gz], and checks that the counts agree.
MnistSplit load_mnist_split(const std::string& dir, const std::string& prefix);

// Where the dataset is: the flag's folder if given, else $CUDABENCH_DATA_DIR,
// else Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist). Throws
// IdxError naming every place it looked when none holds the files.
std::string find_dataset_dir(const std::string& flag_dir = "");
constexpr const char* kDebianFashionMnist = "/usr/share/datasets/fashion-mnist";

}  // namespace cudabench::data
