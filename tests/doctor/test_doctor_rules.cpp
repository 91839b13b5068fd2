// The doctor's pure parts on hand-made data: CUDA_VISIBLE_DEVICES as CUDA
// reads it, error codes and library names in pasted text, the fatbin
// reader, and the scenarios whose cause lives inside the process (PTX newer
// than the driver, cuDNN's parts, an older cuBLAS, LibTorch's CUDA against
// the driver), which a child on fake libraries cannot show (test_doctor.py
// covers the rest end to end).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "doctor/explain.h"
#include "doctor/fatbin.h"
#include "env/probe.h"
#include "doctor/rules.h"
#include "env/report.h"

using namespace cudabench::env;
using namespace cudabench::doctor;
using L = Verdict::Level;
namespace fs = std::filesystem;

namespace {

std::vector<int> numbers(const std::string& text) {
  std::vector<int> out;
  for (const Scenario* s : match_scenarios(text)) out.push_back(s->number);
  return out;
}

const Verdict* find(const std::vector<Verdict>& vs, const std::string& id, L level) {
  for (const auto& v : vs)
    if (v.id == id && v.level == level) return &v;
  return nullptr;
}

std::string all(const std::vector<Verdict>& vs) {
  std::string s;
  for (const auto& v : vs) s += v.id + " " + level_name(v.level) + ": " + v.message + "\n";
  return s;
}

// A machine where the driver works: H200, driver 580, runtime 13.0.
Report working() {
  Report r;
  r.driver.libcuda_found = true;
  r.driver.libcuda_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05";
  r.driver.libcuda_file_version = "580.95.05";
  r.driver.kernel_module_version = "580.95.05";
  r.driver.cuda_version = 13000;
  r.driver.init_result = 0;
  r.driver.device_count = 1;
  r.driver.device_nodes_present = true;
  r.system.device_nodes = {"/dev/nvidia0", "/dev/nvidiactl"};
  r.system.nvidia_module_loaded = true;
  r.runtime.compiled_in = true;
  r.runtime.built_version = r.runtime.loaded_version = 13000;
  r.build.cuda_toolkit_version = "13.0.88";
  GpuDevice g;
  g.name = "NVIDIA H200";
  g.cc_major = 9;
  g.pci_bus_id = "0000:19:00.0";
  r.gpus.push_back(g);
  r.binary_fatbin.containers = 1;
  r.binary_fatbin.sass = {{90, 1}};
  return r;
}

}  // namespace

TEST(VisibleDevices, ReadLikeCudaUpToTheFirstInvalidEntry) {
  const std::vector<std::string> uuids = {"GPU-0c4f2a1e-aaaa", "GPU-0c4f2a1e-bbbb", "GPU-77d1-cccc"};
  auto v = parse_visible_devices("2,0", 3, uuids);
  EXPECT_EQ(v.used, (std::vector<std::string>{"2", "0"}));
  EXPECT_TRUE(v.stopped_at.empty());
  // CUDA's own example: 0,2,-1,1 shows 0 and 2.
  v = parse_visible_devices("0,2,-1,1", 3, uuids);
  EXPECT_EQ(v.used, (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(v.stopped_at, "-1");
  v = parse_visible_devices("1,3", 3, uuids);
  EXPECT_EQ(v.used, std::vector<std::string>{"1"});
  EXPECT_NE(v.why.find("no GPU 3 (NVML lists 3)"), std::string::npos) << v.why;
  v = parse_visible_devices(" 0 , 1 ", 3, uuids);  // blanks around entries
  EXPECT_EQ(v.used, (std::vector<std::string>{"0", "1"}));
  v = parse_visible_devices("GPU-77d1", 3, uuids);  // a unique prefix
  EXPECT_EQ(v.used, std::vector<std::string>{"GPU-77d1"});
  v = parse_visible_devices("gpu-0c4f2a1e", 3, uuids);  // two GPUs share it
  EXPECT_TRUE(v.used.empty());
  EXPECT_NE(v.why.find("starts the UUIDs of 2 GPUs"), std::string::npos) << v.why;
  v = parse_visible_devices("MIG-GPU-77d1/1/0", 3, uuids);
  EXPECT_EQ(v.used.size(), 1u);
  v = parse_visible_devices("0,0", 3, uuids);
  EXPECT_EQ(v.repeated, std::vector<std::string>{"0"});
  for (const char* bad : {"", "  ", "x", "cuda:0", "0;1", "-"}) {
    v = parse_visible_devices(bad, 3, uuids);
    EXPECT_TRUE(v.used.empty()) << bad;
    EXPECT_FALSE(v.why.empty()) << bad;
  }
  // Without NVML only the syntax is checked.
  EXPECT_EQ(parse_visible_devices("7", -1, {}).used, std::vector<std::string>{"7"});
}

TEST(Explain, ErrorCodesAsPeoplePasteThem) {
  EXPECT_EQ(numbers("Error 804"), std::vector<int>{2});
  EXPECT_EQ(numbers("error code 34"), std::vector<int>{10});
  EXPECT_EQ(numbers("cuda runtime error (802) : system"), std::vector<int>{5});
  EXPECT_EQ(numbers("code=222(cudaErrorUnsupportedPtxVersion)"), std::vector<int>{7});
  EXPECT_EQ(numbers("Check failed: e == cudaSuccess (803 vs. 0)"), std::vector<int>{3});
  EXPECT_EQ(numbers("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version"), std::vector<int>{1});
  EXPECT_EQ(numbers("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::vector<int>{6});
  EXPECT_EQ(numbers("  209\n"), std::vector<int>{6});
  // Numbers that are not error codes: versions, bus ids, sizes.
  EXPECT_TRUE(numbers("driver 580.95.05, CUDA 12.804").empty());
  EXPECT_TRUE(numbers("used 1804 MiB of 8040").empty());
  EXPECT_TRUE(numbers("the number 804 appears here").empty());
  // Numbers that stand near a word but are no code: models, lines, steps.
  EXPECT_TRUE(numbers("RuntimeError: CUDA error on H100 at line 46").empty());
  EXPECT_TRUE(numbers("Error: NVIDIA A100-SXM4-80GB").empty());
  EXPECT_TRUE(numbers("ERROR: step 209 failed").empty());
  EXPECT_EQ(numbers("Cuda failure: 222 the provided"), std::vector<int>{7});
  EXPECT_EQ(numbers("[10:30:10] CUDA error: error code 34"), std::vector<int>{10});
  EXPECT_EQ(numbers("cuInit returned 802"), std::vector<int>{5});
  // Words inside other words do not count.
  EXPECT_TRUE(numbers("nouveaux riches").empty());
  EXPECT_EQ(numbers("nouveau"), std::vector<int>{11});
  // Wrapped over lines and spaced out, as terminals paste it.
  EXPECT_EQ(numbers("The detected CUDA version (12.1) mismatches the version that was used to compile\n   PyTorch (11.8)."),
            std::vector<int>{15});
}

TEST(Explain, EveryScenarioHasItsNumberTitleCheckAndFix) {
  const auto& s = scenarios();
  ASSERT_GE(s.size(), 49u);
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].number, static_cast<int>(i) + 1);
    EXPECT_FALSE(s[i].title.empty());
    // What is not a set-up failure has nothing to look for on a machine.
    EXPECT_TRUE(s[i].setup || s[i].verdict_ids.empty()) << s[i].id;
    EXPECT_EQ(s[i].setup, s[i].title.rfind("Not a ", 0) != 0) << s[i].id;
    EXPECT_FALSE(s[i].checked.empty()) << s[i].id;
    EXPECT_FALSE(s[i].fix.empty()) << s[i].id;
    EXPECT_FALSE(s[i].patterns.empty() && s[i].codes.empty() && s[i].names.empty()) << s[i].id;
  }
}

// docs/doctor.md's table restates scenarios(): one row per scenario, by
// its number, naming exactly its verdict ids (in backticks).
TEST(Explain, TheDocsTableIsTheScenarioTable) {
  std::ifstream f(std::string(CUDABENCH_TEST_SOURCE_DIR) + "/docs/doctor.md");
  ASSERT_TRUE(f) << "docs/doctor.md";
  std::map<int, std::set<std::string>> rows;  // number -> verdict ids named
  bool in_table = false;
  static const std::regex row(R"(^\| *([0-9]+) *\|)"), id(R"(`([a-z]+\.[a-z_]+)`)");
  for (std::string line; std::getline(f, line);) {
    if (line.find("<!-- doctor-table:begin -->") != std::string::npos) in_table = true;
    if (line.find("<!-- doctor-table:end -->") != std::string::npos) in_table = false;
    std::smatch m;
    if (!in_table || !std::regex_search(line, m, row)) continue;
    auto& ids = rows[std::stoi(m[1])];
    for (std::sregex_iterator it(line.begin(), line.end(), id), end; it != end; ++it) ids.insert((*it)[1]);
  }
  ASSERT_EQ(rows.size(), scenarios().size()) << "rows between the doctor-table markers";
  for (const auto& s : scenarios()) {
    ASSERT_TRUE(rows.count(s.number)) << "no row " << s.number << " (" << s.id << ")";
    EXPECT_EQ(rows[s.number], std::set<std::string>(s.verdict_ids.begin(), s.verdict_ids.end()))
        << "row " << s.number << " (" << s.id << ")";
  }
}

TEST(Explain, AWholeJournalIsReadNotItsFirstMegabyte) {
  // journalctl -k | bench --explain -: the error is the last line of 3 MiB.
  std::string journal;
  while (journal.size() < (3u << 20)) journal += "kernel: usb 1-1: new high-speed USB device number 2\n";
  EXPECT_TRUE(scan_pasted(journal).scenarios.empty());
  std::istringstream in(journal + "cudaErrorCompatNotSupportedOnDevice: Error 804: forward compatibility was "
                                  "attempted on non supported HW\n");
  const Pasted p = scan_pasted(in);
  ASSERT_EQ(p.scenarios.size(), 1u);
  EXPECT_EQ(p.scenarios[0]->id, "compat_not_supported");
  // A phrase across the edge of a 1 MiB window is still seen.
  std::string edge(std::size_t(1 << 20) - 10, 'x');
  edge += " libcudart.so.12: cannot open shared object file";
  EXPECT_EQ(scan_pasted(edge).libraries, std::vector<std::string>{"libcudart.so.12"});
  EXPECT_FALSE(scan_pasted(edge).scenarios.empty());
  // A word across the edge is read whole, never as "libcudart.so.1" and "2".
  std::string lines;
  while (lines.size() < (1u << 20) - 100) lines += "kernel: usb 1-1: new high-speed USB device number 2\n";
  lines += std::string((1u << 20) - 15 - lines.size(), 'y') + " libcudart.so.12: cannot open shared object file\n";
  EXPECT_EQ(scan_pasted(lines).libraries, std::vector<std::string>{"libcudart.so.12"});
}

TEST(Explain, LibraryNamesInText) {
  EXPECT_EQ(libraries_named("ImportError: libcudart.so.12: cannot open shared object file"),
            std::vector<std::string>{"libcudart.so.12"});
  EXPECT_EQ(libraries_named("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so}"),
            (std::vector<std::string>{"libcudnn_ops.so.9.1.0", "libcudnn_ops.so.9.1", "libcudnn_ops.so"}));
  EXPECT_EQ(libraries_named("Please make sure libcudnn_ops_infer.so.8 is in your library path!"),
            std::vector<std::string>{"libcudnn_ops_infer.so.8"});
  EXPECT_EQ(libraries_named("Could not load library libcublas.so.12."), std::vector<std::string>{"libcublas.so.12"});
  EXPECT_TRUE(libraries_named("/usr/lib/x86_64-linux-gnu and libsomething").empty());
}

TEST(Explain, CauseFoundOnlyForTheMatchedScenariosVerdicts) {
  Report r = working();
  r.verdicts.push_back({"driver.compat_unsupported", L::Error, "804 here", "fix", {}});
  r.verdicts.push_back({"gpu.ecc_errors", L::Info, "harmless", "", {}});
  auto e = explain("Error 804: forward compatibility was attempted on non supported HW", r, /*here=*/true);
  ASSERT_EQ(e.items.size(), 1u);
  EXPECT_TRUE(e.cause_found);
  EXPECT_EQ(e.items[0].causes.size(), 1u);
  e = explain("uncorrectable ECC error encountered", r, true);  // an Info verdict is not a cause
  EXPECT_FALSE(e.cause_found);
  EXPECT_NE(explanation_text(e).find("not here: the probe checked"), std::string::npos);
}

TEST(Explain, APasteFromElsewhereIsNeverAnsweredWithThisMachine) {
  Report r = working();
  r.driver.nvml_driver_version = "580.95.05";
  r.verdicts.push_back({"driver.compat_unsupported", L::Error, "804 here", "fix", {}});
  const std::string text = "Driver Version: 535.104.05   CUDA Version: 12.2\nError 804: forward compatibility was attempted";
  auto e = explain(text, r);
  EXPECT_FALSE(e.here);
  EXPECT_FALSE(e.cause_found);
  EXPECT_NE(e.here_why.find("535.104.05 is not this machine's"), std::string::npos) << e.here_why;
  const std::string t = explanation_text(e);
  EXPECT_EQ(t.find("FOUND HERE"), std::string::npos) << t;
  EXPECT_LT(t.find("[2] "), t.find("On this machine (not the paste's cause")) << t;
  EXPECT_TRUE(explain(text, r, /*here=*/true).cause_found);
}

TEST(Fatbin, ReadsTheArchitecturesThisBuildCompiled) {
#ifdef CUDABENCH_HAVE_CUDA
  const std::string bench = std::string(CUDABENCH_TEST_BUILD_DIR) + "/bench";
  ASSERT_TRUE(fs::exists(bench)) << bench;
  const FatbinArchs f = read_fatbin_archs(bench);
  ASSERT_TRUE(f.read()) << f.error;
  // Every entry of CMAKE_CUDA_ARCHITECTURES is in it, and nothing else.
  std::map<int, int> sass, ptx;
  std::stringstream ss(build_info().cuda_architectures);
  for (std::string a; std::getline(ss, a, ';');) {
    const int sm = std::stoi(a);
    if (a.find("-virtual") == std::string::npos) sass[sm] = f.containers;
    if (a.find("-real") == std::string::npos) ptx[sm] = f.containers;
  }
  EXPECT_EQ(f.sass, sass);
  EXPECT_EQ(f.ptx, ptx);
#else
  GTEST_SKIP() << "a build without CUDA has no fatbin to read";
#endif
}

TEST(Fatbin, FilesWithoutKernelsOrNotElfAreSaidSo) {
  const fs::path dir = fs::temp_directory_path() / ("cudabench-fatbin-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "text") << "not an ELF file at all";
  EXPECT_NE(read_fatbin_archs((dir / "text").string()).error.find("not a 64-bit little-endian ELF"), std::string::npos);
  EXPECT_NE(read_fatbin_archs((dir / "absent").string()).error.find("cannot read"), std::string::npos);
  // This test program has no kernels.
  const FatbinArchs self = read_fatbin_archs("/proc/self/exe");
  EXPECT_FALSE(self.read());
  EXPECT_NE(self.error.find("no .nv_fatbin section"), std::string::npos) << self.error;
  // A truncated ELF header, and one whose section table points past the end.
  std::string elf(64, '\0');
  elf.replace(0, 6, "\x7f" "ELF\x02\x01");
  std::ofstream(dir / "short", std::ios::binary) << elf.substr(0, 20);
  EXPECT_FALSE(read_fatbin_archs((dir / "short").string()).read());
  elf[0x28] = '\x40';
  elf[0x3a] = 64;
  elf[0x3c] = 3;
  elf[0x3e] = 1;
  std::ofstream(dir / "bad_table", std::ios::binary) << elf;
  EXPECT_NE(read_fatbin_archs((dir / "bad_table").string()).error.find("truncated"), std::string::npos);
  // A header asking for a 4 GiB section table (found by fuzz_explain): refused
  // before anything is allocated.
  elf[0x3a] = elf[0x3b] = elf[0x3c] = elf[0x3d] = '\xff';
  elf[0x3e] = 1;
  std::ofstream(dir / "huge_table", std::ios::binary) << elf;
  EXPECT_NE(read_fatbin_archs((dir / "huge_table").string()).error.find("truncated section table"), std::string::npos);
  // The fuzz corpus's minimal ELF: one container, SASS and PTX for sm_90.
  std::ifstream seed(std::string(CUDABENCH_TEST_SOURCE_DIR) + "/fuzz/corpus/fuzz_explain/fatbin-elf", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(seed)), {});
  ASSERT_GT(bytes.size(), 1u);
  std::ofstream(dir / "tiny", std::ios::binary) << bytes.substr(1);
  const FatbinArchs tiny = read_fatbin_archs((dir / "tiny").string());
  ASSERT_TRUE(tiny.read()) << tiny.error;
  EXPECT_EQ(tiny.containers, 1);
  EXPECT_EQ(tiny.sass, (std::map<int, int>{{90, 1}}));
  EXPECT_EQ(tiny.ptx, (std::map<int, int>{{90, 1}}));
  EXPECT_EQ(fatbin_summary(tiny), "sm_90 compute_90");
  fs::remove_all(dir);
}

TEST(Doctor, PtxFromANewerToolkitThanTheDriver) {
  // Scenario 7: only compute_80 PTX for an sm_90 GPU, made by CUDA 13.0,
  // on a driver for CUDA 12.8.
  Report r = working();
  r.binary_fatbin.sass = {{80, 1}};
  r.binary_fatbin.ptx = {{80, 1}};
  r.driver.cuda_version = 12080;
  const auto vs = scenario_verdicts(r);
  const Verdict* arch = find(vs, "binary.arch", L::Warning);
  ASSERT_NE(arch, nullptr) << all(vs);
  const Verdict* ptx = find(vs, "binary.ptx_version", L::Error);
  ASSERT_NE(ptx, nullptr) << all(vs);
  EXPECT_NE(ptx->message.find("CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222"), std::string::npos) << ptx->message;
  EXPECT_NE(ptx->message.find("made by CUDA 13.0, and the driver supports CUDA 12.8"), std::string::npos) << ptx->message;
  EXPECT_NE(ptx->fix.find(">= 580.65.06"), std::string::npos) << ptx->fix;
  EXPECT_NE(ptx->evidence.at(0).find("compute_80"), std::string::npos);
  // A driver as new as the toolkit JIT-compiles it: no 222.
  r.driver.cuda_version = 13000;
  EXPECT_EQ(find(scenario_verdicts(r), "binary.ptx_version", L::Error), nullptr);
}

TEST(Doctor, LibTorchsCudaAgainstTheDriver) {
  Report r = working();
  r.driver.cuda_version = 12080;
  r.runtime.built_version = r.runtime.loaded_version = 12080;
  r.torch.compiled_in = true;
  r.torch.version = "2.11.0";
  r.torch.cuda_version = 13000;
  const auto vs = scenario_verdicts(r);
  const Verdict* t = find(vs, "torch.driver_compat", L::Error);
  ASSERT_NE(t, nullptr) << all(vs);
  EXPECT_NE(t->message.find("LibTorch's runtime is CUDA 13.0"), std::string::npos) << t->message;
  EXPECT_NE(find(vs, "driver.runtime_compat", L::Ok), nullptr) << all(vs);
}

TEST(Doctor, CuDnnPartsMissingBesideTheLoadedCuDnn) {
  // Scenario 13 inside the process: cuDNN 9 loads its parts by name when
  // first used, beside itself first.
  const fs::path dir = fs::temp_directory_path() / ("cudabench-cudnn-" + std::to_string(::getpid()));
  fs::create_directories(dir / "cudnn");
  fs::create_directories(dir / "tk" / "lib64");
  for (const char* f : {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9",
                        "libcudnn_adv.so.9", "libcudnn_heuristic.so.9", "libcudnn_engines_runtime_compiled.so.9"})
    std::ofstream(dir / "cudnn" / f) << "";
  std::ofstream(dir / "tk" / "lib64" / "libcudnn_engines_precompiled.so.9") << "";
  // An empty machine root: no ld.so cache, no default folders (this
  // machine's own cuDNN, if it has one, stays out of the test).
  fs::create_directories(dir / "root");
  setenv("CUDABENCH_PROBE_ROOT", (dir / "root").c_str(), 1);
  Report r = working();
  r.loaded.push_back({"libcudnn.so.9", (dir / "cudnn" / "libcudnn.so.9").string()});
  ToolkitInstall tk;
  tk.root = (dir / "tk").string();
  r.toolkits.push_back(tk);
  r.lazy_libraries = probe_lazy_libraries(r);
  unsetenv("CUDABENCH_PROBE_ROOT");
  ASSERT_EQ(r.lazy_libraries.size(), 7u);
  for (const auto& l : r.lazy_libraries)
    if (l.name != "libcudnn_engines_precompiled.so.9")
      EXPECT_EQ(l.resolved, fs::canonical(dir / "cudnn" / l.name).string());
  const auto vs = scenario_verdicts(r);
  const Verdict* v = find(vs, "library.missing", L::Error);
  ASSERT_NE(v, nullptr) << all(vs);
  EXPECT_NE(v->message.find("libcudnn_engines_precompiled.so.9 (needed by cuDNN 9 ("), std::string::npos) << v->message;
  EXPECT_NE(v->message.find("is on this machine at " + fs::canonical(dir / "tk" / "lib64").string()), std::string::npos)
      << v->message;
  EXPECT_NE(v->fix.find("export LD_LIBRARY_PATH=" + fs::canonical(dir / "tk" / "lib64").string()), std::string::npos);
  fs::remove_all(dir);
}

TEST(Doctor, CuBlasAndCuDnnOlderThanTheBuild) {
  Report r = working();
  r.libs.cublas_built = 130100;
  r.libs.cublas_loaded = 130000;
  r.loaded.push_back({"libcublas.so.13", "/opt/old/libcublas.so.13"});
  r.torch.compiled_in = true;
  r.torch.cudnn_built = 91900;
  r.torch.cudnn_runtime = 90100;  // cuDNN 9.1 where 9.19 was built
  const auto vs = scenario_verdicts(r);
  int older = 0;
  for (const auto& v : vs)
    if (v.id == "libs.older_than_built" && v.level == L::Error) {
      ++older;
      EXPECT_FALSE(v.fix.empty());
      EXPECT_EQ(v.evidence.size(), 2u);
    }
  EXPECT_EQ(older, 2) << all(vs);
  // The same versions: nothing to say.
  r.libs.cublas_loaded = 130100;
  r.torch.cudnn_runtime = 91900;
  const auto ok = scenario_verdicts(r);
  EXPECT_EQ(std::count_if(ok.begin(), ok.end(), [](const Verdict& v) { return v.id == "libs.older_than_built"; }), 0);
}

TEST(Doctor, CuBlasAndCuBlasLtFromDifferentInstalls) {
  // The GAIL case: torch's libcublas.so.11 beside an older system cuBLASLt.
  Report r = working();
  r.loaded.push_back({"libcublas.so.12", "/venv/site-packages/nvidia/cublas/lib/libcublas.so.12.4.5.8"});
  r.loaded.push_back({"libcublasLt.so.12", "/usr/lib/x86_64-linux-gnu/libcublasLt.so.12.1.3.1"});
  auto vs = scenario_verdicts(r);
  const Verdict* v = find(vs, "libs.duplicate", L::Error);
  ASSERT_NE(v, nullptr) << all(vs);
  EXPECT_NE(v->message.find("cuBLAS and cuBLASLt come from different installs"), std::string::npos);
  EXPECT_NE(v->message.find("version libcublasLt.so.12"), std::string::npos);
  EXPECT_NE(v->evidence.at(1).find("(12.1.3.1)"), std::string::npos);
  // The same release from another folder: harmless.
  r.loaded.back().path = "/usr/local/cuda-12.4/lib64/libcublasLt.so.12.4.5.8";
  vs = scenario_verdicts(r);
  EXPECT_EQ(find(vs, "libs.duplicate", L::Error), nullptr) << all(vs);
  // Unknown releases in two folders: said.
  r.loaded.back().path = "/usr/local/cuda-12.4/lib64/libcublasLt.so.12";
  r.loaded[r.loaded.size() - 2].path = "/venv/nvidia/cublas/lib/libcublas.so.12";
  EXPECT_NE(find(scenario_verdicts(r), "libs.duplicate", L::Error), nullptr);
  // One install: no verdict.
  r.loaded.back().path = "/venv/nvidia/cublas/lib/libcublasLt.so.12";
  vs = scenario_verdicts(r);
  EXPECT_EQ(find(vs, "libs.duplicate", L::Error), nullptr) << all(vs);
}

TEST(Doctor, CuDnnNeedsTheBuiltMajorAndAtLeastItsMinor) {
  Report r = working();
  r.torch.compiled_in = true;
  r.torch.cudnn_built = 91900;
  for (const auto& [runtime, bad] : std::vector<std::pair<long, bool>>{
           {91900, false}, {91901, false}, {92000, false}, {91800, true}, {90100, true}, {8902, true}}) {
    r.torch.cudnn_runtime = runtime;
    EXPECT_EQ(find(scenario_verdicts(r), "libs.older_than_built", L::Error) != nullptr, bad) << runtime;
  }
}

TEST(Doctor, AWorkingMachineHasNoErrorOrWarning) {
  const auto vs = scenario_verdicts(working());
  for (const auto& v : vs) EXPECT_TRUE(v.level == L::Ok || v.level == L::Info) << v.id << ": " << v.message;
}
