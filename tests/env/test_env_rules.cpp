// The environment rules on hand-made data: versions, peak bandwidth, GPU
// usability and every verdict.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "env/probe.h"
#include "env/report.h"
#include "doctor/rules.h"

using namespace cudabench::env;
using namespace cudabench::doctor;
using L = Verdict::Level;
namespace fs = std::filesystem;

TEST(Version, ParsesAndCompares) {
  EXPECT_EQ(Version::parse("13.0.88").str(), "13.0.88");
  EXPECT_EQ(Version::parse("V12.9.41").major_minor(), "12.9");
  EXPECT_EQ(Version::parse("580.95.05").patch, 5);
  EXPECT_FALSE(Version::parse("abc").known());
  EXPECT_EQ(Version::from_cuda_int(13000).major_minor(), "13.0");
  EXPECT_EQ(Version::from_cuda_int(12090).major_minor(), "12.9");
  EXPECT_TRUE(Version::parse("525.60.13") < Version::parse("580.65.06"));
  EXPECT_TRUE(Version::parse("580.65.06") == Version::parse("580.65.6"));
}

TEST(PeakBandwidth, ClockTimesBusTimesTwo) {
  // H100 SXM: 2619 MHz x 5120 bit x 2 / 8 = 3.352 TB/s.
  EXPECT_DOUBLE_EQ(peak_bandwidth_bytes_per_s(2'619'000, 5120), 2'619'000.0 * 1000 * 2 * 5120 / 8);
  EXPECT_NEAR(peak_bandwidth_bytes_per_s(2'619'000, 5120) / 1e12, 3.352, 0.001);
  EXPECT_EQ(peak_bandwidth_bytes_per_s(0, 5120), 0);
  EXPECT_EQ(peak_bandwidth_bytes_per_s(1000, -1), 0);
}

namespace {
RuntimeInfo cuda13() {
  RuntimeInfo r;
  r.compiled_in = true;
  r.built_version = r.loaded_version = 13000;
  return r;
}
DriverInfo good_driver() {
  DriverInfo d;
  d.libcuda_found = true;
  d.libcuda_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05";
  d.libcuda_file_version = "580.95.05";
  d.kernel_module_version = "580.95.05";
  d.cuda_version = 13000;
  d.init_result = 0;
  d.device_count = 1;
  d.device_nodes_present = true;
  return d;
}
}  // namespace

TEST(GpuStatus, NoDriverSaysLibcudaNotFound) {
  DriverInfo d;  // nothing found
  const GpuStatus s = decide_gpu_status(d, cuda13(), 0);
  EXPECT_FALSE(s.usable);
  EXPECT_EQ(s.reason, "no NVIDIA driver: libcuda.so.1 not found");
}

TEST(GpuStatus, StubIsNamed) {
  DriverInfo d;
  d.libcuda_is_stub = true;
  d.libcuda_path = "/usr/local/cuda/lib64/stubs/libcuda.so";
  const GpuStatus s = decide_gpu_status(d, cuda13(), 0);
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.reason.find("stub"), std::string::npos);
  EXPECT_NE(s.reason.find("/usr/local/cuda/lib64/stubs/libcuda.so"), std::string::npos);
}

TEST(GpuStatus, HiddenByVisibleDevices) {
  DriverInfo d = good_driver();
  d.visible_devices_set = true;
  d.visible_devices = "";
  EXPECT_NE(decide_gpu_status(d, cuda13(), 1).reason.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
}

TEST(GpuStatus, InitFailureAndOldDriverAndNoBuild) {
  DriverInfo d = good_driver();
  d.init_result = 100;
  d.init_error = "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected";
  EXPECT_NE(decide_gpu_status(d, cuda13(), 0).reason.find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
  DriverInfo old = good_driver();
  old.cuda_version = 12020;
  const GpuStatus s = decide_gpu_status(old, cuda13(), 1);
  EXPECT_FALSE(s.usable);
  EXPECT_NE(s.reason.find("only CUDA 12.2"), std::string::npos);
  EXPECT_FALSE(decide_gpu_status(good_driver(), RuntimeInfo{}, 1).usable);
  EXPECT_TRUE(decide_gpu_status(good_driver(), cuda13(), 1).usable);
}

// A 570 driver (CUDA 12.8) with CUDA 13.0 kernels and a CUDA 12.8 LibTorch,
// the stack setup.sh chooses there: the kernels cannot run, LibTorch can.
TEST(GpuStatus, LibTorchIsJudgedByItsOwnCuda) {
  DriverInfo d = good_driver();
  d.cuda_version = 12080;
  TorchInfo cu128;
  cu128.compiled_in = true;
  cu128.cuda_version = 12080;
  TorchInfo cu130 = cu128;
  cu130.cuda_version = 13000;
  EXPECT_FALSE(decide_gpu_status(d, cuda13(), 1).usable);
  EXPECT_TRUE(decide_torch_gpu_status(d, cu128, 1).usable);
  EXPECT_NE(decide_torch_gpu_status(d, cu130, 1).reason.find("only CUDA 12.8, LibTorch needs CUDA 13.0"), std::string::npos);
  EXPECT_EQ(decide_torch_gpu_status(d, TorchInfo{}, 1).reason, "this build has no LibTorch");
  EXPECT_FALSE(decide_torch_gpu_status(DriverInfo{}, cu128, 0).usable);  // no driver
  EXPECT_FALSE(decide_torch_gpu_status(d, cu128, 1, 1).usable);          // its one GPU Prohibited
}

TEST(Verdicts, DriverRuntimeCompatibility) {
  EXPECT_EQ(driver_runtime_verdict(13000, "580.95.05", 13000).level, L::Ok);
  EXPECT_EQ(driver_runtime_verdict(13010, "590.1", 13000).level, L::Ok);
  // Minor-version compatibility: 12.9 runtime on a 12.2 driver.
  const Verdict minor = driver_runtime_verdict(12020, "535.104.05", 12090);
  EXPECT_EQ(minor.level, L::Warning);
  EXPECT_NE(minor.message.find("minor-version compatibility"), std::string::npos);
  EXPECT_NE(minor.fix.find("575.51.03"), std::string::npos);
  // Below the 12.x floor.
  EXPECT_EQ(driver_runtime_verdict(12000, "520.00.00", 12040).level, L::Error);
  // Across majors: 13.0 runtime, driver only knows 12.4.
  const Verdict major = driver_runtime_verdict(12040, "550.54.14", 13000);
  EXPECT_EQ(major.level, L::Error);
  EXPECT_NE(major.message.find("cudaErrorInsufficientDriver"), std::string::npos);
  EXPECT_NE(major.fix.find("580.65.06"), std::string::npos);
  EXPECT_EQ(driver_runtime_verdict(0, "", 13000).level, L::Info);
}

TEST(Verdicts, MinimumDriverTable) {
  EXPECT_EQ(min_driver_for_toolkit(Version::parse("13.0.88")), "580.65.06");
  EXPECT_EQ(min_driver_for_toolkit(Version::parse("12.4")), "550.54.14");
  EXPECT_EQ(min_driver_for_toolkit(Version::parse("99.0")), "");
  EXPECT_EQ(min_driver_for_major(12), "525.60.13");
}

TEST(Verdicts, ArchitectureSassPtxOrNothing) {
  const std::string ours = "80-real;86-real;89-real;90-real;100-real;120";
  EXPECT_EQ(arch_verdict(ours, 9, 0, "NVIDIA H200").level, L::Ok);
  EXPECT_EQ(arch_verdict(ours, 8, 7, "Orin").level, L::Ok);  // sm_86 SASS runs on 8.7
  // Only PTX 120 is <= 12.1: JIT.
  const Verdict jit = arch_verdict(ours, 12, 1, "GB10");
  EXPECT_EQ(jit.level, L::Ok);  // 120-real SASS runs on 12.1
  EXPECT_EQ(arch_verdict("80-real;90-virtual", 10, 0, "B200").level, L::Warning);
  EXPECT_EQ(arch_verdict(ours, 7, 5, "T4").level, L::Error);
  // Arch-specific SASS runs on that chip only.
  EXPECT_EQ(arch_verdict("90a-real", 9, 0, "H100").level, L::Ok);
  EXPECT_EQ(arch_verdict("90a-real", 10, 0, "B200").level, L::Error);
  // SASS does not cross majors.
  EXPECT_EQ(arch_verdict("90-real", 10, 0, "B200").level, L::Error);
  EXPECT_EQ(arch_verdict("native", 9, 0, "H100").level, L::Info);
}

TEST(Verdicts, ModuleVersusLibraryMismatch) {
  DriverInfo d = good_driver();
  EXPECT_EQ(module_library_verdict(d).level, L::Ok);
  d.kernel_module_version = "570.86.15";
  // A newer libcuda that cuInit accepts is forward compatibility, no fault.
  const Verdict fc = module_library_verdict(d);
  EXPECT_EQ(fc.level, L::Info);
  EXPECT_NE(fc.message.find("forward compatibility"), std::string::npos) << fc.message;
  // When cuInit fails beside the mismatch, the mismatch is the lead.
  d.init_result = 999;
  const Verdict v = module_library_verdict(d);
  EXPECT_EQ(v.level, L::Error);
  EXPECT_NE(v.message.find("570.86.15"), std::string::npos);
  EXPECT_NE(v.fix.find("reboot"), std::string::npos);
}

namespace {
Report base_report() {
  Report r;
  r.runtime = cuda13();
  r.build.cuda_toolkit_version = "13.0.88";
  r.build.cuda_toolkit_root = "/usr/local/cuda";
  r.build.nvcc_path = "/usr/local/cuda/bin/nvcc";
  r.build.cuda_architectures = "80-real;90-real";
  return r;
}
const Verdict* find(const std::vector<Verdict>& v, const std::string& id) {
  for (const auto& x : v)
    if (x.id == id) return &x;
  return nullptr;
}
}  // namespace

TEST(Verdicts, NoDriverIsAWarningThatCpuStillRuns) {
  Report r = base_report();
  const auto v = evaluate(r);
  const Verdict* m = find(v, "driver.missing");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->level, L::Warning);
  EXPECT_NE(m->message.find("CPU benchmarks run"), std::string::npos);
  r.verdicts = v;
  EXPECT_FALSE(has_errors(r));
}

TEST(Verdicts, TorchCudaDiffersAndNvccOnPathDiffers) {
  Report r = base_report();
  r.torch.compiled_in = true;
  r.torch.cuda_version = 12080;
  r.nvcc_on_path = "/opt/conda/bin/nvcc";
  ToolkitInstall conda;
  conda.root = "/opt/conda";
  conda.version = Version::parse("12.4.131");
  conda.found_via = {"PATH (first nvcc)"};
  r.toolkits.push_back(conda);
  const auto v = evaluate(r);
  const Verdict* t = find(v, "torch.cuda_differs");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, L::Warning);
  EXPECT_NE(t->message.find("12.8"), std::string::npos);
  const Verdict* n = find(v, "nvcc.path");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->level, L::Warning);
  EXPECT_NE(n->message.find("12.4.131"), std::string::npos);
}

TEST(Verdicts, GpuWithoutSassIsAnErrorAndFailsCheck) {
  Report r = base_report();
  r.driver = good_driver();
  GpuDevice g;
  g.name = "Tesla T4";
  g.cc_major = 7;
  g.cc_minor = 5;
  r.gpus.push_back(g);
  r.verdicts = evaluate(r);
  const Verdict* a = find(r.verdicts, "binary.arch");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->level, L::Error);
  EXPECT_TRUE(has_errors(r));
  // And the JSON form carries it.
  const auto j = to_json(r);
  EXPECT_TRUE(j["has_errors"].get<bool>());
  bool seen = false;
  for (const auto& x : j["verdicts"]) seen |= x["id"] == "binary.arch" && x["level"] == "error";
  EXPECT_TRUE(seen);
}

TEST(Verdicts, StubOnTheLibraryPath) {
  // No driver, stub on LD_LIBRARY_PATH (a CPU-only build machine): a warning.
  Report r = base_report();
  r.driver.libcuda_is_stub = true;
  r.driver.libcuda_path = "/usr/local/cuda/lib64/stubs/libcuda.so";
  const auto w = evaluate(r);
  const Verdict* s = find(w, "driver.stub");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->level, L::Warning);
  EXPECT_NE(s->message.find("no NVIDIA driver"), std::string::npos);
  // libcuda.so.1 itself resolving to a stub breaks every CUDA call: an error.
  r.driver.libcuda_found = true;
  r.driver.libcuda_path = "/usr/local/cuda/lib64/stubs/libcuda.so.1";
  const auto v = evaluate(r);
  const Verdict* e = find(v, "driver.stub");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->level, L::Error);
}

TEST(Report, TextNamesEverySection) {
  Report r = base_report();
  r.status = decide_gpu_status(r.driver, r.runtime, 0);
  r.verdicts = evaluate(r);
  const std::string t = to_text(r);
  for (const char* s : {"GPU usable:   no: no NVIDIA driver", "Driver", "CUDA runtime", "LibTorch",
                        "GPUs", "Loaded libraries", "Toolkit installs found", "Environment", "Verdicts"})
    EXPECT_NE(t.find(s), std::string::npos) << s;
}

TEST(Verdicts, OlderRuntimeLoadedThanBuiltIsAnError) {
  Report r = base_report();
  r.runtime.built_version = 13020;
  r.runtime.loaded_version = 13000;
  r.runtime.loaded_path = "/usr/local/cuda-13.0/lib/libcudart.so.13";
  const auto v = evaluate(r);
  const Verdict* x = find(v, "runtime.loaded_differs");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->level, L::Error);
  EXPECT_NE(x->message.find("built with CUDA runtime 13.2 but loaded 13.0"), std::string::npos) << x->message;
}

TEST(Verdicts, SaysWhichCopyOfCublasLibTorchGets) {
  Report r = base_report();
  r.torch.compiled_in = true;
  r.torch.cuda_version = 13000;
  r.torch.library_path = "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so";
  r.loaded.push_back({"libcublas.so.13", "/usr/local/cuda-13.0/lib/libcublas.so.13"});
  r.loaded.push_back({"libcudnn.so.9", "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"});
  const auto v = evaluate(r);
  const Verdict* x = find(v, "torch.shared_libs");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->level, L::Info);
  EXPECT_NE(x->message.find("libcublas.so.13 comes from /usr/local/cuda-13.0"), std::string::npos) << x->message;
  const Verdict* same = find(v, "torch.cuda_differs");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->level, L::Ok);
  // A CUDA 12.8 LibTorch loads libcublas.so.12, its own: the kernels' .so.13 is not its copy.
  r.torch.cuda_version = 12080;
  EXPECT_EQ(find(evaluate(r), "torch.shared_libs"), nullptr);
}

TEST(PcieRate, GenerationTimesWidthAfterEncoding) {
  // Gen 5 x16: 32 GT/s x 128/130 / 8 x 16 = 63.0 GB/s per direction.
  EXPECT_NEAR(pcie_bytes_per_s(5, 16) / 1e9, 63.015, 0.001);
  EXPECT_NEAR(pcie_bytes_per_s(4, 16) / 1e9, 31.508, 0.001);
  EXPECT_NEAR(pcie_bytes_per_s(3, 16) / 1e9, 15.754, 0.001);
  EXPECT_DOUBLE_EQ(pcie_bytes_per_s(1, 1), 250e6);  // 2.5 GT/s x 8/10
  EXPECT_DOUBLE_EQ(pcie_bytes_per_s(2, 8), 4e9);
  EXPECT_NEAR(pcie_bytes_per_s(6, 16) / 1e9, 121.0, 0.01);  // 64 GT/s, 242/256 FLIT
  EXPECT_EQ(pcie_bytes_per_s(0, 16), 0);
  EXPECT_EQ(pcie_bytes_per_s(7, 16), 0);
  EXPECT_EQ(pcie_bytes_per_s(5, -1), 0);
}

namespace {
// A fake machine's files under a temp folder.
struct FakeTree {
  fs::path root = fs::temp_directory_path() / ("cudabench-host-" + std::to_string(::getpid()));
  FakeTree() { fs::remove_all(root); }
  ~FakeTree() { fs::remove_all(root); }
  void file(const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};
}  // namespace

TEST(HostProbe, TwoSocketsOfHyperthreadedCores) {
  FakeTree t;
  std::string cpuinfo;
  // 2 sockets x 2 cores x 2 threads.
  int cpu = 0;
  for (int socket = 0; socket < 2; ++socket)
    for (int thread = 0; thread < 2; ++thread)
      for (int core = 0; core < 2; ++core)
        cpuinfo += "processor\t: " + std::to_string(cpu++) + "\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                   "model name\t: AMD EPYC 9654 96-Core Processor\nstepping\t: 1\nmicrocode\t: 0xa101148\nflags\t\t: fpu sse2 avx2 avx512f\n"
                   "physical id\t: " + std::to_string(socket) + "\ncore id\t\t: " + std::to_string(core) +
                   "\ncpu cores\t: 2\n\n";
  t.file("proc/cpuinfo", cpuinfo);
  t.file("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  t.file("etc/os-release", "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n");
  t.file("proc/meminfo", "MemTotal:       2113470464 kB\nMemFree:        1000 kB\n");
  t.file("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  t.file("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
  t.file("sys/devices/system/node/node0/cpulist", "0-3\n");
  t.file("sys/devices/system/node/node1/cpulist", "4-7\n");
  t.file("sys/devices/system/node/possible", "0-1\n");  // not a node
  const HostInfo h = probe_host(t.root.string());
  EXPECT_EQ(h.cpu_model, "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(h.microcode, "0xa101148");
  EXPECT_EQ(h.cpu_flags, "fpu sse2 avx2 avx512f");
  EXPECT_EQ(h.cpu_id, "AuthenticAMD family 25 model 17 stepping 1");  // "model" is not "model name"
  EXPECT_EQ(h.sockets, 2);
  EXPECT_EQ(h.cores, 4);
  EXPECT_EQ(h.threads, 8);
  EXPECT_EQ(h.kernel, "6.8.0-45-generic");
  EXPECT_EQ(h.os, "Ubuntu 24.04.1 LTS");
  EXPECT_EQ(h.memory_bytes, 2113470464LL * 1024);
  EXPECT_EQ(h.cpu_governor, "performance");
  EXPECT_EQ(h.thp, "never");
  EXPECT_EQ(h.numa_nodes, 2);
}

TEST(HostProbe, AVmWithoutTopologyOrCpufreq) {
  FakeTree t;
  t.file("proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n\n"
                         "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n\n");
  const HostInfo h = probe_host(t.root.string());
  EXPECT_EQ(h.cpu_model, "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(h.sockets, 1);
  EXPECT_EQ(h.cores, 2);  // no core ids: one core per logical CPU
  EXPECT_EQ(h.threads, 2);
  EXPECT_EQ(h.cpu_governor, "");
  EXPECT_EQ(h.microcode, "");  // none in this cpuinfo
  EXPECT_EQ(h.numa_nodes, 0);
  EXPECT_EQ(h.cpu_id, "");
  // And an Arm machine names its model, its identity and its flags elsewhere.
  t.file("proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve sve2\nCPU implementer\t: 0x41\n"
                         "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n"
                         "Model\t\t: NVIDIA Grace\n");
  const HostInfo arm = probe_host(t.root.string());
  EXPECT_EQ(arm.cpu_model, "NVIDIA Grace");
  EXPECT_EQ(arm.cpu_flags, "fp asimd sve sve2");
  EXPECT_EQ(arm.cpu_id, "implementer 0x41 architecture 8 part 0xd4f variant 0x0 revision 0");
}

TEST(HostProbe, GpuNumaAffinityFromSysfs) {
  FakeTree t;
  t.file("bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
  t.file("bus/pci/devices/0000:3b:00.0/local_cpulist", "48-95,144-191\n");
  int node = 7;
  std::string cpus = "x";
  pci_numa_affinity(t.root.string(), "0000:3B:00.0", &node, &cpus);  // CUDA's upper case
  EXPECT_EQ(node, 1);
  EXPECT_EQ(cpus, "48-95,144-191");
  pci_numa_affinity(t.root.string(), "0000:99:00.0", &node, &cpus);
  EXPECT_EQ(node, -1);
  EXPECT_EQ(cpus, "");
}

TEST(Report, ContextDescribesHostAndTheSelectedGpu) {
  Report r = base_report();
  r.host.cpu_model = "AMD EPYC 9654 96-Core Processor";
  r.host.microcode = "0xa101148";
  r.host.cpu_flags = "fpu sse2 avx2 avx512f";
  r.host.cpu_id = "AuthenticAMD family 25 model 17 stepping 1";
  r.host.sockets = 2;
  r.host.cores = 192;
  r.host.threads = 384;
  r.host.thp = "never";
  for (int i = 0; i < 2; ++i) {
    GpuDevice g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.pci_bus_id = i ? "0000:3B:00.0" : "0000:19:00.0";
    g.nvml.found = true;
    g.nvml.power_limit_w = i ? 500 : 700;
    g.nvml.pcie_gen_max = 5;
    g.nvml.pcie_width_max = 16;
    g.memory_clock_khz = 3'201'000;
    g.bus_width_bits = 6144;
    r.gpus.push_back(g);
  }
  auto ctx = [&](int dev) {
    std::map<std::string, std::string> m;
    for (const auto& [k, v] : context_entries(r, dev)) m[k] = v;
    return m;
  };
  auto c = ctx(1);
  EXPECT_EQ(c["host_cpu_model"], "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(c["host_microcode"], "0xa101148");  // what tells two machines of one model apart
  EXPECT_EQ(c["host_cpu_flags"], "fpu sse2 avx2 avx512f");
  EXPECT_EQ(c["host_cpu_id"], "AuthenticAMD family 25 model 17 stepping 1");
  EXPECT_EQ(c["host_sockets"], "2");
  EXPECT_EQ(c["host_cores"], "192");
  EXPECT_EQ(c["host_threads"], "384");
  EXPECT_EQ(c["host_thp"], "never");
  EXPECT_EQ(c["gpu_index"], "1");
  EXPECT_EQ(c["gpu_pci_bus_id"], "0000:3B:00.0");
  EXPECT_EQ(c["gpu_power_limit"], "500 W");
  EXPECT_EQ(c["gpu_pcie_max"], "gen 5 x16");
  EXPECT_EQ(c["gpu_pcie_peak"],
            "gen 5 x16 = 63.0 GB/s per direction, theoretical (the max of this GPU in this system, NVML)");
  EXPECT_EQ(c["gpu_peak_bandwidth_source"],
            "theoretical: memory clock 3201000 kHz x 6144-bit bus x 2 (DDR) / 8, from the CUDA device attributes");
  EXPECT_EQ(c["gpu_count"], "2");
  EXPECT_NE(c["gpus"].find("1: NVIDIA H200 0000:3B:00.0"), std::string::npos);
  EXPECT_EQ(ctx(0)["gpu_power_limit"], "700 W");
  EXPECT_EQ(ctx(5)["gpu_name"], "none");
}

TEST(Report, TextAndJsonShowNvmlFacts) {
  Report r = base_report();
  GpuDevice g;
  g.name = "NVIDIA H200";
  g.nvml.found = true;
  g.nvml.uuid = "GPU-1234";
  g.nvml.power_limit_w = 700;
  g.nvml.pcie_gen = 1;
  g.nvml.pcie_gen_max = 4;      // what this system allows: the peak
  g.nvml.pcie_gen_gpu_max = 5;  // the GPU's own
  g.nvml.pcie_width = g.nvml.pcie_width_max = 16;
  g.nvml.compute_mode = 3;
  r.gpus.push_back(g);
  const std::string t = to_text(r);
  for (const char* s : {"UUID GPU-1234", "power limit 700 W",
                        "PCIe gen 1 x16 now, gen 4 x16 max with this system = 31.5 GB/s per direction, the GPU's own gen 5",
                        "compute mode Exclusive_Process", "Host\n"})
    EXPECT_NE(t.find(s), std::string::npos) << s << " in\n" << t;
  const auto j = to_json(r);
  EXPECT_EQ(j["gpus"][0]["nvml"]["uuid"], "GPU-1234");
  EXPECT_EQ(j["gpus"][0]["nvml"]["compute_mode_name"], "Exclusive_Process");
  EXPECT_NEAR(j["gpus"][0]["nvml"]["pcie_max_bytes_per_s"].get<double>(), 31.5e9, 0.1e9);
  EXPECT_NEAR(j["gpus"][0]["nvml"]["pcie_gpu_max_bytes_per_s"].get<double>(), 63.015e9, 1e6);
  EXPECT_EQ(j["gpus"][0]["nvml"]["pcie_gen_gpu_max"], 5);
  EXPECT_TRUE(j.contains("host"));
}

TEST(Verdicts, NoNvmlBesideADriverIsSaid) {
  Report r = base_report();
  r.driver = good_driver();
  r.driver.nvml_error = "libnvidia-ml.so.1 not found";
  const auto verdicts = evaluate(r);  // held: find() points into it
  const Verdict* v = find(verdicts, "nvml.missing");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->level, L::Info);
  EXPECT_NE(v->message.find("libnvidia-ml.so.1 not found"), std::string::npos);
  r.driver.nvml_found = true;
  EXPECT_EQ(find(evaluate(r), "nvml.missing"), nullptr);
}

TEST(Verdicts, CudaHomeThatIsNotAToolkitIsFlagged) {
  Report r = base_report();
  ToolkitInstall sys;
  sys.root = "/usr/local/cuda-13.0";
  sys.found_via = {"/usr/local/cuda", "CUDA_PATH"};
  r.toolkits.push_back(sys);
  r.env_vars["CUDA_HOME"] = "/opt/not-cuda";
  r.env_vars["CUDA_PATH"] = "/usr/local/cuda-13.0";
  const auto v = evaluate(r);
  const Verdict* h = find(v, "env.CUDA_HOME");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->level, L::Warning);
  EXPECT_NE(h->message.find("/opt/not-cuda"), std::string::npos);
  EXPECT_NE(h->fix.find("/usr/local/cuda-13.0"), std::string::npos);
  // CUDA_PATH found the toolkit it names: nothing to say.
  EXPECT_EQ(find(v, "env.CUDA_PATH"), nullptr);
}
