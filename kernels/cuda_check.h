// The one error-checking macro of the project (BabelStream style): any CUDA
// runtime call that fails throws with the expression, file and line, so a
// benchmark or test can turn it into a clear failure instead of a wrong number.
// Before throwing it clears the runtime's last error (cudaGetLastError), so a
// failure caught in one benchmark does not surface again in the next one's
// launch check. (Sticky errors, which corrupt the context, cannot be cleared:
// every later call reports them.)
#pragma once

#include <stdexcept>
#include <string>

#ifdef CUDABENCH_HAVE_CUDA
#include <cuda_runtime_api.h>

namespace cudabench {
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what)
      : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};
}  // namespace cudabench

#define CUDA_CHECK(expr)                                                      \
  do {                                                                        \
    cudaError_t cudabench_err_ = (expr);                                      \
    if (cudabench_err_ != cudaSuccess) {                                      \
      (void)cudaGetLastError();                                               \
      throw ::cudabench::CudaError(                                           \
          cudabench_err_, std::string(#expr) + " failed at " + __FILE__ + ":" + \
                              std::to_string(__LINE__) + ": " +               \
                              cudaGetErrorName(cudabench_err_) + " (" +       \
                              cudaGetErrorString(cudabench_err_) + ")");      \
    }                                                                         \
  } while (0)
#endif
