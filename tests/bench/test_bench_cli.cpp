// The bench executable end to end: a CPU run writes JSON whose benchmarks
// carry bytes/s and whose context carries the environment; unknown flags and
// misuse fail with a message; --env prints the report.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_support.h"

namespace fs = std::filesystem;

// A bench built without CUDA never uses a GPU, fake or real: the fake-GPU
// cases need a CUDA build (the sanitize and cpu-only presets have none).
#ifdef CUDABENCH_HAVE_CUDA
#define SKIP_WITHOUT_CUDA_BUILD() (void)0
#else
#define SKIP_WITHOUT_CUDA_BUILD() GTEST_SKIP() << "bench is built without CUDA"
#endif

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

std::string build_dir() { return CUDABENCH_TEST_BUILD_DIR; }

// `prefix` goes before the command: environment settings such as fakes().
Result run(const std::string& args, const std::string& prefix = "") {
  const std::string cmd = prefix + build_dir() + "/bench " + args + " 2>&1";
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

// Runs bench on a machine described by tests/fixtures/gpus/<machine>.json,
// through the fake libcuda.so.1 and libnvidia-ml.so.1 the tests build.
std::string fakes(const std::string& machine) {
  const std::string f = build_dir() + "/fakes";
  return "env LD_LIBRARY_PATH=" + f + "/cuda:" + f + "/nvml:${LD_LIBRARY_PATH} CUDABENCH_FAKE_GPU=" +
         std::string(CUDABENCH_TEST_SOURCE_DIR) + "/tests/fixtures/gpus/" + machine + ".json ";
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  fs::remove(p);
  return j;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The context's keys as env/context_keys.json defines them (compare.py and
// fleet.py read the same file).
// The keys bench writes (what samples.py adds to a merged result is not bench's);
// with_newer: also those only a newer Google Benchmark than this one may write.
std::set<std::string> schema_keys(bool with_newer = true) {
  std::ifstream f(std::string(CUDABENCH_TEST_SOURCE_DIR) + "/env/context_keys.json");
  const auto schema = nlohmann::json::parse(f);
  std::set<std::string> keys;
  for (const auto& k : schema["keys"])
    if (k["from"] != "samples" && (with_newer || !k.contains("since"))) keys.insert(k["key"].get<std::string>());
  return keys;
}

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.insert(k);
  return keys;
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
  // Every key is one the schema defines (without a GPU, the GPU's facts are absent).
  const auto schema = schema_keys();
  for (const auto& k : keys_of(ctx)) EXPECT_TRUE(schema.count(k)) << k << " is not in env/context_keys.json";
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
  // Rates in decimal units, as every table of cudabench (G/s, never Gi/s).
  EXPECT_NE(r.out.find("bytes_per_second="), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("i/s"), std::string::npos) << r.out;
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
  // No usable GPU stops a run that requires one (3): not a wrong result.
  r = run("--env --require-gpu");
  EXPECT_EQ(r.code, j["gpu_usable"].get<bool>() ? 0 : 3);
}

TEST(BenchCliFakeGpu, EnvReportListsEveryGpuWithNvmlFacts) {
  SKIP_WITHOUT_CUDA_BUILD();
  const fs::path out = temp_file("fake-env.json");
  const Result r = run("--env=json --env-out " + out.string(), fakes("h200x4"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = read_json(out);
  EXPECT_TRUE(j["gpu_usable"].get<bool>());
  ASSERT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][1]["pci_bus_id"], "0000:3B:00.0");
  EXPECT_EQ(j["gpus"][1]["nvml"]["uuid"], "GPU-0c4f2a1e-7d1b-4e8a-9a51-000000000001");
  EXPECT_EQ(j["gpus"][3]["nvml"]["pcie_width_max"], 16);
  EXPECT_TRUE(j["driver"]["nvml_found"].get<bool>());
  EXPECT_FALSE(j["host"]["cpu_model"].get<std::string>().empty());
  EXPECT_GT(j["host"]["threads"].get<int>(), 0);
}

TEST(BenchCliFakeGpu, DevicesSelectGpusAndNamesCarryTheDevice) {
  SKIP_WITHOUT_CUDA_BUILD();
  Result r = run("--devices 0,2 --benchmark_list_tests", fakes("h200x4"));
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* n : {"VectorAdd/cuda_v4/n:4096/dev:0/manual_time", "VectorAdd/cuda_v4/n:4096/dev:2/manual_time",
                        "VectorAdd/cublas_geam/n:10000000/dev:2/manual_time",
                        "Transfer/h2d_pinned/bytes:40000000/dev:0/manual_time",
                        "VectorAddFlow/pinned/n:4096/dev:2/manual_time"})
    EXPECT_TRUE(has(r.out, n)) << n;
  EXPECT_FALSE(has(r.out, "/dev:1/"));
  EXPECT_FALSE(has(r.out, "/dev:3/"));
  EXPECT_FALSE(has(r.out, "min_time")) << "names must not depend on the machine";
  // CPU benchmarks have no device.
  EXPECT_TRUE(has(r.out, "VectorAdd/cpu_scalar/n:4096/real_time\n"));

  r = run("--devices all --benchmark_list_tests", fakes("h200x4"));
  ASSERT_EQ(r.code, 0) << r.out;
  for (int d = 0; d < 4; ++d) EXPECT_TRUE(has(r.out, "VectorAdd/thrust/n:4096/dev:" + std::to_string(d) + "/"));

  // One device, any device: names stay those of a single-GPU run.
  r = run("--devices 2 --benchmark_list_tests", fakes("h200x4"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "VectorAdd/cuda_v4/n:4096/manual_time\n"));
  EXPECT_FALSE(has(r.out, "/dev:"));
}

TEST(BenchCliFakeGpu, BadDeviceListsAreUsageErrors) {
  SKIP_WITHOUT_CUDA_BUILD();
  Result r = run("--devices 4", fakes("h200x4"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "bench: --devices 4: there is no GPU 4 (4 usable: 0..3)")) << r.out;
  r = run("--devices 1,1", fakes("h200x4"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "listed twice")) << r.out;
  r = run("--devices gpu0", fakes("h200x4"));
  EXPECT_EQ(r.code, 2) << r.out;
  // Without a GPU, naming one is an error; "all" just runs the CPU part.
  r = run("--devices 0 --benchmark_list_tests");
  if (!has(r.out, "cuda_v4")) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "bench: --devices 0: no GPU is usable")) << r.out;
    r = run("--devices all --benchmark_list_tests");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(has(r.out, "GPU benchmarks not run")) << r.out;
  }
  r = run("--l2-flush write");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--l2-flush")) << r.out;
}

TEST(BenchCliFakeGpu, ContextNamesTheSelectedGpuTheFlushAndTheHost) {
  SKIP_WITHOUT_CUDA_BUILD();
  const fs::path out = temp_file("fake-ctx.json");
  const Result r = run("--devices 2 --l2-flush memset --benchmark_filter='VectorAdd/cpu_scalar/n:4096/' "
                       "--benchmark_min_time=0.01 --benchmark_out=" + out.string(),
                       fakes("h200x4"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = read_json(out);
  const auto& c = j["context"];
  EXPECT_EQ(c["gpu_index"], "2");
  EXPECT_EQ(c["gpu_pci_bus_id"], "0000:4C:00.0");
  EXPECT_EQ(c["gpu_devices"], "2");
  EXPECT_EQ(c["l2_flush"], "memset");
  EXPECT_EQ(c["gpu_power_limit"], "700 W");
  EXPECT_EQ(c["gpu_pcie_max"], "gen 5 x16");
  for (const char* k : {"host_cpu_model", "host_cores", "host_threads", "host_kernel", "host_os", "host_memory_gib",
                        "host_cpu_governor", "host_thp", "host_numa_nodes"})
    EXPECT_TRUE(c.contains(k)) << k;
  // With a GPU, the context holds the keys env/context_keys.json defines and no
  // others; only those a newer Google Benchmark writes ("since") may be missing.
  const auto keys = keys_of(c), all = schema_keys();
  for (const auto& k : schema_keys(false)) EXPECT_TRUE(keys.count(k)) << k << " missing";
  for (const auto& k : keys) EXPECT_TRUE(all.count(k)) << k << " is not in env/context_keys.json";
}

TEST(BenchCliFakeGpu, ABrokenDriverIsReportedNotUsed) {
  SKIP_WITHOUT_CUDA_BUILD();
  const fs::path out = temp_file("fake-broken.json");
  Result r = run("--env=json --env-out " + out.string(), fakes("init-fails"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = read_json(out);
  EXPECT_FALSE(j["gpu_usable"].get<bool>());
  EXPECT_EQ(j["driver"]["cu_init_result"], 100);
  EXPECT_FALSE(j["driver"]["nvml_found"].get<bool>());
  EXPECT_TRUE(has(j["driver"]["nvml_error"].get<std::string>(), "Driver Not Loaded"));
  r = run("--env --check", fakes("init-fails"));
  EXPECT_EQ(r.code, 1) << r.out;  // cuInit failing is an error verdict

  r = run("--benchmark_list_tests", fakes("prohibited"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "cuda_v4"));
  EXPECT_TRUE(has(r.out, "cudabench: GPU benchmarks not run: every GPU is in compute mode Prohibited")) << r.out;
}

// On a real GPU (skipped elsewhere): every GPU family at small sizes on
// every device, checked, with telemetry and stable names. The labels it
// expects come from the functions that make them (bench_support.h, tested
// word for word on the CPU), never from text written here.
TEST(BenchCliGpu, EveryGpuFamilyRunsCheckedOnEveryDevice) {
  using namespace cudabench::bench;
  const fs::path env = temp_file("gpu-env.json");
  ASSERT_EQ(run("--env=json --env-out " + env.string()).code, 0);
  const auto e = read_json(env);
  if (!e["gpu_usable"].get<bool>()) GTEST_SKIP() << "no usable GPU: " << e["gpu_unusable_reason"].get<std::string>();
  const bool nvml = e["driver"]["nvml_found"].get<bool>();
  // A copy has a fraction of the PCIe peak where NVML knows the link.
  const bool pcie_known = e["gpus"][0]["nvml"].value("pcie_max_bytes_per_s", 0.0) > 0;
  for (const L2Flush flush : {L2Flush::Read, L2Flush::Memset, L2Flush::None}) {
    const std::string mode = l2_flush_name(flush);
    const fs::path out = temp_file("gpu-" + mode + ".json");
    const Result r = run("--devices all --l2-flush " + mode +
                         " --benchmark_filter='^(VectorAdd/(cuda_v[1-5]|cublas_geam|thrust|torch_cuda)/n:(4096|1048576)/"
                         "|VectorAdd/cuda_v4/n:(16777216|134217728)/|Copy/cuda_(kernel|float4|memcpy)/n:(4096|1048576)/"
                         "|Copy/cuda_kernel/n:16777216/|Launch/empty_kernel/"
                         "|Transfer/(h2d|d2h)_(pinned|pageable)/bytes:16384/|Transfer/h2d_pinned/bytes:4194304/"
                         "|VectorAddFlow/(pinned|pageable)/n:4096/)' "
                         "--benchmark_min_time=0.01 --benchmark_out=" + out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = read_json(out);
    EXPECT_EQ(j["context"]["l2_flush"], mode);
    // 7 VectorAdd families (8 with LibTorch) x 2 sizes, one at 2^24 and 2^27,
    // 3 copy families x 2 and one at 2^24, 2 launch rows, 5 transfers, 2
    // flows; per device.
    ASSERT_GE(j["benchmarks"].size(), 32u * e["gpus"].size()) << r.out;
    for (const auto& b : j["benchmarks"]) {
      const std::string name = b["name"];
      EXPECT_FALSE(b.value("error_occurred", false)) << name << ": " << b.value("error_message", "");
      EXPECT_FALSE(has(name, "min_time")) << name;
      if (nvml) EXPECT_TRUE(b.contains("sm_clock_mhz")) << name;
      const std::string label = b.value("label", "");
      const bool latency = has(label, kLatencyBoundLabel);
      if (name.rfind("VectorAdd/", 0) == 0 || name.rfind("Copy/", 0) == 0) {
        if (has(name, "n:134217728/")) {
          // 2^27 (1.6 GB) is far beyond any L2: one launch after the flush,
          // DRAM-bound, with a fraction of peak and of the device copy.
          EXPECT_TRUE(has(label, flush_label(flush))) << name << ": " << label;
          EXPECT_FALSE(has(label, kNotDramBound) || latency) << name << ": " << label;
          EXPECT_GT(b.value("frac_of_peak", 0.0), 0.3) << name;
          EXPECT_LT(b.value("frac_of_peak", 9.0), 1.0) << name;
          EXPECT_GT(b.value("frac_of_copy", 0.0), 0.0) << name;
        } else if (flush == L2Flush::None) {
          // A warm cache: labelled, and no fraction of the DRAM peak.
          EXPECT_TRUE(has(label, flush_label(flush)) && has(label, kNotDramBound)) << name << ": " << label;
          EXPECT_FALSE(b.contains("frac_of_peak")) << name;
        } else {
          // Below 8x L2: back to back over rotating buffer sets, from DRAM;
          // fractions of the peak (and an add's of the copy) unless the row
          // is latency-bound (2^20 and less on an H200; 2^24 is not).
          const auto rot = rotation_of_label(label);
          EXPECT_TRUE(rot && rot->sets >= 2) << name << ": " << label;
          EXPECT_EQ(b.contains("frac_of_peak"), !latency) << name << ": " << label;
          if (has(name, "n:16777216/")) EXPECT_FALSE(latency) << name << ": " << label;
          if (!latency) EXPECT_LT(b.value("frac_of_peak", 9.0), 1.0) << name;
          if (!latency && name.rfind("VectorAdd/", 0) == 0) EXPECT_GT(b.value("frac_of_copy", 0.0), 0.0) << name;
        }
      }
      if (name.rfind("Transfer/", 0) == 0) EXPECT_EQ(b.contains("frac_of_peak"), pcie_known && !latency) << name;
    }
  }
}

TEST(BenchCliFakeGpu, ProhibitedGpusAreLeftOutOrRefused) {
  SKIP_WITHOUT_CUDA_BUILD();
  Result r = run("--benchmark_list_tests", fakes("h200x2-first-prohibited"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "VectorAdd/cuda_v4/n:4096/manual_time\n"));  // one device: GPU 1
  r = run("--devices all --benchmark_list_tests", fakes("h200x2-first-prohibited"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has(r.out, "/dev:")) << "only GPU 1 is left, so names stay single-GPU";
  r = run("--devices 0,1 --benchmark_list_tests", fakes("h200x2-first-prohibited"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "bench: --devices 0,1: GPU 0 is in compute mode Prohibited")) << r.out;
  const fs::path out = temp_file("fake-prohibited.json");
  r = run("--benchmark_filter='VectorAdd/cpu_scalar/n:4096/' --benchmark_min_time=0.01 --benchmark_out=" + out.string(),
          fakes("h200x2-first-prohibited"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read_json(out)["context"]["gpu_index"], "1");
}
