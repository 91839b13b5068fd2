// The Python scan's file helpers (env/files.h): a folder is read whole, in
// no arbitrary order, and the scan's deadline stops a listing inside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "env/files.h"

namespace fs = std::filesystem;
using namespace cudabench::env;

namespace {
fs::path crowded(const std::string& name, int count) {
  const fs::path d = fs::temp_directory_path() / (name + "." + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  for (int i = 0; i < count; ++i) std::ofstream(d / ("pkg" + std::to_string(100000 + i) + "-1.0.dist-info"));
  std::ofstream(d / "torch");
  return d;
}
}  // namespace

TEST(ScanFiles, AListingReadsTheWholeFolderInOrderOfName) {
  const fs::path d = crowded("cudabench-list", 5000);
  const auto all = list_dir(d);
  ASSERT_EQ(all.size(), 5001u);  // no bound: the name looked for may sort last
  EXPECT_EQ(all.front().filename(), "pkg100000-1.0.dist-info");
  EXPECT_EQ(all.back().filename(), "torch");
  fs::remove_all(d);
}

TEST(ScanFiles, AListingStopsAtTheScansDeadlineAndSaysSo) {
  const fs::path d = crowded("cudabench-deadline", 3000);
  set_scan_deadline(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const SiteListing& cut = site_listing(d.string());
  EXPECT_TRUE(cut.cut);
  EXPECT_LT(cut.meta.size(), 3000u);
  clear_scan_deadline();
  const SiteListing& whole = site_listing(d.string());
  EXPECT_FALSE(whole.cut);
  EXPECT_EQ(whole.meta.size(), 3000u);  // the .dist-info entries; torch/ is looked up by name
  EXPECT_EQ(whole.problem, "");
  EXPECT_EQ(site_listing((d / "none").string()).problem, "No such file or directory");
  fs::remove_all(d);
}
