// stream_cover: what keeps a stream from reaching a start event before the
// host has enqueued everything behind it (the timed work, the stop event).
// Without a cover, a start event on an idle stream is timestamped at once and
// the host's time to enqueue the work (a few us for a copy, more for a
// library call, much more for hundreds of launches) is measured as GPU time.
//
//   gate  : one thread spins until the host opens it through a flag in
//           mapped host memory (nvbench's blocking kernel). The host opens
//           it once the stop event is enqueued, so the GPU starts the timed
//           work only then, however slow the host was. A gate never opened
//           gives up after its timeout and says so: the measurement is void,
//           and a stalled host or a full launch queue cannot hang the run.
//   delay : one thread spins for a set time; for work that blocks the host
//           while it is enqueued (pageable copies), which a gate would
//           deadlock until its timeout.
//
// Bytes: none. The wait is a body the host tests drive with their own clock.
#pragma once

#include <cstdint>

#include "host_device.cuh"

namespace cudabench::stream_cover {

// What the host and the gate share: the host writes `open`, the gate writes
// `timed_out` (1 when it gave up waiting).
struct GateFlags {
  std::uint32_t open;
  std::uint32_t timed_out;
};

// Polls `open` until it is non-zero (true) or now() reaches `deadline_ns`
// (false), napping between polls.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class Now, class Nap>
CUDABENCH_HD bool wait_open(const volatile std::uint32_t* open, std::uint64_t deadline_ns, Now now, Nap nap) {
  while (*open == 0) {
    if (now() >= deadline_ns) return false;
    nap();
  }
  return true;
}

#ifdef CUDABENCH_HAVE_CUDA
// Occupies `stream` for at least `ns` nanoseconds.
void delay(std::uint64_t ns, cudaStream_t stream);
// A kernel that does nothing: what a launch costs (launch_overhead).
void empty(cudaStream_t stream);
// Holds `stream` until flags->open is set, at most `timeout_ns`; `flags` is
// the device's view of mapped host memory.
void gate(GateFlags* flags, std::uint64_t timeout_ns, cudaStream_t stream);
#endif

}  // namespace cudabench::stream_cover
