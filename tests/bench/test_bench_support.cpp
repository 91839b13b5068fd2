// The pieces of bench that need no GPU: --devices and --l2-flush parsing,
// the wall-time bound of GPU benchmarks, check-once, the one-slot cache,
// per-device registration and names, stable names in results, and the
// telemetry summary.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "bench/bench_support.h"
#include "bench/cublas_shape.h"
#include "bench/stable_names.h"
#include "bench/telemetry.h"
#include "kernels/vector_add.cuh"

using namespace cudabench::bench;
namespace nvml = cudabench::env::nvml;

namespace {
std::string parse_error(const std::string& spec, int available) {
  try {
    parse_devices(spec, available);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Devices, AllAndLists) {
  EXPECT_EQ(parse_devices("all", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_devices("0,2", 4), (std::vector<int>{0, 2}));
  EXPECT_EQ(parse_devices("3", 4), (std::vector<int>{3}));
  EXPECT_EQ(parse_devices("2,0", 4), (std::vector<int>{2, 0}));  // the order given
}

TEST(Devices, BadListsNameTheProblem) {
  EXPECT_NE(parse_error("4", 4).find("there is no GPU 4 (4 usable: 0..3)"), std::string::npos);
  EXPECT_NE(parse_error("0,0", 4).find("GPU 0 is listed twice"), std::string::npos);
  EXPECT_NE(parse_error("x", 4).find("'x' is not a device number"), std::string::npos);
  EXPECT_NE(parse_error("1,", 4).find("not a device number"), std::string::npos);
  EXPECT_NE(parse_error("-1", 4).find("not a device number"), std::string::npos);
  EXPECT_NE(parse_error("1.5", 4).find("not a device number"), std::string::npos);
  EXPECT_NE(parse_error("", 4).find("empty"), std::string::npos);
  EXPECT_NE(parse_error("all", 0).find("no GPU"), std::string::npos);
  // Every message starts with the flag and the input.
  EXPECT_EQ(parse_error("0,9", 2).rfind("--devices 0,9: ", 0), 0u);
}

TEST(L2Flush, NamesRoundTrip) {
  for (L2Flush f : {L2Flush::Read, L2Flush::Memset, L2Flush::None}) EXPECT_EQ(parse_l2_flush(l2_flush_name(f)), f);
  EXPECT_FALSE(parse_l2_flush("write").has_value());
  EXPECT_EQ(RunOptions{}.l2_flush, L2Flush::Read);  // the default
}

// Google Benchmark's flags are read once: what bench needs is taken out,
// the output file becomes a sink, and everything is passed on in order.
TEST(BenchmarkFlags, ReadOnceAndPassedOn) {
  BenchmarkFlags f;
  EXPECT_EQ(parse_benchmark_flags({"--benchmark_filter=^VectorAdd/", "--benchmark_out=r.json",
                                   "--benchmark_list_tests=false", "--benchmark_min_time=0.1", "--other"},
                                  &f),
            "");
  EXPECT_EQ(f.filter, "^VectorAdd/");
  EXPECT_EQ(f.out_path, "r.json");
  EXPECT_EQ(f.out_format, "json");
  EXPECT_FALSE(f.list_only);
  EXPECT_EQ(f.user_min_time, 0.1);
  EXPECT_EQ(f.pass_on, (std::vector<std::string>{"--benchmark_filter=^VectorAdd/", "--benchmark_out=/dev/null",
                                                 "--benchmark_list_tests=false", "--benchmark_min_time=0.1",
                                                 "--other"}));
  BenchmarkFlags bad;
  EXPECT_EQ(parse_benchmark_flags({"--benchmark_filter=-(x"}, &bad).rfind("--benchmark_filter=-(x: expected a "
                                                                         "regular expression",
                                                                         0),
            0u);
  EXPECT_EQ(parse_benchmark_flags({"--benchmark_list_tests"}, &bad), "");
  EXPECT_TRUE(bad.list_only);
}

// The timed phase of a benchmark runs about min_time / gpu iterations of
// (gpu + overhead) wall time each.
double timed_wall(double gpu, double overhead) {
  return bounded_min_time(gpu, overhead) / gpu * (gpu + overhead);
}

TEST(WallTimeBound, KeepsTinyKernelsWithinBudget) {
  // An H200: 4.9 TB/s, a 120 MiB read flush (~26 us) plus launch and sync.
  const double peak = 4.9e12, overhead = 2 * 60.0 * (1 << 20) / peak + kLaunchSyncOverhead;
  for (auto n : vector_sizes()) {
    const double gpu = std::max(2e-6, static_cast<double>(n) * cudabench::vector_add::kBytesPerElement / peak);
    EXPECT_LE(timed_wall(gpu, overhead), kGpuWallBudget * 1.0001) << "n = " << n;
    EXPECT_LE(bounded_min_time(gpu, overhead), kDefaultMinTime);
  }
  // At 4096 elements the default 0.5 s of GPU time would take ~23 s of wall time.
  EXPECT_GT(kDefaultMinTime / 2e-6 * (2e-6 + overhead), 10.0);
  EXPECT_LT(timed_wall(2e-6, overhead), 0.31);
}

TEST(WallTimeBound, LongKernelsKeepTheDefaultCap) {
  EXPECT_DOUBLE_EQ(bounded_min_time(1.0, 0.0, 10.0), kDefaultMinTime);
  EXPECT_DOUBLE_EQ(bounded_min_time(1.0, 0.0), kGpuWallBudget);
  EXPECT_DOUBLE_EQ(bounded_min_time(0.0, 1e-5), kDefaultMinTime);  // unknown: Google Benchmark's default
  // More overhead, shorter minimum time.
  EXPECT_LT(bounded_min_time(1e-5, 1e-4), bounded_min_time(1e-5, 1e-5));
}

// --benchmark_min_time is seconds of GPU work: a rotated row of 256
// launches per iteration counts one launch's time per iteration, so its
// minimum is divided among them (0.1 s at 4096 elements would otherwise be
// 40,000 iterations of 256 launches: a minute).
TEST(WallTimeBound, TheUsersMinTimeIsGpuWorkForRotatedRowsToo) {
  RunOptions run;
  EXPECT_EQ(row_min_time(run, 2e-6, 1e-3, 256), bounded_min_time(2e-6, 1e-3));
  run.user_min_time = 0.1;
  EXPECT_FALSE(row_min_time(run, 2e-6, 1e-3).has_value());  // the flag as given
  EXPECT_DOUBLE_EQ(*row_min_time(run, 2e-6, 1e-3, 256), 0.1 / 256);
}

TEST(CacheLabel, OnlyWorkingSetsWellBeyondL2AreDramBound) {
  const double l2 = 60.0 * (1 << 20);  // an H200
  const double per = cudabench::vector_add::kBytesPerElement;
  EXPECT_EQ(cache_label(per * (1 << 20), l2), "working set 0.2x L2: not DRAM-bound");
  EXPECT_EQ(cache_label(per * 1e7, l2), "working set 1.9x L2: not DRAM-bound");  // the headline size
  EXPECT_EQ(cache_label(per * (1 << 27), l2), "");                              // 26x L2
  EXPECT_EQ(cache_label(8 * l2, l2), "");
  EXPECT_NE(cache_label(8 * l2 - 1, l2), "");
  EXPECT_EQ(cache_label(1000, 0), "");  // L2 unknown: no claim either way
}

// The labels the GPU rows get, word for word (the GPU tests match them
// through these functions and constants).
TEST(Labels, FlushLatencyAndJoin) {
  EXPECT_EQ(flush_label(L2Flush::Read), "L2 flushed (read)");
  EXPECT_EQ(flush_label(L2Flush::Memset), "L2 flushed (memset)");
  EXPECT_EQ(flush_label(L2Flush::None), "L2 not flushed");
  EXPECT_NE(cache_label(1000, 60e6).find(kNotDramBound), std::string::npos);
  // 4096 floats added on an H200 (48 KiB at 4.8 TB/s): latency-bound; 2^20
  // (12.6 MB, 2.6 us) too; 2^22 (50 MB, 10 us) is not.
  const double h200 = 4.8e12, per = cudabench::vector_add::kBytesPerElement;
  EXPECT_EQ(latency_label(per * 4096, h200), "latency-bound: 0.01 us of traffic at peak");
  EXPECT_EQ(latency_label(per * (1 << 20), h200).rfind(kLatencyBoundLabel, 0), 0u);
  EXPECT_EQ(latency_label(per * (1 << 22), h200), "");
  EXPECT_EQ(latency_label(per * 4096, 0), "");  // peak unknown: no claim
  // Against a measured overhead: ten of them. 2^22 (10.5 us at peak) is
  // latency-bound beside a 2.1 us launch turnaround, 2^24 (42 us) is not.
  EXPECT_EQ(latency_label(per * (1 << 22), h200, 2.1e-6),
            "latency-bound: 10 us of traffic at peak, under 10x the 2.1 us launch overhead measured here");
  EXPECT_EQ(latency_label(per * (1 << 24), h200, 2.1e-6), "");
  EXPECT_EQ(latency_label(per * (1 << 22), h200, 0.5e-6), "");  // 5 us is enough beside 0.5 us
  // A 16 KB copy over PCIe gen 5 x16 (63 GB/s): latency-bound; 4 MB is not.
  EXPECT_NE(latency_label(16384, 63e9), "");
  EXPECT_EQ(latency_label(4194304, 63e9), "");
  EXPECT_EQ(joined_label("a", "b"), "a; b");
  EXPECT_EQ(joined_label("", "b"), "b");
  EXPECT_EQ(joined_label("a", ""), "a");
}

// sysfs's local_cpulist, and anything else refused whole.
TEST(CpuList, RangesAndSinglesInOrder) {
  EXPECT_EQ(cpu_list("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpu_list("0-1,8,10-11"), (std::vector<int>{0, 1, 8, 10, 11}));
  EXPECT_EQ(cpu_list("5"), (std::vector<int>{5}));
  for (const char* bad : {"", "3-1", "a", "1,", ",1", "1-", "-1", "1 2", " 1", "0-99999999", "1-2-3", "1,,2"})
    EXPECT_TRUE(cpu_list(bad).empty()) << "'" << bad << "'";
}

TEST(CheckOnce, PassesAreRememberedFailuresAreNot) {
  int calls = 0;
  EXPECT_TRUE(check_once("pass", [&] { ++calls; return true; }));
  EXPECT_TRUE(check_once("pass", [&] { ++calls; return true; }));
  EXPECT_EQ(calls, 1);
  int fails = 0;
  EXPECT_FALSE(check_once("fail", [&] { ++fails; return false; }));
  EXPECT_FALSE(check_once("fail", [&] { ++fails; return false; }));
  EXPECT_EQ(fails, 2);
}

TEST(OneSlotCache, KeepsOneAndFreesItBeforeMakingTheNext) {
  static int alive = 0, most = 0;
  struct Counted {
    int id;
    explicit Counted(int i) : id(i) { most = std::max(most, ++alive); }
    ~Counted() { --alive; }
  };
  OneSlotCache<Counted> cache;
  int made = 0;
  auto make = [&](int id) { return [&made, id] { ++made; return std::make_unique<Counted>(id); }; };
  EXPECT_EQ(cache.get("a", make(1)).id, 1);
  EXPECT_EQ(cache.get("a", make(2)).id, 1);  // same key: kept
  EXPECT_EQ(cache.get("b", make(3)).id, 3);  // new key: replaced
  EXPECT_EQ(made, 2);
  EXPECT_EQ(most, 1);  // never two alive at once (1.5 GB buffers)
  cache.clear();
  EXPECT_EQ(alive, 0);
}

namespace {
// Runs the registered benchmarks matching `filter` and returns the names a
// stable-name reporter printed, one per line.
std::string run_names(const std::string& filter) {
  auto inner = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  StableNames reporter(std::move(inner));
  std::ostringstream out, err;
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&err);
  benchmark::RunSpecifiedBenchmarks(&reporter, filter);
  return out.str();
}
}  // namespace

TEST(PerDevice, OneDeviceKeepsNamesSeveralAddDev) {
  std::vector<int> seen;
  auto fn = [&seen](benchmark::State& st, int dev) {
    seen.push_back(dev);
    for (auto _ : st) {
    }
  };
  auto settings = [](Registered* b, std::int64_t, int) { b->Iterations(1); };
  RunOptions one, two;
  one.devices = {2};
  two.devices = {0, 3};
  register_per_device(one, "TestOne/x", "n", {4}, fn, settings);
  register_per_device(two, "TestTwo/x", "n", {4, 8}, fn, settings);

  std::string names = run_names("^TestOne/");
  EXPECT_NE(names.find("TestOne/x/n:4 "), std::string::npos) << names;
  EXPECT_EQ(names.find("iterations:"), std::string::npos) << names;  // StableNames drops it
  EXPECT_EQ(names.find("dev:"), std::string::npos) << names;
  EXPECT_EQ(seen, (std::vector<int>{2}));

  seen.clear();
  names = run_names("^TestTwo/");
  for (const char* n : {"TestTwo/x/n:4/dev:0 ", "TestTwo/x/n:4/dev:3 ", "TestTwo/x/n:8/dev:0 ", "TestTwo/x/n:8/dev:3 "})
    EXPECT_NE(names.find(n), std::string::npos) << n << " in\n" << names;
  EXPECT_EQ(seen, (std::vector<int>{0, 3, 0, 3}));
}

TEST(StableNames, ResultsCarryNoMinTime) {
  auto* b = benchmark::RegisterBenchmark("TestStable/x", [](benchmark::State& st) {
    for (auto _ : st) st.SetIterationTime(1e-3);
  });
  b->ArgName("n")->Arg(4096)->UseManualTime()->MinTime(0.004);
  const std::string names = run_names("^TestStable/");
  EXPECT_NE(names.find("TestStable/x/n:4096/manual_time"), std::string::npos) << names;
  EXPECT_EQ(names.find("min_time"), std::string::npos) << names;
  EXPECT_EQ(stable_name("VectorAdd/cuda_v4/n:4096/dev:1/min_time:0.013/manual_time"),
            "VectorAdd/cuda_v4/n:4096/dev:1/manual_time");
  EXPECT_EQ(stable_name("VectorAdd/cpu_scalar/n:4096/real_time"), "VectorAdd/cpu_scalar/n:4096/real_time");
  EXPECT_NE(stable_file_reporter("json"), nullptr);
  EXPECT_EQ(stable_file_reporter("yaml"), nullptr);
}

namespace {
nvml::Sample sample(int sm, int mem, double w, int t, std::uint64_t reasons, bool known = true) {
  nvml::Sample s;
  s.sm_clock_mhz = sm;
  s.mem_clock_mhz = mem;
  s.power_w = w;
  s.temp_c = t;
  s.reasons_known = known;
  s.clock_event_reasons = reasons;
  return s;
}
}  // namespace

TEST(TelemetrySummary, IdleSamplesDoNotCountWhenBusyOnesExist) {
  const auto t = summarize({sample(345, 3201, 90, 33, nvml::kReasonGpuIdle), sample(1980, 3201, 690, 61, 0),
                            sample(1760, 3201, 700, 80, nvml::kReasonSwPowerCap)});
  EXPECT_EQ(t.samples, 3);
  EXPECT_DOUBLE_EQ(t.sm_clock_mhz, (1980 + 1760) / 2.0);
  EXPECT_DOUBLE_EQ(t.power_w, 695);
  EXPECT_DOUBLE_EQ(t.temp_c, 70.5);
  EXPECT_EQ(t.throttle_reasons, nvml::kReasonSwPowerCap);  // idle is not throttling
  EXPECT_EQ(t.label(), "throttled: sw_power_cap");
}

TEST(TelemetrySummary, AllIdleAndUnknowns) {
  auto t = summarize({sample(345, 3201, 90, 33, nvml::kReasonGpuIdle), sample(405, 3201, -1, 35, nvml::kReasonGpuIdle)});
  EXPECT_DOUBLE_EQ(t.sm_clock_mhz, 375);  // nothing busy: every sample counts
  EXPECT_DOUBLE_EQ(t.power_w, 90);        // -1 is "not answered", not a value
  EXPECT_EQ(t.label(), "");
  t = summarize({});
  EXPECT_EQ(t.samples, 0);
  EXPECT_EQ(t.sm_clock_mhz, -1);
  EXPECT_EQ(telemetry_counters(t).size(), 0u);
  t = summarize({sample(-1, -1, -1, -1, 0, false)});
  EXPECT_EQ(telemetry_counters(t).size(), 0u);
}

TEST(TelemetrySummary, CountersAndLabel) {
  const auto t = summarize({sample(1980, 3201, 650, 60, nvml::kReasonHwThermalSlowdown | nvml::kReasonSwThermalSlowdown)});
  const auto c = telemetry_counters(t);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(c.at("sm_clock_mhz"), 1980);
  EXPECT_DOUBLE_EQ(c.at("mem_clock_mhz"), 3201);
  EXPECT_DOUBLE_EQ(c.at("power_w"), 650);
  EXPECT_DOUBLE_EQ(c.at("temp_c"), 60);
  EXPECT_EQ(t.label(), "throttled: sw_thermal_slowdown,hw_thermal_slowdown");
  EXPECT_EQ(labelled("L2 flushed (read)", t), "L2 flushed (read); throttled: sw_thermal_slowdown,hw_thermal_slowdown");
  EXPECT_EQ(labelled("", t), "throttled: sw_thermal_slowdown,hw_thermal_slowdown");
  EXPECT_EQ(labelled("L2 flushed (read)", summarize({})), "L2 flushed (read)");
}

TEST(TelemetrySummary, OnlySlowdownsAreThrottling) {
  // Application clocks, sync boost and the display clock are settings.
  auto t = summarize({sample(1980, 3201, 650, 60,
                             nvml::kReasonApplicationsClocksSetting | nvml::kReasonSyncBoost |
                                 nvml::kReasonDisplayClockSetting)});
  EXPECT_EQ(t.throttle_reasons, 0u);
  EXPECT_EQ(t.label(), "");
  t = summarize({sample(1700, 3201, 700, 70, nvml::kReasonHwPowerBrakeSlowdown | nvml::kReasonSyncBoost),
                 sample(1600, 3201, 700, 70, nvml::kReasonHwSlowdown)});
  EXPECT_EQ(t.label(), "throttled: hw_slowdown,hw_power_brake_slowdown");
}

TEST(Rotation, SetsKeepEveryLaunchsInputsOutOfL2) {
  const double l2 = 60e6;  // an H200's
  // 1e7 elements (120 MB): two sets, the other moving 2x L2 between uses;
  // 1 ms of launches a pair.
  Rotation r = rotation(120e6, l2, 25e-6);
  EXPECT_EQ(r.sets, 2);
  EXPECT_GE((r.sets - 1) * 120e6, kRotationL2s * l2);
  EXPECT_EQ(r.launches, 40);
  // 4096 elements (48 KiB): 2443 sets, the fewest that keep 2x L2 between
  // two uses of one; at most 256 launches a pair, however short each is.
  r = rotation(49152, l2, 2e-6);
  EXPECT_EQ(r.sets, 1 + 2442);
  EXPECT_GE((r.sets - 1) * 49152.0, kRotationL2s * l2);
  EXPECT_LT((r.sets - 2) * 49152.0, kRotationL2s * l2);
  EXPECT_EQ(r.launches, kMaxLaunchesPerTiming);
  EXPECT_EQ(r.label(), "back to back: 2443 buffer sets in turn, 256 launches per event pair");
  // A launch longer than the pair's minimum: one launch a pair.
  EXPECT_EQ(rotation(400e6, l2, 2e-3).launches, 1);
}

TEST(Rotation, EachRowReportsOneLaunchsTimeSoItsBytesAreEveryLaunchs) {
  // A pair of 40 launches of 1e7 elements in 1 ms: 25 us per launch, and
  // 12 bytes an element per launch gives the pair's bytes over its time.
  const double per_launch = per_launch_seconds(1e-3, 40);
  EXPECT_DOUBLE_EQ(per_launch, 25e-6);
  EXPECT_DOUBLE_EQ(12.0 * 1e7 / per_launch, 40 * 12.0 * 1e7 / 1e-3);
  EXPECT_DOUBLE_EQ(per_launch_seconds(1e-3, 1), 1e-3);
}

// The GPU tests find a row's rotation in its label (which telemetry may
// extend): the label and its reading are one format.
TEST(Rotation, ItsLabelNamesItAndIsReadBack) {
  const Rotation r = rotation(49152, 60e6, 2e-6);
  EXPECT_EQ(rotation_of_label(r.label()), r);
  EXPECT_EQ(rotation_of_label(r.label() + "; throttled: sw_power_cap"), r);
  EXPECT_EQ(rotation_of_label(joined_label(r.label(), latency_label(49152, 4.8e12))), r);
  EXPECT_FALSE(rotation_of_label("L2 flushed (read)").has_value());
  EXPECT_FALSE(rotation_of_label("back to back: 2 buffer sets, 40 launches per event pair").has_value());
  EXPECT_FALSE(rotation_of_label("").has_value());
}

TEST(Rotation, OneLaunchFrom8xL2OrWithoutAnL2) {
  EXPECT_EQ(rotation(8 * 60e6, 60e6, 1e-4).sets, 0);
  EXPECT_EQ(rotation(12.0 * 134217728, 60e6, 3e-4).sets, 0);
  EXPECT_EQ(rotation(120e6, 0, 25e-6).sets, 0);
  EXPECT_EQ(rotation(120e6, 0, 25e-6).launches, 1);
  EXPECT_EQ(rotation(8 * 60e6 - 1, 60e6, 1e-4).sets, 2);
}

TEST(Rotation, StrideKeepsEverySetAligned) {
  EXPECT_EQ(rotation_stride(4096), 4096u);
  EXPECT_EQ(rotation_stride(10'000'000), 10'000'000u);
  EXPECT_EQ(rotation_stride(1000), 1024u);
  EXPECT_EQ(rotation_stride(1) * sizeof(float) % 256, 0u);
}

TEST(BenchJson, BareNonFiniteNumbersBecomeNull) {
  // As Google Benchmark 1.7.1 writes the cv of a counter whose mean is 0.
  const std::string in = R"({"name": "NaN \"Infinity\" row", "cv": NaN, "a": -Infinity, "b": [Infinity, -NaN, 1.5],)"
                         R"( "label": "NaN"})";
  EXPECT_EQ(bare_nonfinite_to_null(in),
            R"({"name": "NaN \"Infinity\" row", "cv": null, "a": null, "b": [null, null, 1.5], "label": "NaN"})");
  EXPECT_EQ(bare_nonfinite_to_null(R"({"x": -1e-3, "y": "a\\"})"), R"({"x": -1e-3, "y": "a\\"})");
}

TEST(TelemetrySummary, ReasonNames) {
  EXPECT_EQ(nvml::reason_names(0), "");
  EXPECT_EQ(nvml::reason_names(nvml::kReasonGpuIdle | nvml::kReasonSwPowerCap), "gpu_idle,sw_power_cap");
  EXPECT_EQ(nvml::reason_names(0x1000 | nvml::kReasonHwSlowdown), "hw_slowdown,0x1000");
}

TEST(HostArray, SameLayoutEveryTimeAndNoSharedLowAddressBits) {
  using cudabench::bench::HostArray;
  for (std::size_t n : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
    HostArray a(n, HostArray::kOffsetA), b(n, HostArray::kOffsetB), c(n, HostArray::kOffsetC);
    ASSERT_EQ(a.size(), n);
    const auto low = [](const HostArray& x) { return reinterpret_cast<std::uintptr_t>(x.data()) % 4096; };
    EXPECT_EQ(low(a), HostArray::kOffsetA);
    EXPECT_EQ(low(b), HostArray::kOffsetB);
    EXPECT_EQ(low(c), HostArray::kOffsetC);
    // From 2 MiB up, the page the array starts in is a huge page's first.
    if (n * sizeof(float) >= (2u << 20))
      EXPECT_EQ((reinterpret_cast<std::uintptr_t>(a.data()) - HostArray::kOffsetA) % (2u << 20), 0u);
    a.data()[n - 1] = 1.0f;  // the whole range is ours
    EXPECT_EQ(*(a.end() - 1), 1.0f);
  }
  EXPECT_THROW(HostArray(16, 4096), std::invalid_argument);
  EXPECT_THROW(HostArray(16, 3), std::invalid_argument);
}

// VectorAdd/cublas_geam's shape for every size bench runs: one matrix with
// a column of whole warps, about square, no second call; and for sizes no
// such matrix holds, the rest in a column of its own.
TEST(GeamShape, EverySizeIsOneMatrixOfWholeWarps) {
  for (auto n64 : vector_sizes()) {
    const auto n = static_cast<std::size_t>(n64);
    const GeamShape g = geam_shape(n);
    EXPECT_EQ(g.rows * g.cols, n) << n;
    EXPECT_EQ(g.rest, 0u) << n;
    EXPECT_EQ(g.rows % 32, 0u) << n;
    EXPECT_GE(g.rows * g.rows, n) << n;   // a column of at least sqrt(n)
    EXPECT_LE(g.rows, 4 * g.cols) << n;   // and not a column of everything
  }
  EXPECT_EQ(geam_shape(std::size_t{1} << 27).rows, 16384u);
  EXPECT_EQ(geam_shape(10'000'000).rows, 3200u);
  EXPECT_EQ(geam_label(10'000'000), "cublasSgeam on a 3200 x 3125 matrix (lda 3200)");
}

TEST(GeamShape, TheRestOfAnAwkwardSizeIsASecondCall) {
  for (std::size_t n : {std::size_t{33}, std::size_t{100}, std::size_t{1000003}, std::size_t{4294967311}}) {  // primes and near-primes
    const GeamShape g = geam_shape(n);
    EXPECT_EQ(g.rows * g.cols + g.rest, n) << n;
    EXPECT_LT(g.rest, g.rows) << n;
    EXPECT_EQ(g.rows % 32, 0u) << n;
  }
  EXPECT_EQ(geam_label(1000003), "cublasSgeam on a 1024 x 976 matrix (lda 1024) and a 579 x 1 one for the rest");
  for (std::size_t n : {1u, 7u, 31u}) EXPECT_EQ(geam_shape(n).rows * geam_shape(n).cols, n) << n;
  EXPECT_EQ(geam_shape(0).cols, 0u);
}
