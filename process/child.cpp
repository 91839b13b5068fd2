#include "process/child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "process/ending.h"

namespace cudabench::process {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kKillGrace = std::chrono::seconds(1);
// After the child exits, what is still in the pipe is read for this long:
// a daemon it left holding the pipe must not hold us to the deadline.
constexpr auto kOutputGrace = std::chrono::milliseconds(200);

// In the child, before it runs: its own process group, and the signals our
// process handles or ignores back to their defaults (an ignored SIGPIPE is
// inherited across exec; a handler of ours must not run in the child).
void child_defaults() {
  ::setpgid(0, 0);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
  for (int sig : kEndingSignals) ::signal(sig, SIG_DFL);
}

void keep(std::string* out, const char* buf, std::size_t n, const ChildOptions& o) {
  if (!o.keep_tail) {
    out->append(buf, std::min(n, o.max_output - std::min(o.max_output, out->size())));
    return;
  }
  out->append(buf, n);
  if (out->size() > o.max_output) out->erase(0, out->size() - o.max_output);
}

// Whether the child was reaped by `until`. ECHILD (someone else reaped it)
// counts as ended, its status unknown.
bool reap(pid_t pid, int* status, Clock::time_point until) {
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r < 0 && errno == ECHILD) *status = 0;
    if (r == pid || (r < 0 && errno != EINTR)) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Reads the child's pipe until it ends and the child exits (then for a short
// grace only), or the deadline. Whatever is left of its group then (a
// daemon it started) is killed: nothing it started outlives the answer.
ChildResult supervise(pid_t pid, int fd, const ChildOptions& o, ChildGroup* group) {
  ChildResult r;
  r.started = true;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  auto until = deadline;
  char buf[8192];
  bool open = true, exited = false;
  int status = 0;
  while (open || !exited) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = open ? ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 20))) : 0;
    if (!open) std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long long>(left, 5)));
    if (ready > 0) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) keep(&r.output, buf, static_cast<std::size_t>(n), o);
      else if (n == 0 || errno != EINTR) open = false;
    } else if (ready < 0 && errno != EINTR) {
      open = false;
    }
    if (!exited && ended_unreaped(pid)) {
      exited = true;
      until = std::min(deadline, Clock::now() + kOutputGrace);
    }
  }
  ::close(fd);
  // What it left in its group (a daemon holding the pipe, or not) ends with
  // it; past the deadline the child itself, which may outlive SIGKILL.
  ::kill(-pid, SIGKILL);
  if (!exited) {
    r.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  group->release();  // before the reap frees its number
  if (!reap(pid, &status, Clock::now() + kKillGrace)) {
    r.left_behind = true;
    return r;
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status) && !r.timed_out) r.signal = WTERMSIG(status);
  return r;
}

// Our children now, as /proc shows them.
std::vector<pid_t> our_children() {
  std::vector<pid_t> out;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat;
    std::getline(std::ifstream("/proc/" + pid + "/stat"), stat);
    const auto name_end = stat.rfind(')');  // the command's name may hold anything
    std::istringstream rest(name_end == std::string::npos ? "" : stat.substr(name_end + 1));
    std::string state, ppid;
    if (rest >> state >> ppid && ppid == self) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

// What the child started and left (a daemon in a session or group of its
// own escapes kill(-pid)) is reparented to us, not to init: we are a
// subreaper (run_command sets it). Every child of ours that was not one
// before the fork is ended and reaped here, round by round (what it
// started in turn is reparented to us as it ends): nothing the child
// started outlives its answer.
void end_orphans(const std::vector<pid_t>& before) {
  const auto until = Clock::now() + kKillGrace;
  for (int quiet = 0; quiet < 2 && Clock::now() < until;) {
    bool found = false;
    for (const pid_t pid : our_children()) {
      if (std::find(before.begin(), before.end(), pid) != before.end()) continue;
      ::kill(pid, SIGKILL);
      int status = 0;
      reap(pid, &status, until);
      found = true;
    }
    quiet = found ? 0 : quiet + 1;  // two quiet looks, a moment apart: one still being reparented is seen
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

ChildResult run_command(const std::vector<std::string>& argv, const ChildOptions& o) {
  if (argv.empty()) return {};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  static const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;  // end_orphans
  (void)subreaper;
  const std::vector<pid_t> ours = our_children();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  // Signals held from the fork until the child's group is registered: one
  // arriving in between would end us and leave the child running.
  sigset_t ending, before;
  sigemptyset(&ending);
  for (int sig : kEndingSignals) sigaddset(&ending, sig);
  ::pthread_sigmask(SIG_BLOCK, &ending, &before);
  const pid_t pid = ::fork();
  if (pid == 0) {
    child_defaults();
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(fds[1], 1);
    ::dup2(o.merge_stderr ? fds[1] : null, 2);
    if (o.cwd.empty() || ::chdir(o.cwd.c_str()) == 0) ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid > 0) ::setpgid(pid, pid);  // as the child does: whichever runs first
  ChildGroup group(pid > 0 ? pid : 0);  // killed if a signal ends us
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) {
    ::close(fds[0]);
    return {};
  }
  ChildResult r = supervise(pid, fds[0], o, &group);
  end_orphans(ours);
  if (r.exit_code == 127 && r.output.empty()) r.started = false;
  return r;
}

std::string signal_name(int sig) {
  const char* abbrev = sig > 0 ? ::sigabbrev_np(sig) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace cudabench::process
