// Child processes with a deadline. Every program cudabench asks something
// (nvcc, ldconfig, scontrol, a user's Python) runs in a process group of
// its own, read through a pipe until it ends or its deadline passes; then
// the whole group is killed. A child stuck in
// the kernel (a stuck GPU holds its callers in uninterruptible sleep) cannot
// be killed: after a short grace it is left behind, never waited for, and a
// grandchild that keeps the pipe open cannot hold the caller either.
#pragma once

#include <string>
#include <vector>

namespace cudabench::process {

struct ChildOptions {
  double seconds = 15;                 // the deadline, from the start
  std::size_t max_output = 1 << 16;    // bytes kept of what it writes
  bool keep_tail = false;              // past max_output keep the last bytes, not the first
  bool merge_stderr = false;           // run_command: stderr to the pipe too (else /dev/null)
  std::string cwd;                     // run_command: the folder it starts in ("" ours)
};

struct ChildResult {
  bool started = false;    // false: it could not be started (no such program: exit_code 127)
  bool timed_out = false;  // its deadline passed and its group was killed
  bool left_behind = false;  // it outlived SIGKILL (stuck in the kernel)
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal it did not get from us ended it
  std::string output;
};

// `argv` (argv[0] found on PATH), stdin from /dev/null.
ChildResult run_command(const std::vector<std::string>& argv, const ChildOptions& o);
// "SIGSEGV" for 11; "signal N" when unnamed.
std::string signal_name(int sig);

}  // namespace cudabench::process
