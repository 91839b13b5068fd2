// Toolkit discovery over fake install trees built in a temp folder: each
// layout (system runfile/deb, wheel-assembled, conda <= 11 cudatoolkit,
// conda 12+ split packages, pip CUDA 13 and CUDA 12 wheels), PATH, CUDA_HOME.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "env/probe.h"

namespace fs = std::filesystem;
using namespace cudabench::env;

namespace {

class FakeTree : public ::testing::Test {
 protected:
  fs::path root;
  void SetUp() override {
    root = fs::temp_directory_path() /
           ("cudabench-fake-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path file(const std::string& rel, const std::string& text = "") {
    const fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
  fs::path exe(const std::string& rel) {
    const fs::path p = file(rel, "#!/bin/sh\n");
    ::chmod(p.c_str(), 0755);
    return p;
  }
  DiscoveryInput input() {
    DiscoveryInput in;
    in.system_roots = {(root / "usr/local").string()};
    return in;
  }
  const ToolkitInstall* by_root(const std::vector<ToolkitInstall>& all, const fs::path& p) {
    const std::string want = fs::canonical(p).string();
    for (const auto& t : all)
      if (t.root == want) return &t;
    return nullptr;
  }
};

}  // namespace

TEST_F(FakeTree, SystemInstallsWithVersionJsonAndVersionTxt) {
  file("usr/local/cuda-12.4/version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.4.131"}})");
  exe("usr/local/cuda-12.4/bin/nvcc");
  file("usr/local/cuda-12.4/include/cuda_runtime_api.h");
  file("usr/local/cuda-12.4/lib64/libcudart.so.12");
  fs::create_directory_symlink(root / "usr/local/cuda-12.4", root / "usr/local/cuda");
  file("usr/local/cuda-10.2/version.txt", "CUDA Version 10.2.89\n");
  exe("usr/local/cuda-10.2/bin/nvcc");
  file("usr/local/not-cuda/bin/nvcc");
  const auto all = discover_toolkits(input());
  ASSERT_EQ(all.size(), 2u);
  const ToolkitInstall* t = by_root(all, root / "usr/local/cuda-12.4");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->version.str(), "12.4.131");
  EXPECT_EQ(t->version_source, "version.json");
  EXPECT_EQ(t->kind, "system");
  EXPECT_TRUE(t->has_nvcc && t->has_runtime && t->has_headers);
  EXPECT_EQ(t->found_via.size(), 2u) << "cuda and cuda-12.4 are one install";
  const ToolkitInstall* old = by_root(all, root / "usr/local/cuda-10.2");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->version.str(), "10.2.89");
  EXPECT_EQ(old->summary(), "compiler only");
}

TEST_F(FakeTree, WheelAssembledTreeUsesDistInfo) {
  exe("usr/local/cuda-13.0/bin/nvcc");
  file("usr/local/cuda-13.0/dist-info/nvidia_cuda_nvcc-13.0.88.dist-info/METADATA");
  file("usr/local/cuda-13.0/dist-info/nvidia_cublas-13.1.0.3.dist-info/METADATA");
  file("usr/local/cuda-13.0/lib/libcudart.so.13");
  const auto all = discover_toolkits(input());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].version.str(), "13.0.88");
  EXPECT_NE(all[0].version_source.find("nvidia_cuda_nvcc"), std::string::npos);
}

TEST_F(FakeTree, CondaCudatoolkitRuntimeOnlyLayout) {
  file("conda/envs/old/lib/libcudart.so.11.0");
  file("conda/envs/old/conda-meta/cudatoolkit-11.8.0-h6a678d5_0.json", "{}");
  DiscoveryInput in = input();
  in.env["CONDA_PREFIX"] = (root / "conda/envs/old").string();
  const auto all = discover_toolkits(in);
  const ToolkitInstall* t = by_root(all, root / "conda/envs/old");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, "conda-cudatoolkit");
  EXPECT_EQ(t->version.str(), "11.8.0");
  EXPECT_FALSE(t->has_nvcc);
  EXPECT_TRUE(t->has_runtime);
  EXPECT_EQ(t->summary(), "runtime libraries only (no nvcc)");
}

TEST_F(FakeTree, CondaSplitPackagesUnderTargetsAndSiblingEnvs) {
  exe("conda/envs/cu124/bin/nvcc");
  file("conda/envs/cu124/targets/x86_64-linux/include/cuda_runtime_api.h");
  file("conda/envs/cu124/targets/x86_64-linux/lib/libcudart.so.12.4.127");
  file("conda/envs/cu124/conda-meta/cuda-nvcc-12.4.131-0.json", "{}");
  // The active env is another one: siblings under envs/ are found too.
  file("conda/envs/active/conda-meta/python-3.11.json", "{}");
  DiscoveryInput in = input();
  in.env["CONDA_PREFIX"] = (root / "conda/envs/active").string();
  const auto all = discover_toolkits(in);
  const ToolkitInstall* t = by_root(all, root / "conda/envs/cu124");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, "conda");
  EXPECT_EQ(t->version.str(), "12.4.131");
  EXPECT_TRUE(t->has_nvcc && t->has_runtime && t->has_headers);
  EXPECT_EQ(by_root(all, root / "conda/envs/active"), nullptr) << "an env without CUDA is no toolkit";
}

TEST_F(FakeTree, PipCuda13AndCuda12Wheels) {
  exe("venv13/site-packages/nvidia/cu13/bin/nvcc");
  file("venv13/site-packages/nvidia/cu13/include/cuda_runtime_api.h");
  file("venv13/site-packages/nvidia/cu13/lib/libcudart.so.13");
  file("venv13/site-packages/nvidia_cuda_nvcc-13.0.88.dist-info/METADATA");
  file("venv13/site-packages/nvidia_cuda_runtime-13.0.96.dist-info/METADATA");
  file("venv12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12");
  file("venv12/site-packages/nvidia/cuda_runtime/include/cuda_runtime_api.h");
  file("venv12/site-packages/nvidia_cuda_runtime_cu12-12.9.79.dist-info/METADATA");
  DiscoveryInput in = input();
  in.site_packages = {(root / "venv13/site-packages").string(), (root / "venv12/site-packages").string()};
  const auto all = discover_toolkits(in);
  ASSERT_EQ(all.size(), 2u);
  const ToolkitInstall* p13 = by_root(all, root / "venv13/site-packages/nvidia/cu13");
  ASSERT_NE(p13, nullptr);
  EXPECT_EQ(p13->kind, "pip");
  EXPECT_EQ(p13->version.str(), "13.0.88") << "the compiler wheel's version wins";
  EXPECT_TRUE(p13->has_nvcc);
  const ToolkitInstall* p12 = by_root(all, root / "venv12/site-packages/nvidia");
  ASSERT_NE(p12, nullptr);
  EXPECT_EQ(p12->version.str(), "12.9.79");
  EXPECT_FALSE(p12->has_nvcc);
  EXPECT_TRUE(p12->has_runtime);
}

TEST_F(FakeTree, PathAndCudaHomeAndHeaderFallback) {
  exe("opt/mycuda/bin/nvcc");
  file("opt/mycuda/include/cuda_runtime_api.h", "#define CUDART_VERSION 11080\n");
  file("home/cuda-home/include/cuda_runtime_api.h", "#define CUDART_VERSION 12060\n");
  DiscoveryInput in = input();
  in.env["PATH"] = "/nonexistent:" + (root / "opt/mycuda/bin").string();
  in.env["CUDA_HOME"] = (root / "home/cuda-home").string();
  const auto all = discover_toolkits(in);
  const ToolkitInstall* p = by_root(all, root / "opt/mycuda");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->version.major_minor(), "11.8");
  ASSERT_EQ(p->found_via.size(), 1u);
  EXPECT_EQ(p->found_via[0], "PATH (first nvcc)");
  const ToolkitInstall* h = by_root(all, root / "home/cuda-home");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->version.major_minor(), "12.6");
  EXPECT_EQ(h->found_via[0], "CUDA_HOME");
  EXPECT_EQ(find_on_path(in.env["PATH"], "nvcc"), (root / "opt/mycuda/bin/nvcc").string());
}

TEST_F(FakeTree, EmptyFolderIsNoToolkit) {
  fs::create_directories(root / "usr/local/cuda-9.9");
  EXPECT_FALSE(inspect_toolkit((root / "usr/local/cuda-9.9").string()).has_value());
  EXPECT_TRUE(discover_toolkits(input()).empty());
}

// The real machine: on this project's machines the 13.0 toolkit sits at
// /usr/local/cuda-13.0, assembled from NVIDIA's wheels.
TEST(RealMachine, FindsTheSystemToolkit) {
  if (!fs::exists("/usr/local/cuda-13.0/bin/nvcc")) GTEST_SKIP() << "no /usr/local/cuda-13.0 here";
  const auto all = discover_toolkits(DiscoveryInput::from_process(loaded_libraries()));
  bool found = false;
  for (const auto& t : all)
    if (t.root == fs::canonical("/usr/local/cuda-13.0").string()) {
      found = true;
      EXPECT_EQ(t.version.major_minor(), "13.0");
      EXPECT_TRUE(t.has_nvcc);
    }
  EXPECT_TRUE(found);
}

TEST_F(FakeTree, PipRootNamedDirectlyKeepsTheWheelVersion) {
  exe("tk/site-packages/nvidia/cu13/bin/nvcc");
  file("tk/site-packages/nvidia/cu13/include/cuda_runtime_api.h", "#define CUDART_VERSION 13020\n");
  file("tk/site-packages/nvidia/cu13/lib/libcudart.so.13");
  file("tk/site-packages/nvidia_cuda_nvcc-13.2.86.dist-info/METADATA");
  DiscoveryInput in = input();
  in.env["CUDABENCH_EXTRA_TOOLKITS"] = (root / "tk/site-packages/nvidia/cu13").string();
  const auto all = discover_toolkits(in);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, "pip");
  EXPECT_EQ(all[0].version.str(), "13.2.86");
  EXPECT_EQ(all[0].found_via[0], "CUDABENCH_EXTRA_TOOLKITS");
}

// A toolkit that nothing but its nvcc dates.
TEST_F(FakeTree, NvccVersionIsTheLastResort) {
  const fs::path nvcc = file("usr/local/cuda-12.2/bin/nvcc",
                             "#!/bin/sh\necho 'Cuda compilation tools, release 12.2, V12.2.140'\n");
  ::chmod(nvcc.c_str(), 0755);
  const auto t = inspect_toolkit((root / "usr/local/cuda-12.2").string());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->version.str(), "12.2.140");
  EXPECT_EQ(t->version_source, "bin/nvcc --version");
}

// Folders where files should be: no throw (a std::ifstream read of a folder
// throws in libstdc++), the next source of the version is used.
TEST_F(FakeTree, FoldersInPlaceOfVersionFilesAreSkipped) {
  fs::create_directories(root / "usr/local/cuda-12.1/version.json");
  fs::create_directories(root / "usr/local/cuda-12.1/version.txt");
  fs::create_directories(root / "usr/local/cuda-12.1/include/cuda_runtime_api.h");
  file("usr/local/cuda-12.1/targets/x86_64-linux/include/cuda_runtime_api.h", "#define CUDART_VERSION 12010\n");
  std::optional<ToolkitInstall> t;
  ASSERT_NO_THROW(t = inspect_toolkit((root / "usr/local/cuda-12.1").string()));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->version.major_minor(), "12.1");
  EXPECT_EQ(t->version_source, "targets/x86_64-linux/include/cuda_runtime_api.h");
}

TEST_F(FakeTree, HostProbeTakesFoldersInPlaceOfProcFiles) {
  fs::create_directories(root / "proc/cpuinfo");
  fs::create_directories(root / "proc/meminfo");
  fs::create_directories(root / "etc/os-release");
  HostInfo h;
  ASSERT_NO_THROW(h = probe_host(root.string()));
  EXPECT_EQ(h.threads, 0);
  EXPECT_EQ(h.memory_bytes, 0);
}
