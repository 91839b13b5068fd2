// The IDX reader on good and damaged files: every error names the file and
// what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "idx_fixture.h"
#include "data/idx_reader.h"

namespace fs = std::filesystem;
using namespace cudabench::data;
using namespace cudabench::testing;

namespace {
class IdxFiles : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("cudabench-idx-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const IdxError& e) {
      return e.what();
    }
    return "";
  }
};
}  // namespace

TEST_F(IdxFiles, ReadsPlainAndGzipAlike) {
#ifndef CUDABENCH_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  write_bytes(dir / "a-images-idx3-ubyte", idx_images(5, 28, 28));
  write_gz(dir / "b-images-idx3-ubyte.gz", idx_images(5, 28, 28));
  const auto a = read_idx_images((dir / "a-images-idx3-ubyte").string());
  const auto b = read_idx_images((dir / "b-images-idx3-ubyte.gz").string());
  EXPECT_EQ(a.count, 5);
  EXPECT_EQ(a.rows, 28);
  EXPECT_EQ(a.cols, 28);
  ASSERT_EQ(a.pixels.size(), 5u * 28 * 28);
  EXPECT_EQ(a.pixels[1], 37);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST_F(IdxFiles, ReadsEveryMemberOfAMultiMemberGzip) {
#ifndef CUDABENCH_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  // What pigz, or `cat a.gz b.gz`, writes: gzip -dc reads it whole.
  const auto whole = idx_images(5, 28, 28);
  const std::vector<std::uint8_t> head(whole.begin(), whole.begin() + 1000), tail(whole.begin() + 1000, whole.end());
  write_gz(dir / "h.gz", head);
  write_gz(dir / "t.gz", tail);
  auto read_raw = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
  };
  auto joined = read_raw(dir / "h.gz");
  const auto t = read_raw(dir / "t.gz");
  joined.insert(joined.end(), t.begin(), t.end());
  write_bytes(dir / "m-images-idx3-ubyte.gz", joined);
  EXPECT_EQ(read_idx_images((dir / "m-images-idx3-ubyte.gz").string()).pixels,
            std::vector<std::uint8_t>(whole.begin() + 16, whole.end()));
}

TEST_F(IdxFiles, WrongMagicNamesFileAndBothNumbers) {
  const auto p = dir / "x-images-idx3-ubyte";
  write_bytes(p, idx_images(2, 28, 28, 0));
  const std::string e = error_of([&] { read_idx_images(p.string()); });
  EXPECT_NE(e.find(p.string()), std::string::npos) << e;
  EXPECT_NE(e.find("bad magic 0x00000000 (expected 0x00000803)"), std::string::npos) << e;
  // A label file passed as images says so.
  write_bytes(p, idx_labels(3));
  EXPECT_NE(error_of([&] { read_idx_images(p.string()); }).find("this is a label file"), std::string::npos);
}

TEST_F(IdxFiles, TruncatedAndOverlongFiles) {
#ifndef CUDABENCH_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  auto img = idx_images(4, 28, 28);
  img.resize(img.size() - 100);
  write_bytes(dir / "t", img);
  const std::string e = error_of([&] { read_idx_images((dir / "t").string()); });
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("4 images of 28x28"), std::string::npos) << e;
  auto lab = idx_labels(10);
  lab.push_back(1);
  write_bytes(dir / "l", lab);
  EXPECT_NE(error_of([&] { read_idx_labels((dir / "l").string()); }).find("longer than its header"), std::string::npos);
  write_bytes(dir / "short", {0, 0, 8});
  EXPECT_NE(error_of([&] { read_idx_images((dir / "short").string()); }).find("too short"), std::string::npos);
  // A gzip stream cut short.
  write_gz(dir / "g.gz", idx_images(50, 28, 28));
  auto gz = read_file_bytes((dir / "g.gz").string());  // fine whole
  EXPECT_EQ(gz.size(), 16u + 50 * 28 * 28);
  std::ifstream in(dir / "g.gz", std::ios::binary);
  std::vector<std::uint8_t> raw((std::istreambuf_iterator<char>(in)), {});
  raw.resize(raw.size() / 2);
  write_bytes(dir / "cut.gz", raw);
  EXPECT_NE(error_of([&] { read_file_bytes((dir / "cut.gz").string()); }).find("gzip"), std::string::npos);
}

TEST_F(IdxFiles, LabelOutOfRange) {
  auto lab = idx_labels(20);
  lab[8 + 13] = 11;
  write_bytes(dir / "l", lab);
  const std::string e = error_of([&] { read_idx_labels((dir / "l").string()); });
  EXPECT_NE(e.find("label 11 at index 13 is out of range 0..9"), std::string::npos) << e;
}

TEST_F(IdxFiles, SplitCountsMustAgreeAndFilesMustExist) {
  write_bytes(dir / "train-images-idx3-ubyte", idx_images(6, 28, 28));
  const std::string missing = error_of([&] { load_mnist_split(dir.string(), "train"); });
  EXPECT_NE(missing.find("train-labels-idx1-ubyte: missing"), std::string::npos) << missing;
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(7));
  const std::string e = error_of([&] { load_mnist_split(dir.string(), "train"); });
  EXPECT_NE(e.find("6 images but"), std::string::npos) << e;
  EXPECT_NE(e.find("7 labels"), std::string::npos) << e;
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(6));
  const auto s = load_mnist_split(dir.string(), "train");
  EXPECT_EQ(s.labels.labels[5], 5);
  EXPECT_EQ(error_of([&] { read_idx_images((dir / "nope").string()); }).find("cannot open"),
            (dir / "nope").string().size() + 2);
}

TEST_F(IdxFiles, DatasetDirFlagEnvAndDefault) {
  const std::string e = error_of([&] { find_dataset_dir(dir.string()); });
  EXPECT_NE(e.find("no MNIST-format IDX files"), std::string::npos) << e;
  write_bytes(dir / "train-images-idx3-ubyte", idx_images(1, 28, 28));
  write_bytes(dir / "t10k-images-idx3-ubyte", idx_images(1, 28, 28));
  EXPECT_EQ(find_dataset_dir(dir.string()), dir.string());
  ::setenv("CUDABENCH_DATA_DIR", dir.string().c_str(), 1);
  EXPECT_EQ(find_dataset_dir(), dir.string());
  // A folder the variable names is used or refused: never a silent fall-back
  // to Debian's dataset.
  ::setenv("CUDABENCH_DATA_DIR", "/nonexistent-cudabench", 1);
  const std::string m = error_of([&] { find_dataset_dir(); });
  EXPECT_NE(m.find("CUDABENCH_DATA_DIR=/nonexistent-cudabench: no such folder"), std::string::npos) << m;
  fs::create_directories(dir / "empty");
  ::setenv("CUDABENCH_DATA_DIR", (dir / "empty").c_str(), 1);
  EXPECT_NE(error_of([&] { find_dataset_dir(); }).find("no MNIST-format IDX files"), std::string::npos);
  ::unsetenv("CUDABENCH_DATA_DIR");
  EXPECT_NE(error_of([&] { find_dataset_dir((dir / "nope").string()); }).find("no such folder"), std::string::npos);
}

TEST_F(IdxFiles, AFolderOrADeviceInPlaceOfAFileIsNamed) {
  fs::create_directories(dir / "train-images-idx3-ubyte");
  const std::string e = error_of([&] { read_idx_images((dir / "train-images-idx3-ubyte").string()); });
  EXPECT_NE(e.find("train-images-idx3-ubyte: is a directory"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { read_idx_images("/dev/zero"); }).find("/dev/zero: is not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_idx_images((dir / "missing").string()); }).find("No such file"), std::string::npos);
}

TEST_F(IdxFiles, SplitsNeedImagesOfTwentyEightSquare) {
  write_bytes(dir / "train-images-idx3-ubyte", idx_images(2, 32, 32));
  write_bytes(dir / "train-labels-idx1-ubyte", idx_labels(2));
  std::string e = error_of([&] { load_mnist_split(dir.string(), "train"); });
  EXPECT_NE(e.find("train-images-idx3-ubyte: images are 32x32; MNIST-format data is 28x28"), std::string::npos) << e;
  write_bytes(dir / "train-images-idx3-ubyte", idx_images(0, 28, 28));
  write_bytes(dir / "train-labels-idx1-ubyte", idx_labels(0));
  e = error_of([&] { load_mnist_split(dir.string(), "train"); });
  EXPECT_NE(e.find("train-images-idx3-ubyte: holds no images"), std::string::npos) << e;
}

TEST(IdxHeader, ImpliedSize) {
  const auto h = idx_images(3, 28, 28);
  EXPECT_EQ(idx_implied_size(h.data(), 16), 16u + 3 * 28 * 28);
  EXPECT_EQ(idx_implied_size(h.data(), 15), std::nullopt);  // header not whole yet
  const std::vector<std::uint8_t> huge{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x10, 0, 0, 0, 0x10, 0};
  EXPECT_EQ(idx_implied_size(huge.data(), huge.size()), kMaxIdxBytes + 1);
  const std::vector<std::uint8_t> text{'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(idx_implied_size(text.data(), text.size()), std::nullopt);
}

TEST_F(IdxFiles, GzipInflationStopsAtTheSizeTheHeaderImplies) {
#ifndef CUDABENCH_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  // A valid header for 2 images, then 64 MiB of zeros: about 64 KiB of gzip.
  std::vector<std::uint8_t> plain = idx_images(2, 28, 28);
  plain.resize(plain.size() + (64u << 20), 0);
  write_gz(dir / "bomb.gz", plain);
  ASSERT_LT(fs::file_size(dir / "bomb.gz"), 1u << 20);
  const std::string e = error_of([&] { read_idx_images((dir / "bomb.gz").string()); });
  EXPECT_NE(e.find("inflates beyond the 1584 bytes its IDX header implies"), std::string::npos) << e;
  // Not IDX at all: inflating stops at once and the parser names the magic.
  std::vector<std::uint8_t> junk(1u << 20, 'x');
  write_gz(dir / "junk.gz", junk);
  EXPECT_NE(error_of([&] { read_idx_images((dir / "junk.gz").string()); }).find("bad magic"), std::string::npos);
}
