// racecheck's canary (tests/kernels/test_vector_add_gpu.cpp,
// SanitizerCanary.DISABLED_SharedMemoryRace): every thread of a block
// writes its own number to one shared float and reads it back with no
// barrier between, a read-after-write race racecheck must report. Without
// a sanitizer it only writes `out`.
#include <cuda_runtime_api.h>

namespace {
__global__ void racy(float* out) {
  __shared__ float shared;
  shared = static_cast<float>(threadIdx.x);
  out[threadIdx.x] = shared;
}
}  // namespace

void launch_racy_kernel(float* out, unsigned threads) { racy<<<1, threads>>>(out); }
