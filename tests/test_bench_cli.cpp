// The bench executable end to end: a CPU run writes JSON whose benchmarks
// carry bytes/s and whose context carries the environment; unknown flags and
// misuse fail with a message; --env prints the report.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  const char* dir = std::getenv("CUDABENCH_BUILD_DIR");
  const std::string cmd = std::string(dir ? dir : ".") + "/bench " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("cudabench-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST(BenchCli, CpuRunWritesCheckedJsonWithContext) {
  const fs::path out = temp_file("cpu.json");
  const Result r = run("--benchmark_filter='VectorAdd/cpu_(scalar|omp_simd)/n:4096/' "
                       "--benchmark_min_time=0.01 --benchmark_out=" + out.string() +
                       " --benchmark_out_format=json");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out);
  ASSERT_TRUE(f) << "no JSON written";
  const auto j = nlohmann::json::parse(f);
  fs::remove(out);
  const auto& ctx = j["context"];
  // A Release Google Benchmark, not Debian's debug build.
  EXPECT_EQ(ctx["library_build_type"], "release");
  for (const char* k : {"cuda_runtime_built", "cuda_driver", "cuda_toolkit", "nvcc",
                        "cuda_architectures", "cxx_compiler", "gpu_name", "libtorch", "cudabench_env"})
    EXPECT_TRUE(ctx.contains(k)) << "context lacks " << k;
  // The whole environment report rides along as an object.
  EXPECT_TRUE(ctx["cudabench_env"].contains("verdicts"));
  EXPECT_TRUE(ctx["cudabench_env"].contains("toolkits"));
  ASSERT_EQ(j["benchmarks"].size(), 2u);
  for (const auto& b : j["benchmarks"]) {
    EXPECT_FALSE(b.contains("error_occurred") && b["error_occurred"].get<bool>()) << b.dump();
    EXPECT_GT(b["bytes_per_second"].get<double>(), 0);
    EXPECT_GT(b["items_per_second"].get<double>(), 0);
    // 12 bytes per element: bytes/s = 12 x items/s.
    EXPECT_NEAR(b["bytes_per_second"].get<double>() / b["items_per_second"].get<double>(), 12.0, 1e-6);
  }
  // No temp file left behind.
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(out.filename().string() + ".tmp"), std::string::npos);
}

TEST(BenchCli, ConsoleStaysReadable) {
  // The console shows flat facts, never the whole report.
  const Result r = run("--benchmark_filter='VectorAdd/cpu_scalar/n:4096/' --benchmark_min_time=0.01");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("cudabench_env"), std::string::npos);
  EXPECT_NE(r.out.find("cuda_toolkit:"), std::string::npos);
  EXPECT_EQ(r.out.find("Library was built as DEBUG"), std::string::npos);
}

TEST(BenchCli, SaysInOneLineWhyGpuBenchmarksAreAbsent) {
  const Result r = run("--benchmark_list_tests=true");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("VectorAdd/cpu_scalar/n:10000000"), std::string::npos);
  if (r.out.find("VectorAdd/cuda_v4") == std::string::npos) {
    // Exactly one line explains it, and not with "insufficient driver".
    EXPECT_NE(r.out.find("cudabench: GPU benchmarks not run: "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("insufficient"), std::string::npos) << r.out;
  } else {
    for (const char* n : {"VectorAdd/cuda_v1", "VectorAdd/cuda_v2", "VectorAdd/cuda_v3",
                          "VectorAdd/cublas_geam", "VectorAdd/thrust", "VectorAddFlow/pinned",
                          "Transfer/h2d_pinned", "Transfer/d2h_pageable"})
      EXPECT_NE(r.out.find(n), std::string::npos) << n;
  }
}

TEST(BenchCli, UnknownFlagsAreRejected) {
  Result r = run("--no-such-flag");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--no-such-flag"), std::string::npos) << r.out;
  r = run("--check");
  EXPECT_NE(r.code, 0) << "--check without --env must be refused";
  r = run("--env=yaml");
  EXPECT_NE(r.code, 0) << r.out;
}

TEST(BenchCli, EnvReportTextAndJson) {
  Result r = run("--env");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("cudabench environment report"), std::string::npos);
  EXPECT_NE(r.out.find("Verdicts"), std::string::npos);
  const fs::path out = temp_file("env.json");
  r = run("--env=json --env-out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  fs::remove(out);
  for (const char* k : {"driver", "runtime", "libraries", "torch", "gpus", "loaded_libraries",
                        "toolkits", "environment", "verdicts", "gpu_usable"})
    EXPECT_TRUE(j.contains(k)) << k;
  // --check exits 1 exactly when a verdict is an error.
  r = run("--env --check");
  EXPECT_EQ(r.code, j["has_errors"].get<bool>() ? 1 : 0) << r.out;
  r = run("--env --require-gpu");
  EXPECT_EQ(r.code, j["gpu_usable"].get<bool>() ? 0 : 1);
}
