// stream_delay: keeps a stream busy for a set time, so that what the host
// enqueues behind it (a start event, the timed work, the stop event) is all
// queued before the GPU reaches the start event. Without it, a start event
// on an idle stream is timestamped at once and the host's time to enqueue
// the work (a few us for a copy, more for a library call) is measured as GPU
// time. nvbench's blocking kernel serves the same purpose.
//
// Bytes: none. One thread spins on %globaltimer (nanoseconds).
#pragma once

#include <cstdint>

#ifdef CUDABENCH_HAVE_CUDA
#include <cuda_runtime_api.h>

namespace cudabench::stream_delay {
// Occupies `stream` for at least `ns` nanoseconds.
void delay(std::uint64_t ns, cudaStream_t stream);
}  // namespace cudabench::stream_delay
#endif
