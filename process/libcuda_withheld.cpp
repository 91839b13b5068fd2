// A libcuda.so.1 with no driver in it (its soname is libcuda.so.1), which
// load_guard.cpp preloads when the real one hung or crashed when checked:
// every later load of the driver (LibTorch's cuSPARSELt, the CUDA runtime)
// gets this one, whose every entry point answers CUDA_ERROR_NO_DEVICE.
namespace {
constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
}  // namespace

extern "C" {
int cuInit(unsigned) { return kNoDevice; }
int cuDriverGetVersion(int* version) {
  if (version) *version = 0;
  return kNoDevice;
}
int cuDeviceGetCount(int* count) {
  if (count) *count = 0;
  return kNoDevice;
}
int cuGetProcAddress(const char*, void** fn, int, unsigned long long) {
  if (fn) *fn = nullptr;
  return kNoDevice;
}
int cuGetProcAddress_v2(const char*, void** fn, int, unsigned long long, void*) {
  if (fn) *fn = nullptr;
  return kNoDevice;
}
}
