// Output files are written whole or not at all: a temporary file beside the
// target, written and fsync'd, then rename(2), which replaces the target in
// one step. The temporary file is removed on every failure (a full disk, a
// rename that fails) and, when the program is stopped while writing it, by
// the handler of the ending signals (process/ending.h: remove_temps below).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <memory>
#include <random>
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

// Async-signal-safe: the temporary files in progress removed, for a
// process that is ending (process/ending.h calls it).
inline void remove_temps() {
  for (auto& s : g_temps)
    if (s.armed.load()) ::unlink(s.path);
}
}  // namespace detail

// A temporary file the ending handler (process/ending.h) removes until it is released.
class TrackedTemp {
 public:
  explicit TrackedTemp(const std::string& path) {
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

// The file `path` names, through any symlinks (a chain, or a link to a file
// not made yet): outputs are written there, so a link stays a link and its
// target gets the new content. A loop is left for open(2) to name (ELOOP).
inline std::string resolve_links(const std::string& path) {
  std::string p = path;
  for (int hop = 0; hop < 40; ++hop) {
    char buf[4096];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n <= 0) break;  // not a link
    std::string target(buf, static_cast<std::size_t>(n));
    const auto slash = p.rfind('/');
    if (target[0] != '/' && slash != std::string::npos) target = p.substr(0, slash + 1) + target;
    p = target;
  }
  return p;
}

// A stream, written in place: a device or a pipe, or a file descriptor's
// path, /dev/std*, /dev/fd/N or /proc/.../fd/N (/dev/stdout is a link to /proc/self/fd/1, whose
// own "target" is pipe:[N]: never resolved, never replaced; a regular file
// behind it is appended to, after what the shell or the console table wrote).
// A regular file elsewhere under /dev (/dev/shm) is a file, replaced whole.
inline bool is_stream(const std::string& path) {
  struct stat st {};
  const bool fd_link = (path.rfind("/proc/", 0) == 0 && path.find("/fd/") != std::string::npos) ||
                       path.rfind("/dev/fd/", 0) == 0 || path.rfind("/dev/std", 0) == 0;
  if (fd_link) return ::stat(path.c_str(), &st) == 0;
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

inline std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// A new temporary file beside `target`, tracked before it exists: a short
// name (a fixed prefix and a random suffix), so that any name the folder
// takes can be written. Returns the descriptor, or -1 with errno set and
// `tmp` empty.
inline int open_temp_beside(const std::string& target, std::string* tmp, std::unique_ptr<TrackedTemp>* guard) {
  static std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(::getpid())};
  const std::string dir = folder_of(target);
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
    *tmp = (dir == "/" ? "" : dir) + "/.tmp." + suffix;
    *guard = std::make_unique<TrackedTemp>(*tmp);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;
  }
  tmp->clear();  // errno stays open(2)'s
  return -1;
}

// What `path` is to this process when it is the running program or a file
// mapped into it (a library it loaded), else "": replacing either breaks
// this run and every later one, so an output there is refused.
inline std::string in_use_here(const std::string& path) {
  struct stat out {}, st {};
  if (::stat(path.c_str(), &out) != 0 || !S_ISREG(out.st_mode)) return "";
  auto same = [&](const char* p) { return ::stat(p, &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino; };
  if (same("/proc/self/exe")) return "the running program";
  // The parts beside it that it runs or preloads (process/load_guard.cpp): replaced,
  // the next run's driver check would silently stop.
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::string dir = folder_of(std::string(exe, static_cast<std::size_t>(n)));
    for (const char* part : {"/cudabench-driver-check", "/withheld/libcuda.so.1"})
      if (same((dir + part).c_str())) return "a part of this program (" + dir + part + ")";
  }
  std::unique_ptr<FILE, int (*)(FILE*)> maps(std::fopen("/proc/self/maps", "re"), std::fclose);
  char line[4352];
  std::string last;
  while (maps && std::fgets(line, sizeof line, maps.get())) {
    const char* file = std::strchr(line, '/');
    if (!file) continue;
    std::string name(file, std::strcspn(file, "\n"));
    if (name == last) continue;
    last = name;
    if (same(name.c_str())) return "a library this program loaded (" + name + ")";
  }
  return "";
}

// Whether `path` can be written: not "-", not a folder, and a file can be
// created beside its target (tried, then removed). On failure `why` says why.
inline bool check_writable(const std::string& path, std::string* why) {
  auto fail = [why](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (path == "-") return fail("'-' is not a file name here");
  if (is_stream(path)) return ::access(path.c_str(), W_OK) == 0 ? true : fail(std::strerror(errno));
  if (const std::string what = in_use_here(path); !what.empty()) return fail("it is " + what + ": give another file");
  const std::string target = resolve_links(path);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return fail(std::strerror(errno));  // a symlink loop, a file as a folder
  if (exists && S_ISDIR(st.st_mode)) return fail("is a directory");
  std::string tmp;
  std::unique_ptr<TrackedTemp> guard;
  const int fd = open_temp_beside(target, &tmp, &guard);
  if (fd < 0) {
    const std::string e = std::strerror(errno);
    return fail(exists ? "its folder " + folder_of(target) + " takes no new file (" + e + ")" : e);
  }
  ::close(fd);
  ::unlink(tmp.c_str());
  return true;
}

// Whether two paths name one file, through links (symbolic or hard): an
// output that is one of the program's inputs is refused, never replaced.
inline bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

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

// Writes `text` to `path` (through symlinks) whole or not at all. On failure
// returns false, leaves the file as it was, removes the temporary file, and
// says why. A stream (is_stream: /dev/stdout, a pipe, /dev/full) is written
// in place: it cannot be replaced, nor left partial.
inline bool write_file_atomically(const std::string& path, const std::string& text,
                                  std::string* why = nullptr) {
  int err = 0;
  if (is_stream(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    bool ok = fd >= 0 && detail::write_all(fd, text, &err);
    if (fd < 0) err = errno;
    if (fd >= 0 && ::close(fd) != 0 && ok) {
      err = errno;
      ok = false;
    }
    if (!ok && why) *why = std::strerror(err);
    return ok;
  }
  if (const std::string what = in_use_here(path); !what.empty()) {
    if (why) *why = "it is " + what;
    return false;
  }
  const std::string target = resolve_links(path);
  std::string tmp;
  std::unique_ptr<TrackedTemp> guard;
  auto fail = [&](int e) {
    if (why) *why = std::strerror(e);
    if (!tmp.empty()) ::unlink(tmp.c_str());
    return false;
  };
  const int fd = open_temp_beside(target, &tmp, &guard);
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
  if (std::rename(tmp.c_str(), target.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace cudabench
