// The ending signals (ending_signals.txt, made into kEndingSignals by CMake)
// and what a program does on one: its output files in progress removed
// (common/atomic_file.h's remove_temps), the process groups of its children
// killed (ChildGroup), then it ends by the same signal, so the caller sees
// the usual status. bench and train arm the handler first thing; so does
// every ChildGroup.
#pragma once

#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <csignal>

#include "common/atomic_file.h"
#include "process/ending_signals.h"  // generated: CUDABENCH_ENDING_SIGNALS

namespace cudabench::process {

// Every catchable signal that ends a process: the handler below takes them,
// the load guard's too, and run_command holds them across a fork.
inline constexpr int kEndingSignals[] = {CUDABENCH_ENDING_SIGNALS};

namespace detail {
// Child process groups running now (ChildGroup): a process that ends, by
// a signal or by _exit, ends them too, whatever group they are in.
constexpr int kChildSlots = 16;
inline std::atomic<int> g_child_groups[kChildSlots];
}  // namespace detail

// Async-signal-safe, for a process that is ending (a signal, or _exit):
// its temporary files removed and its children's groups killed.
inline void clean_up_before_exit() {
  cudabench::detail::remove_temps();
  for (auto& g : detail::g_child_groups)
    if (const int pgid = g.load(); pgid > 0) ::kill(-pgid, SIGKILL);
}

namespace detail {
extern "C" inline void clean_up_and_reraise(int sig) {
  clean_up_before_exit();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace detail

// Once per process: each ending signal still at its default gets the
// handler (one that is handled or ignored already is left as it is).
inline void arm_ending_handlers() {
  static const bool armed = [] {
    for (int sig : kEndingSignals) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = detail::clean_up_and_reraise;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)armed;
}

// A child's process group, killed by the handler above while this lives:
// Ctrl-C or TERM to bench must not leave a user's interpreter (in a group
// of its own, which the terminal's signal misses) running.
class ChildGroup {
 public:
  explicit ChildGroup(int pgid) {
    arm_ending_handlers();
    if (pgid <= 0) return;
    for (auto& g : detail::g_child_groups) {
      int expected = 0;
      if (g.compare_exchange_strong(expected, pgid)) {
        slot_ = &g;
        return;
      }
    }
  }
  ~ChildGroup() { release(); }
  // The group is no longer ours to kill (its leader is about to be reaped).
  void release() {
    if (slot_) slot_->store(0);
    slot_ = nullptr;
  }
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

 private:
  std::atomic<int>* slot_ = nullptr;
};

// Whether child `pid` has ended, left unreaped: until it is reaped, its
// zombie keeps its group's number from any other process, so the group can
// still be killed safely. ECHILD (reaped elsewhere) counts as ended. Raw
// calls only: the load guard uses it before the C library is set up.
inline bool ended_unreaped(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

}  // namespace cudabench::process
