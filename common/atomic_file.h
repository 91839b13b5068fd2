// Output files are written whole or not at all: a temporary file beside the
// target, written and fsync'd, then rename(2), which replaces the target in
// one step. The temporary file is removed on every failure (a full disk, a
// rename that fails) and, through a handler for SIGINT, SIGTERM, SIGHUP and
// SIGQUIT, when the process is stopped while writing it; the handler then
// ends the process by the same signal, so the caller sees the usual status.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace cudabench {

namespace detail {
// Temporary files in progress, as fixed buffers: the signal handler may only
// read memory that is never reallocated.
constexpr int kTempSlots = 8;
constexpr std::size_t kTempPathMax = 4096;
struct TempSlot {
  std::atomic<bool> claimed{false};  // owned by a TrackedTemp
  std::atomic<bool> armed{false};    // path is complete: the handler may remove it
  char path[kTempPathMax];
};
inline TempSlot g_temps[kTempSlots];

extern "C" inline void remove_temps_and_reraise(int sig) {
  for (auto& s : g_temps)
    if (s.armed.load()) ::unlink(s.path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

inline void install_handlers_once() {
  static const bool installed = [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler != SIG_DFL) continue;  // someone else handles it (or ignores it)
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_reraise;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)installed;
}
}  // namespace detail

// A temporary file the signal handler removes until it is released.
class TrackedTemp {
 public:
  explicit TrackedTemp(const std::string& path) {
    detail::install_handlers_once();
    if (path.size() >= detail::kTempPathMax) return;
    for (auto& s : detail::g_temps) {
      bool expected = false;
      if (!s.claimed.compare_exchange_strong(expected, true)) continue;
      std::memcpy(s.path, path.c_str(), path.size() + 1);
      s.armed.store(true);
      slot_ = &s;
      return;
    }
  }
  ~TrackedTemp() {
    if (!slot_) return;
    slot_->armed.store(false);
    slot_->claimed.store(false);
  }
  TrackedTemp(const TrackedTemp&) = delete;
  TrackedTemp& operator=(const TrackedTemp&) = delete;

 private:
  detail::TempSlot* slot_ = nullptr;
};

inline std::string temp_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

// Whether `path` can be written: not a folder, and a file can be created
// beside it (tried, then removed). On failure `why` says why (strerror).
inline bool check_writable(const std::string& path, std::string* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      if (why) *why = "is a directory";
      return false;
    }
    if (::access(path.c_str(), W_OK) == 0) return true;  // a device or a pipe: written in place
    if (why) *why = std::strerror(errno);
    return false;
  }
  const std::string tmp = temp_path_for(path);
  TrackedTemp guard(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (why) *why = std::strerror(errno);
    return false;
  }
  ::close(fd);
  ::unlink(tmp.c_str());
  return true;
}

// Writes `text` to `path` whole or not at all. On failure returns false,
// leaves `path` as it was, removes the temporary file, and says why.
namespace detail {
inline bool write_all(int fd, const std::string& text, int* err) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = n < 0 ? errno : ENOSPC;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace detail

// A target that exists and is not a regular file (/dev/stdout, a pipe,
// /dev/full) is written in place: it cannot be replaced, nor left partial.
inline bool write_file_atomically(const std::string& path, const std::string& text,
                                  std::string* why = nullptr) {
  int err = 0;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && detail::write_all(fd, text, &err);
    if (fd < 0) err = errno;
    if (fd >= 0 && ::close(fd) != 0 && ok) {
      err = errno;
      ok = false;
    }
    if (!ok && why) *why = std::strerror(err);
    return ok;
  }
  const std::string tmp = temp_path_for(path);
  TrackedTemp guard(tmp);
  auto fail = [&](int e) {
    if (why) *why = std::strerror(e);
    ::unlink(tmp.c_str());
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errno);
  if (!detail::write_all(fd, text, &err)) {
    ::close(fd);
    return fail(err);
  }
  if (::fsync(fd) != 0) {
    err = errno;
    ::close(fd);
    return fail(err);
  }
  if (::close(fd) != 0) return fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace cudabench
