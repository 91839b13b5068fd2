// The VectorAdd and Copy rows on the GPU: registration, the buffer sets,
// the check against the CPU, rotated or flushed timing, and the copy
// reference each add is held against.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>

#include "bench_support.h"

namespace cudabench::bench {

// The host's time to enqueue one launch, as a row's wall-time bound counts
// it (bound_wall_time): a raw kernel or a copy, a library call (cuBLAS,
// Thrust), a LibTorch op. An overestimate only shortens the row.
constexpr double kKernelEnqueue = 5e-6, kLibraryEnqueue = 10e-6, kTorchEnqueue = 25e-6;  // s

// VectorAdd and Copy on the GPU. A MakeGpuAdd is called once per benchmark
// run with the device buffers (a and b hold input_seeds(n)'s streams, made
// on the device; a Copy reads a only) and returns what one iteration launches on `s`, so that anything
// costly (tensor wrappers, handles) is built outside the timed region.
using GpuAdd = std::function<void()>;
using MakeGpuAdd =
    std::function<GpuAdd(const float* a, const float* b, float* c, std::size_t n, cudaStream_t s, int dev)>;
// What a library row calls at n, as its label ends: "cublasSgeam on a
// 16384 x 8192 matrix (lda 16384)". Empty: nothing to say.
using Calls = std::function<std::string(std::size_t n)>;
// Registers VectorAdd/<name>/n:N[/dev:D] for every size and selected device,
// on buffers kept per size, their inputs made on the device: check once
// (c poisoned first; on the device, against the values the CPU reference
// gives: kernels/device_check.cuh), warm up, poison every output, then the
// timed loop (back to back over rotating buffer sets below 8x L2, else one
// launch after the L2 flush; methodology.md), then check every buffer set
// launched, again on the device. Wall time is bounded as bound_wall_time
// says, with `enqueue_s` the host's time to enqueue one launch. A row that
// is DRAM-bound (neither warm in L2 nor latency-bound) gets frac_of_peak,
// and copy_GBps and frac_of_copy: the best device copy's bandwidth at this
// n (the faster of Copy/cuda_float4 and Copy/cuda_memcpy), measured in the
// same process as that row is timed, as the CPU rows are held against
// Copy/cpu_nt.
void register_vector_add_rows(const RunOptions& run, const std::string& name, const MakeGpuAdd& make,
                              double enqueue_s, const Calls& calls = {});
// Copy/<name>/n:N[/dev:D] for each device copy (c = a, 8 bytes per
// element: cuda_kernel, cuda_float4, cuda_memcpy), timed and checked as
// VectorAdd is (c == a, bit for bit).
void register_gpu_copies(const RunOptions& run);

}  // namespace cudabench::bench
