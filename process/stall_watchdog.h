// A deadline on progress. A stuck GPU (a kernel that never ends, a driver
// call that never returns, an Xid) blocks the thread waiting on it with no
// error, ever. A thread watches: when no step finished within `seconds`,
// it says what it was waiting for and how long, removes any output file in
// progress, and ends the process with exit 3 (bench's results file already
// holds every finished row).
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "common/cli.h"
#include "process/ending.h"

namespace cudabench {

class StallWatchdog {
 public:
  // `seconds` <= 0: no deadline. The line reads `who` ("bench: "), "no
  // `step` in N s since <the last>: stopped; ...", then `kept`.
  StallWatchdog(double seconds, std::string who, std::string step, std::string kept)
      : seconds_(seconds), who_(std::move(who)), step_(std::move(step)), kept_(std::move(kept)) {
    if (seconds_ > 0) thread_ = std::thread([this] { watch(); });
  }
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;
  ~StallWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // A step finished; `last` names it in the message if the next one stalls.
  void progress(const std::string& last) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = last;
    ++steps_;
    cv_.notify_all();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      const long long seen = steps_;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds_);
      if (cv_.wait_until(lock, deadline, [&] { return done_ || steps_ != seen; })) continue;
      const std::string line = who_ + "no " + step_ + " in " + short_number(seconds_) +
                               " s" + (last_.empty() ? " (none yet)" : " since " + last_) +
                               ": stopped; a GPU that stopped answering? see the Xid lines of dmesg and "
                               "`timeout 30 nvidia-smi -q`; " + kept_ + "\n";
      process::clean_up_before_exit();
      (void)!::write(2, line.data(), line.size());
      ::_exit(3);  // the stuck thread cannot be joined, nor static state torn down under it
    }
  }

  const double seconds_;
  const std::string who_, step_, kept_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  long long steps_ = 0;
  std::string last_;
  std::thread thread_;
};

}  // namespace cudabench
