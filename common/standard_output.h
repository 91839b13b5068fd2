// Standard output is an output like any file: a full disk, a closed
// descriptor or a file-size limit must fail the run (exit 3, naming it),
// never end in an empty file and exit 0.
//   - SIGXFSZ is ignored: past `ulimit -f` a write fails with EFBIG, which
//     the writer reports (and an atomic file removes its temporary),
//     instead of the process dying with a partial .tmp file.
//   - SIGPIPE is ignored: a reader that went away (`bench | head -1`) is
//     a failed write. With an output file still to finish, the run goes
//     on without its console output; with none, the process ends by
//     SIGPIPE as a shell pipeline expects.
//   - std::cout writes through write(2) here, keeping the first error.
//   - A closed descriptor 1 is held by /dev/null opened read-only, so no
//     file the program opens takes its number, and writes to it fail.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <string>

namespace cudabench {

class StandardOutput : public std::streambuf {
 public:
  // Call first thing in main(). The object lives to the process's end,
  // after the last flush of std::cout.
  static StandardOutput& install() {
    static StandardOutput* out = new StandardOutput;
    std::signal(SIGXFSZ, SIG_IGN);
    std::signal(SIGPIPE, SIG_IGN);
    if (::fcntl(1, F_GETFD) < 0) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd >= 0 && fd != 1) {
        ::dup2(fd, 1);
        ::close(fd);
      }
    }
    std::cout.rdbuf(out);
    return *out;
  }
  // Whether a reader that went away leaves an output file worth finishing
  // (else the process ends by SIGPIPE at the next write).
  void keep_going_on_epipe(bool yes) { keep_going_on_epipe_ = yes; }
  // At the end: "" when everything written reached its place, else why
  // ("No space left on device"). A reader that went away is no failure.
  std::string finish() {
    sync();
    if (error_ == 0 && ::fsync(1) != 0 && errno != EINVAL && errno != EROFS && errno != EBADF) error_ = errno;
    return error_ == 0 || error_ == EPIPE ? "" : std::strerror(error_);
  }

 private:
  static constexpr std::size_t kSize = 1 << 16;
  char buf_[kSize];
  int error_ = 0;
  bool keep_going_on_epipe_ = false;
  const bool line_buffered_ = ::isatty(1) == 1;

  StandardOutput() { setp(buf_, buf_ + kSize); }
  bool drain() {
    const char* p = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    setp(buf_, buf_ + kSize);
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(1, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        if (error_ == EPIPE && !keep_going_on_epipe_) {
          std::signal(SIGPIPE, SIG_DFL);
          std::raise(SIGPIPE);
        }
        break;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return error_ == 0 || error_ == EPIPE;
  }
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
      if (line_buffered_ && c == '\n') return drain() ? c : traits_type::eof();
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = 0;
    for (; done < n; ++done)
      if (traits_type::eq_int_type(overflow_or_put(s[done]), traits_type::eof())) break;
    return done;
  }
  int_type overflow_or_put(char c) {
    if (pptr() == epptr() || (line_buffered_ && c == '\n')) return overflow(traits_type::to_int_type(c));
    *pptr() = c;
    pbump(1);
    return traits_type::to_int_type(c);
  }
  int sync() override { return drain() ? 0 : -1; }
};

}  // namespace cudabench
