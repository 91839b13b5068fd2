// A fake libcuda.so.1: the driver API calls cudabench's probe makes
// (cuInit, versions, device count, names, attributes, PCI bus ids, error
// strings), answered from the machine in $CUDABENCH_FAKE_GPU. The CUDA
// runtime finds no cuGetProcAddress here and reports an error, so nothing
// can run on these GPUs: they exist to be probed, listed and selected.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include "fake_machine.h"

namespace {
constexpr int kSuccess = 0, kInvalidValue = 1, kNotInitialized = 3, kInvalidDevice = 101;

int init_result() {
  auto& m = fake::Machine::get();
  return m.json().value("/driver/init_result"_json_pointer, 0);
}
// What CUDA sees: every GPU of the machine unless "driver/device_count"
// says fewer (MIG on without instances: NVML lists the GPU, CUDA none).
int cuda_count() {
  auto& m = fake::Machine::get();
  return m.json().value("/driver/device_count"_json_pointer, m.gpu_count());
}
const nlohmann::json* device(int d) { return d < cuda_count() ? fake::Machine::get().gpu(d) : nullptr; }
}  // namespace

// A driver in a bad state: "driver/<call>_fault" "hang" blocks the call (a
// stuck GPU), "crash" dies in it with SIGSEGV, "exit" ends the process
// (status 0): "init_fault" for cuInit, "version_fault" for
// cuDriverGetVersion, "load_fault" for the library's constructor (the
// loader runs it inside dlopen, or at start-up), "proc_fault" for
// cuGetProcAddress (only in the build with FAKE_GET_PROC_ADDRESS).
namespace {
void fault(const char* key) {
  const std::string f = fake::Machine::get().json().value(nlohmann::json::json_pointer(std::string("/driver/") + key), "");
  if (f == "hang")
    for (;;) pause();
  if (f == "crash") raise(SIGSEGV);
  if (f == "exit") _exit(0);
}
__attribute__((constructor)) void on_load() { fault("load_fault"); }

#ifdef FAKE_GET_PROC_ADDRESS
// The CUDA runtime's first call: every entry point is looked up through it.
FAKE_API int cuGetProcAddress_v2(const char*, void** fn, int, unsigned long long, int* status) {
  fault("proc_fault");
  if (fn) *fn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return 500;               // CUDA_ERROR_NOT_FOUND
}
#endif

// "driver/init_log": a file that gets a line "PID NAME" (/proc/self/comm)
// for each call of cuInit: which processes checked the driver.
void log_init() {
  const std::string path = fake::Machine::get().json().value("/driver/init_log"_json_pointer, "");
  if (path.empty()) return;
  char comm[64] = {};
  const int in = open("/proc/self/comm", O_RDONLY);
  const ssize_t n = in < 0 ? 0 : read(in, comm, sizeof comm - 1);
  if (in >= 0) close(in);
  const std::string line = std::to_string(getpid()) + " " + std::string(comm, n > 0 ? static_cast<std::size_t>(n) : 0);
  const int out = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (out < 0) return;
  [[maybe_unused]] const ssize_t w = write(out, line.data(), line.size());
  close(out);
}
}  // namespace

FAKE_API int cuInit(unsigned) {
  log_init();
  fault("init_fault");
  return init_result();
}

FAKE_API int cuDriverGetVersion(int* v) {
  fault("version_fault");
  if (!v) return kInvalidValue;
  *v = fake::Machine::get().json().value("/driver/cuda_version"_json_pointer, 13000);
  return kSuccess;
}

FAKE_API int cuDeviceGetCount(int* n) {
  if (init_result() != kSuccess) return kNotInitialized;
  *n = cuda_count();
  return kSuccess;
}

FAKE_API int cuDeviceGet(int* dev, int ordinal) {
  if (init_result() != kSuccess) return kNotInitialized;
  if (!device(ordinal)) return kInvalidDevice;
  *dev = ordinal;
  return kSuccess;
}

FAKE_API int cuDeviceGetName(char* name, int len, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  fake::copy_string(g->value("name", "Fake GPU"), name, static_cast<unsigned>(len));
  return kSuccess;
}

FAKE_API int cuDeviceTotalMem_v2(std::size_t* bytes, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  *bytes = g->value("memory_bytes", std::size_t{0});
  return kSuccess;
}

FAKE_API int cuDeviceGetAttribute(int* v, int attribute, int dev) {
  const auto* g = device(dev);
  if (!g) return kInvalidDevice;
  static const std::map<int, const char*> keys = {
      {13, "sm_clock_khz"},  {16, "sms"},      {36, "memory_clock_khz"}, {37, "bus_width_bits"},
      {38, "l2_bytes"},      {75, "cc_major"}, {76, "cc_minor"}};
  const auto it = keys.find(attribute);
  if (it == keys.end() || !g->contains(it->second)) return kInvalidValue;
  *v = (*g)[it->second].get<int>();
  return kSuccess;
}

FAKE_API int cuDeviceGetPCIBusId(char* out, int len, int dev) {
  const auto* g = device(dev);
  if (!g || !g->contains("pci_bus_id")) return kInvalidDevice;
  fake::copy_string((*g)["pci_bus_id"].get<std::string>(), out, static_cast<unsigned>(len));
  return kSuccess;
}

FAKE_API int cuGetErrorName(int code, const char** s) {
  static const std::map<int, const char*> names = {
      {0, "CUDA_SUCCESS"}, {3, "CUDA_ERROR_NOT_INITIALIZED"}, {34, "CUDA_ERROR_STUB_LIBRARY"},
      {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"}, {100, "CUDA_ERROR_NO_DEVICE"},
      {101, "CUDA_ERROR_INVALID_DEVICE"}, {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
      {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"}, {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
      {999, "CUDA_ERROR_UNKNOWN"}};
  const auto it = names.find(code);
  *s = it == names.end() ? nullptr : it->second;
  return it == names.end() ? kInvalidValue : kSuccess;
}

FAKE_API int cuGetErrorString(int code, const char** s) {
  // cuda.h's texts, word for word: users paste them.
  static const std::map<int, const char*> texts = {
      {0, "no error"}, {3, "initialization error"}, {34, "CUDA driver is a stub library"},
      {46, "CUDA-capable device(s) is/are busy or unavailable"},
      {100, "no CUDA-capable device is detected"}, {101, "invalid device ordinal"},
      {802, "system not yet initialized"},
      {803, "system has unsupported display driver / cuda driver combination"},
      {804, "forward compatibility was attempted on non supported HW"}, {999, "unknown error"}};
  const auto it = texts.find(code);
  *s = it == texts.end() ? nullptr : it->second;
  return it == texts.end() ? kInvalidValue : kSuccess;
}
