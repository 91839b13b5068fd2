// Before bench or train loads anything, the driver is tried in a child. A
// stuck GPU blocks cuInit and NVML's init; a broken driver crashes in a
// call or in its constructor; and LibTorch reaches the driver on its own
// (cuSPARSELt loads it in its constructor, the autograd engine counts the
// GPUs), so no later check in the process could keep it away. This runs
// first (the executable's preinit array: before every shared library's
// constructor) and has cudabench-driver-check make the probe's calls
// within CUDABENCH_PROBE_SECONDS (15 s). If it hung, crashed or ended the
// process (exit() in the driver), the
// program starts again with the withheld libcuda.so.1 (libcuda_withheld.cpp)
// preloaded, which every later load of the driver gets, and
// CUDABENCH_LIBCUDA_WITHHELD naming the call ("libcuda hung in cuInit for
// 15 s"); the environment report says it (env/collect.cpp). Raw calls only:
// the C library is not initialised yet. Without the two files beside the
// executable nothing is checked, nor with CUDABENCH_DRIVER_CHECKED=ok: the
// run that started this process (samples.py, gpu-check.sh) checked once for
// all of its processes.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/settings.h"
#include "process/ending.h"

namespace {

const char* env_value(char** envp, const char* key) {
  const size_t n = strlen(key);
  for (char** e = envp; e && *e; ++e)
    if (strncmp(*e, key, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

long now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

// The check's last "calling NAME" line, from what it wrote (kept in `out`).
const char* last_call(char* out) {
  const char* last = "its start";
  for (char* line = strstr(out, "calling "); line; line = strstr(line + 1, "calling ")) {
    char* end = strchr(line, '\n');
    if (!end) break;
    *end = '\0';
    last = line + 8;
    line = end;
  }
  return last;
}

// The check's group while it runs: a signal that ends this process (Ctrl-C
// during a check stuck in cuInit) ends the check too, then this process by
// the same signal.
volatile sig_atomic_t g_check_group = 0;
using cudabench::process::kEndingSignals;
constexpr int kEnding = sizeof kEndingSignals / sizeof kEndingSignals[0];

extern "C" void end_check_and_reraise(int sig) {
  if (g_check_group > 0) kill(-g_check_group, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Runs the check; "" in `why` when it answered (or could not start).
void run_check(const char* check, char** envp, int seconds, char* why, size_t size) {
  static char out[1 << 16];
  size_t used = 0;
  why[0] = '\0';
  int fds[2];
  if (pipe(fds) != 0) return;
  fcntl(fds[0], F_SETFL, O_NONBLOCK);  // the reading end: drained without waiting
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    // Its own process group, and none of the caller's files: a check stuck
    // in the kernel, or a helper the driver starts, must not hold a pipe
    // the caller reads to its end (bench's stderr under `$(...)`).
    setpgid(0, 0);
    dup2(fds[1], 1);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 2);
    close_range(3, ~0U, 0);
    char* const args[] = {const_cast<char*>(check), nullptr};
    execve(check, args, envp);
    _exit(127);
  }
  close(fds[1]);
  g_check_group = pid;
  setpgid(pid, pid);  // as the child does: whichever runs first
  struct sigaction ours {}, before[kEnding];
  ours.sa_handler = end_check_and_reraise;
  sigemptyset(&ours.sa_mask);
  for (int i = 0; i < kEnding; ++i)  // an ignored signal stays ignored
    if (sigaction(kEndingSignals[i], nullptr, &before[i]) == 0 && before[i].sa_handler != SIG_IGN)
      sigaction(kEndingSignals[i], &ours, nullptr);
  const long until = now_ms() + seconds * 1000L;
  int status = 0;
  bool ended = false;
  for (long left; !ended && (left = until - now_ms()) > 0;) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left < 50 ? left : 50)) > 0) {
      const ssize_t n = read(fds[0], out + used, sizeof out - 1 - used);
      if (n > 0) used += static_cast<size_t>(n);
      if (used >= sizeof out - 1) used = 0;  // a chatty library: keep the latest
    }
    ended = cudabench::process::ended_unreaped(pid);
  }
  for (ssize_t n; ended && used < sizeof out - 1 && (n = read(fds[0], out + used, sizeof out - 1 - used)) > 0;)
    used += static_cast<size_t>(n);  // its last words, written before it ended
  close(fds[0]);
  // Hung, or ended leaving a helper in its group: the group goes. A check
  // stuck in the kernel may outlive it: it is not waited for.
  kill(-pid, SIGKILL);
  for (int i = 0; i < kEnding; ++i) sigaction(kEndingSignals[i], &before[i], nullptr);
  g_check_group = 0;
  if (ended) waitpid(pid, &status, 0);  // a zombie already: at once
  out[used] = '\0';
  const bool finished = strstr(out, "calling nothing: ") != nullptr;  // the check's last line
  const bool never_ran = used == 0 && ended && WIFEXITED(status) && WEXITSTATUS(status) == 127;  // execve failed
  const char* call = last_call(out);
  const char* library = strstr(call, "nvml") || strstr(call, "nvidia-ml") ? "NVML" : "libcuda";
  if (!ended) {
    snprintf(why, size, "%s hung in %s for %d s", library, call, seconds);
  } else if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    snprintf(why, size, "%s crashed in %s (SIG%s)", library, call, name ? name : "?");
  } else if (!finished && !never_ran) {  // exit() in the driver: it would end bench or train as silently
    snprintf(why, size, "%s ended the process in %s (exit %d)", library, call, WEXITSTATUS(status));
  }
}

// The user's LD_PRELOAD without any libcuda or NVML in it (one that hung or
// crashed would be loaded again), after the stub: "LD_PRELOAD=stub:rest".
void withheld_preload(const char* stub, const char* old, char* out, size_t size) {
  size_t used = static_cast<size_t>(snprintf(out, size, "LD_PRELOAD=%s", stub));
  for (const char* p = old; p && *p && used < size;) {
    const size_t len = strcspn(p, ": ");
    const char* base = p + len;
    while (base > p && base[-1] != '/') --base;
    const bool driver = strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libnvidia-ml.so", 15) == 0;
    if (len > 0 && !driver) used += static_cast<size_t>(snprintf(out + used, size - used, ":%.*s", int(len), p));
    p += len + (p[len] ? 1 : 0);
  }
}

void guard(int, char** argv, char** envp) {
  // An ignored SIGCHLD (inherited) would reap children before waitpid sees them.
  signal(SIGCHLD, SIG_DFL);
  // Checked once already by the run that started this process (samples.py,
  // gpu-check.sh): a GPU initialisation per process saved.
  const char* checked = env_value(envp, "CUDABENCH_DRIVER_CHECKED");
  if (checked && strcmp(checked, "ok") == 0) return;
  static char exe[PATH_MAX], check[PATH_MAX + 64], stub[PATH_MAX + 64], why[512];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = '\0';
  snprintf(check, sizeof check, "%s/cudabench-driver-check", exe);
  snprintf(stub, sizeof stub, "%s/withheld/libcuda.so.1", exe);
  *slash = '/';
  if (access(check, X_OK) != 0 || access(stub, R_OK) != 0) return;
  // Started again already: the reason, with the stub first in LD_PRELOAD
  // (a stray CUDABENCH_LIBCUDA_WITHHELD alone is not this guard's, and is dropped below).
  const char* was = env_value(envp, "LD_PRELOAD");
  const size_t stub_len = strlen(stub);
  if (env_value(envp, "CUDABENCH_LIBCUDA_WITHHELD") && was && strncmp(was, stub, stub_len) == 0 &&
      (was[stub_len] == '\0' || was[stub_len] == ':'))
    return;
  // A bad deadline is refused here, before a check runs with the default.
  const cudabench::Setting& deadline = *cudabench::find_setting("CUDABENCH_PROBE_SECONDS");
  const double seconds = cudabench::setting_of(deadline, env_value(envp, deadline.name));
  if (seconds != seconds) {  // NaN
    static char line[700];
    const char* program = argv && argv[0] ? argv[0] : "cudabench";
    const char* name = strrchr(program, '/');
    int n = snprintf(line, 100, "%s: ", name ? name + 1 : program);
    if (n < 0 || n >= 100) n = 99;  // a name past 96 bytes is cut
    cudabench::setting_problem(deadline, env_value(envp, deadline.name), line + n, sizeof line - 1 - n);
    strcat(line, "\n");
    [[maybe_unused]] const ssize_t w = write(2, line, strlen(line));
    _exit(2);
  }
  run_check(check, envp, static_cast<int>(seconds), why, sizeof why);
  if (!why[0]) return;
  // Again, with the stub preloaded and the reason said.
  static char withheld[600];
  // The user's whole LD_PRELOAD after the stub, however long.
  const char* user_preload = env_value(envp, "LD_PRELOAD");
  const size_t preload_size = strlen(stub) + (user_preload ? strlen(user_preload) : 0) + 32;
  void* preload_room = mmap(nullptr, preload_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* preload = preload_room == MAP_FAILED ? nullptr : static_cast<char*>(preload_room);
  if (preload) withheld_preload(stub, user_preload, preload, preload_size);
  snprintf(withheld, sizeof withheld, "CUDABENCH_LIBCUDA_WITHHELD=%s", why);
  // The whole environment again, however long (mmap: no malloc this early).
  size_t count = 0;
  while (envp && envp[count]) ++count;
  void* room = mmap(nullptr, (count + 3) * sizeof(char*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char** env = room == MAP_FAILED ? nullptr : static_cast<char**>(room);
  size_t k = 0;
  for (size_t i = 0; env && i < count; ++i)
    if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0 && strncmp(envp[i], "CUDABENCH_LIBCUDA_WITHHELD=", 27) != 0)
      env[k++] = envp[i];
  if (env && preload) {
    env[k++] = preload;
    env[k++] = withheld;
    env[k] = nullptr;
    execve(exe, argv, env);
  }
  static const char failed[] = "cudabench: the driver hung or crashed when checked, and the program could not start "
                               "again without it\n";
  [[maybe_unused]] const ssize_t w = write(2, failed, sizeof failed - 1);
  _exit(3);
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const cudabench_load_guard)(int, char**,
                                                                                        char**) = guard;
