// The probe, the telemetry and the verdicts that need a driver, against the
// fake libcuda.so.1 and libnvidia-ml.so.1 (tests/fakes): CTest starts this
// process with them first on its library path and $CUDABENCH_FAKE_GPU
// naming a machine in tests/fixtures/gpus. A test switches machines by
// pointing the variable at another file; the fakes read it again.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "env/nvml.h"
#include "env/probe.h"
#include "doctor/rules.h"
#include "bench/telemetry.h"

namespace fs = std::filesystem;
using namespace cudabench::env;
using namespace cudabench::doctor;
using cudabench::bench::Telemetry;
using L = Verdict::Level;

namespace {

std::string fixture(const std::string& name) {
  return std::string(CUDABENCH_TEST_SOURCE_DIR) + "/tests/fixtures/gpus/" + name;
}

// Points the fakes at a machine for the length of a test.
class Machine {
 public:
  explicit Machine(const std::string& path) : old_(std::getenv("CUDABENCH_FAKE_GPU")) {
    setenv("CUDABENCH_FAKE_GPU", path.c_str(), 1);
  }
  ~Machine() { setenv("CUDABENCH_FAKE_GPU", old_.c_str(), 1); }

 private:
  std::string old_;
};

const Verdict* find(const std::vector<Verdict>& vs, const std::string& id) {
  for (const auto& v : vs)
    if (v.id == id) return &v;
  return nullptr;
}

}  // namespace

TEST(FakeDriver, TheFakesAreTheOnesLoaded) {
  const DriverInfo d = probe_driver();
  ASSERT_TRUE(d.libcuda_found) << d.libcuda_error;
  EXPECT_NE(d.libcuda_path.find("/fakes/cuda/libcuda.so.1"), std::string::npos) << d.libcuda_path;
  EXPECT_EQ(d.init_result, 0);
  EXPECT_EQ(d.device_count, 4);
  EXPECT_EQ(d.cuda_version, 13000);
  EXPECT_TRUE(d.nvml_found) << d.nvml_error;
  EXPECT_EQ(d.nvml_driver_version, "580.95.05");
  EXPECT_EQ(d.nvml_cuda_version, 13000);
}

TEST(FakeDriver, ListsEveryGpuWithDriverFacts) {
  const auto gpus = probe_gpus();
  ASSERT_EQ(gpus.size(), 4u);
  const char* buses[] = {"0000:19:00.0", "0000:3B:00.0", "0000:4C:00.0", "0000:5D:00.0"};
  for (int i = 0; i < 4; ++i) {
    const GpuDevice& g = gpus[static_cast<std::size_t>(i)];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA H200");
    EXPECT_EQ(g.cc_major, 9);
    EXPECT_EQ(g.cc_minor, 0);
    EXPECT_EQ(g.sms, 132);
    EXPECT_EQ(g.l2_bytes, 60LL << 20);
    EXPECT_EQ(g.pci_bus_id, buses[i]);
    EXPECT_NEAR(g.peak_bandwidth_bytes_per_s / 1e12, 4.917, 0.001);  // 3201 MHz x 6144 bit x 2 / 8
  }
}

TEST(FakeDriver, NvmlFactsAreMatchedByPciBusIdNotByIndex) {
  // NVML lists the GPUs in the reverse of CUDA's order (nvml_order).
  const auto gpus = probe_gpus();
  ASSERT_EQ(gpus.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const NvmlGpuInfo& n = gpus[static_cast<std::size_t>(i)].nvml;
    ASSERT_TRUE(n.found) << i;
    EXPECT_EQ(n.uuid, "GPU-0c4f2a1e-7d1b-4e8a-9a51-00000000000" + std::to_string(i));
    EXPECT_EQ(n.serial, "165232400000" + std::to_string(i));
  }
  const NvmlGpuInfo& n = gpus[0].nvml;
  EXPECT_EQ(n.persistence_mode, 1);
  EXPECT_EQ(n.app_sm_clock_mhz, 1980);
  EXPECT_EQ(n.max_mem_clock_mhz, 3201);
  EXPECT_DOUBLE_EQ(n.power_limit_w, 700);
  EXPECT_DOUBLE_EQ(n.power_default_w, 700);
  EXPECT_DOUBLE_EQ(n.power_max_w, 700);
  EXPECT_EQ(n.ecc_current, 1);
  EXPECT_EQ(n.ecc_volatile_uncorrected, 0);
  EXPECT_EQ(n.pcie_gen_max, 5);
  EXPECT_EQ(n.pcie_gen_gpu_max, -1);  // not in this fixture, and not needed
  EXPECT_EQ(n.peak_pcie_gen(), 5);
  EXPECT_EQ(n.pcie_width_max, 16);
  EXPECT_EQ(n.mig_current, 0);
  EXPECT_EQ(n.compute_mode, 0);
  // A healthy GPU has nothing to say but that its binary has SASS.
  EXPECT_TRUE(gpu_setup_verdicts(gpus[0]).empty());
}

TEST(FakeDriver, EveryMisconfigurationIsAVerdict) {
  Machine m(fixture("h200-misconfigured.json"));
  const auto gpus = probe_gpus();
  ASSERT_EQ(gpus.size(), 1u);
  const NvmlGpuInfo& n = gpus[0].nvml;
  EXPECT_DOUBLE_EQ(n.power_limit_w, 500);
  EXPECT_EQ(n.app_sm_clock_mhz, 1500);
  EXPECT_EQ(n.ecc_volatile_corrected, 12);
  EXPECT_EQ(n.ecc_volatile_uncorrected, 2);
  EXPECT_EQ(n.pcie_width, 8);
  // The peak is the system's gen 4, though the GPU could do gen 5.
  EXPECT_EQ(n.pcie_gen_max, 4);
  EXPECT_EQ(n.pcie_gen_gpu_max, 5);
  EXPECT_EQ(n.peak_pcie_gen(), 4);
  EXPECT_EQ(n.mig_current, 1);
  EXPECT_EQ(n.persistence_mode, 0);
  EXPECT_EQ(n.compute_mode, 3);
  const auto vs = gpu_setup_verdicts(gpus[0]);
  const std::pair<const char*, L> want[] = {
      {"gpu.power_limit", L::Warning}, {"gpu.app_clocks", L::Info},   {"gpu.ecc_errors", L::Warning},
      {"gpu.pcie_width", L::Warning},  {"gpu.mig", L::Warning},       {"gpu.persistence", L::Info},
      {"gpu.compute_mode", L::Info}};
  for (const auto& [id, level] : want) {
    const Verdict* v = find(vs, id);
    ASSERT_NE(v, nullptr) << id;
    EXPECT_EQ(v->level, level) << id << ": " << v->message;
    EXPECT_NE(v->message.find("GPU 0 (NVIDIA H200)"), std::string::npos) << v->message;
  }
  EXPECT_NE(find(vs, "gpu.power_limit")->message.find("500 W, below the default 700 W"), std::string::npos);
  EXPECT_NE(find(vs, "gpu.pcie_width")->message.find("x8 of x16"), std::string::npos);
  EXPECT_NE(find(vs, "gpu.ecc_errors")->message.find("2 uncorrected"), std::string::npos);
  EXPECT_EQ(vs.size(), 7u);
}

TEST(FakeDriver, ProhibitedGpusAreNotUsable) {
  Machine m(fixture("prohibited.json"));
  const DriverInfo d = probe_driver();
  const auto gpus = probe_gpus();
  ASSERT_EQ(gpus.size(), 1u);
  const auto setup = gpu_setup_verdicts(gpus[0]);  // held: find() points into it
  const Verdict* v = find(setup, "gpu.compute_mode");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->level, L::Error);
  RuntimeInfo rt;
  rt.compiled_in = true;
  rt.built_version = rt.loaded_version = 13000;
  const GpuStatus s = decide_gpu_status(d, rt, gpus.size(), 1);
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.reason.find("Prohibited"), std::string::npos) << s.reason;
  EXPECT_TRUE(decide_gpu_status(d, rt, 2, 1).usable);  // one of two is enough
}

TEST(FakeDriver, CuInitFailureIsReported) {
  Machine m(fixture("init-fails.json"));
  const DriverInfo d = probe_driver();
  EXPECT_TRUE(d.libcuda_found);
  EXPECT_EQ(d.init_result, 100);
  EXPECT_EQ(d.init_error, "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected");
  EXPECT_EQ(d.device_count, 0);
  EXPECT_TRUE(probe_gpus().empty());
  RuntimeInfo rt;
  rt.compiled_in = true;
  rt.built_version = rt.loaded_version = 13000;
  EXPECT_NE(decide_gpu_status(d, rt, 0).reason.find("cuInit: CUDA_ERROR_NO_DEVICE"), std::string::npos);
}

TEST(FakeDriver, AGpuNvmlDoesNotKnowHasNoNvmlFacts) {
  // The machine's GPU has no "nvml" part: NVML answers "not found" for it.
  const fs::path f = fs::temp_directory_path() / ("cudabench-fake-" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << R"({"gpus": [{"name": "Old GPU", "cc_major": 8, "cc_minor": 0, "sms": 108,
                        "pci_bus_id": "0000:01:00.0"}]})";
  Machine m(f.string());
  const auto gpus = probe_gpus();
  fs::remove(f);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, "Old GPU");
  EXPECT_EQ(gpus[0].memory_clock_khz, 0);  // attribute not answered
  EXPECT_EQ(gpus[0].peak_bandwidth_bytes_per_s, 0);
  EXPECT_FALSE(gpus[0].nvml.found);
  EXPECT_EQ(gpus[0].nvml.power_limit_w, -1);
  EXPECT_TRUE(gpu_setup_verdicts(gpus[0]).empty());
}

TEST(FakeTelemetry, SamplesAtStartMidRunAndEnd) {
  Machine m(fixture("h200-throttling.json"));
  // Sampled every tick (interval 0): three ticks and the end = the
  // fixture's four readings in order.
  Telemetry t("0000:19:00.0", std::chrono::milliseconds(0));
  t.tick();
  t.tick();
  t.tick();
  const auto s = t.finish();
  ASSERT_EQ(t.samples().size(), 4u);
  EXPECT_EQ(t.samples()[0].sm_clock_mhz, 345);
  EXPECT_EQ(t.samples()[3].clock_event_reasons, nvml::kReasonSwThermalSlowdown);
  EXPECT_EQ(s.samples, 4);
  // The idle start sample is left out of the means.
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz, (1980 + 1755 + 1650) / 3.0);
  EXPECT_DOUBLE_EQ(s.power_w, (690 + 700 + 698) / 3.0);
  EXPECT_DOUBLE_EQ(s.temp_c, (61 + 80 + 88) / 3.0);
  EXPECT_EQ(s.label(), "throttled: sw_power_cap,sw_thermal_slowdown");
}

TEST(FakeTelemetry, MidRunSamplesOnlyAfterTheInterval) {
  Machine m(fixture("h200-throttling.json"));
  Telemetry slow("0000:19:00.0", std::chrono::hours(1));
  EXPECT_TRUE(slow.samples().empty());  // nothing before the run starts
  for (int i = 0; i < 100; ++i) slow.tick();
  slow.finish();
  EXPECT_EQ(slow.samples().size(), 2u);  // start and end only
  Telemetry fast("0000:19:00.0", std::chrono::milliseconds(5));
  fast.tick();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  fast.tick();
  fast.tick();  // too soon after the last one
  fast.finish();
  EXPECT_EQ(fast.samples().size(), 3u);
}

TEST(FakeTelemetry, AThreadSamplesWhileTheLoopRuns) {
  Machine m(fixture("h200-throttling.json"));
  Telemetry t("0000:19:00.0", std::chrono::milliseconds(10));
  {
    cudabench::bench::TelemetryThread sampler(t);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the "loop"
  }
  const std::size_t during = t.samples().size();
  EXPECT_GE(during, 3u);   // the first at ~1 ms, then every 10 ms
  EXPECT_LE(during, 25u);  // not more often than the interval
  t.finish();
  EXPECT_EQ(t.samples().size(), during + 1);
  // The fixture's first reading is the idle one.
  EXPECT_EQ(t.samples()[0].clock_event_reasons, nvml::kReasonGpuIdle);
}

TEST(FakeTelemetry, UnknownGpuRecordsNothing) {
  Telemetry t("0000:99:00.0");
  t.tick();
  const auto s = t.finish();
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.label(), "");
  Telemetry none("");
  EXPECT_EQ(none.finish().samples, 0);
}
