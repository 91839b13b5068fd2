"""Child processes and signals: process groups stopped with a deadline,
the ending signals (process/ending_signals.txt) raised as an exception so
that `finally` blocks run,
who this process's ancestors are, and how much of the machine others took
while a child ran (LoadMeter)."""
import contextlib
import functools
import os
import resource
import signal
import subprocess
import time

from .paths import ROOT


@functools.lru_cache(maxsize=None)
def ending_signals():
    """The signals that end a tool cleanly: process/ending_signals.txt, the
    one list (C++ and scripts/lib.sh read it too). Read when first needed,
    inside run_tool: a checkout without it is one line, not a traceback."""
    with open(os.path.join(ROOT, "process", "ending_signals.txt")) as f:
        names = " ".join(line for line in f if not line.startswith("#")).split()
    return tuple(getattr(signal, "SIG" + n) for n in names)


class Terminated(BaseException):
    """An ending signal other than ^C, raised where the program is, so that
    `finally` blocks remove temporary files before it exits."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum, _frame):
    ignore_further_signals()
    raise Terminated(signum)


def raise_interrupted(_signum, _frame):
    """^C as Python raises it (KeyboardInterrupt), the later signals ignored as raise_terminated does."""
    ignore_further_signals()
    raise KeyboardInterrupt


def ignore_further_signals():
    """Once a signal stops the tool, another (a second Ctrl-C, the TERM a
    launcher sends the whole group) must not cut short what the first
    started: the children's groups stopped, the temporary folders removed.
    The tool ends by the first signal right after (base/cli.run_tool)."""
    for sig in ending_signals():
        signal.signal(sig, signal.SIG_IGN)


PR_SET_PDEATHSIG = 1


def ends_with_us():
    """A preexec_fn: the child gets SIGKILL when this process ends, even by
    SIGKILL (Linux's parent-death signal), so that a bench, a git or a
    training rank never outlives the tool that started it, nor a script's
    lock (run_job in lib.sh does the same with setpriv). None elsewhere."""
    import ctypes
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded here, before the fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # it ended before the signal was armed
            os._exit(128 + signal.SIGKILL)
    return arm


def split_passthrough(argv):
    """(our arguments, the ones after `--` that go to the program we run)."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def stop_groups(procs, grace):
    """SIGTERM the process group of each process (each one started with
    start_new_session), wait up to `grace` seconds for them, then SIGKILL
    what is left of every group: a child that outlived its leader (or
    ignored the SIGTERM) ends too. Every wait has a deadline. samples.py,
    ab.py and ddp_scaling.py stop their children here."""
    live = [p for p in procs if p.returncode is None]  # a reaped leader's number may be another's now
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in live:
            try:
                os.killpg(p.pid, sig)
            except OSError:  # the group is gone
                pass
        deadline = time.monotonic() + grace
        for p in live:  # ended, not reaped: its zombie keeps the group's number for the KILL
            ended_unreaped(p, max(0.1, deadline - time.monotonic()))
    for p in live:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def stop_group(pgid, grace):
    """SIGTERM the process group `pgid`, wait up to `grace` seconds for it to
    be gone, then SIGKILL what is left: for a group that is not our child's
    (lib.sh's stop_job_and_exit runs `python3 -m cudabench.base.processes
    stop-group PGID SECONDS` for its job)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            time.sleep(0.1)
            os.killpg(pgid, 0)  # OSError once the group is gone
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # the group is gone
        pass


def ended_unreaped(p, timeout):
    """Wait up to `timeout` for p to end, leaving it unreaped (os.waitid
    with WNOWAIT): until it is reaped no other process can take the number
    of its group. True when it ended."""
    deadline = time.monotonic() + timeout
    while p.returncode is None:
        try:
            if os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return True
        except ChildProcessError:  # reaped elsewhere
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def ancestors():
    """The ids of this process's parent, its parent's parent, ... (from /proc)."""
    out, pid = set(), os.getppid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def proc_stat():
    """(busy, stolen, all) seconds of all CPUs since boot, from /proc/stat, or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq) / hz, steal / hz, sum(v) / hz


def process_times():
    """{pid: (name, ppid, CPU seconds so far)} of every process /proc shows."""
    hz, out = os.sysconf("SC_CLK_TCK"), {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                text = f.read()
            head, rest = text.rsplit(")", 1)
            v = rest.split()
            out[int(d)] = (head.split("(", 1)[1], int(v[1]), (int(v[11]) + int(v[12])) / hz)
        except (OSError, ValueError, IndexError):
            continue
    return out


def wait_in_own_group(cmd, err, env, seconds, meter=None, poll_seconds=1.0):
    """Run cmd in a process group of its own and wait up to `seconds`
    (meter.poll() every poll_seconds meanwhile: who else is busy); its exit code, or None when it
    ran past them. Then, or if this process is interrupted, the whole group
    (a wrapper such as cpu-quota.sh and the bench under it) is ended with
    SIGTERM, so wrappers can clean up. When it ends, what it left in its
    group is killed before it is reaped (its zombie keeps the number)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True,
                         preexec_fn=ends_with_us())
    deadline = time.monotonic() + seconds
    try:
        while True:
            if ended_unreaped(p, max(0.01, min(poll_seconds, deadline - time.monotonic()))):
                with contextlib.suppress(OSError):  # the group is gone
                    os.killpg(p.pid, signal.SIGKILL)
                return p.wait()
            if time.monotonic() >= deadline:
                stop_groups([p], 10)
                return None
            if meter:
                meter.poll()
    except BaseException:
        stop_groups([p], 10)
        raise


class LoadMeter:
    """The share of the machine's CPU time that others took while a child ran:
    busy time not spent by our children or by us, plus steal, out of all the
    CPU time /proc/stat counted meanwhile. (Not out of wall time x
    os.cpu_count(): /proc/stat counts in ticks, so a short process saw
    whole ticks over a few ms, and it may count other CPUs than
    os.cpu_count() does; either made shares of 241%.) Always in [0, 1].

    And who the others were: poll() (called every second or so while the
    child runs) reads /proc, so that busiest() names the processes that
    took the time, short-lived ones (a compiler's) included."""

    def __init__(self):
        self.stat0 = proc_stat()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children0, self.self0 = r.ru_utime + r.ru_stime, time.process_time()
        self.first = {pid: cpu for pid, (_, _, cpu) in process_times().items()}
        self.last, self.ours = {}, {os.getpid()}

    def poll(self):
        now = process_times()
        for pid, (name, ppid, cpu) in now.items():
            if ppid in self.ours:
                self.ours.add(pid)
            self.last[pid] = (name, cpu)

    def share(self):
        self.poll()
        stat = proc_stat()
        if stat is None or self.stat0 is None or stat[2] <= self.stat0[2]:
            return 0.0
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = (r.ru_utime + r.ru_stime - self.children0) + (time.process_time() - self.self0)
        foreign = max(0.0, stat[0] - self.stat0[0] - ours)
        stolen = max(0.0, stat[1] - self.stat0[1])
        return min(1.0, (foreign + stolen) / (stat[2] - self.stat0[2]))

    def busiest(self, most=3):
        """[(name, pid, CPU seconds)] of the others that took the most CPU
        time since the meter started, busiest first (a process born
        meanwhile counts all of its time)."""
        took = [(name, pid, round(cpu - self.first.get(pid, 0.0), 2)) for pid, (name, cpu) in self.last.items()
                if pid not in self.ours]
        return sorted((t for t in took if t[2] > 0), key=lambda t: -t[2])[:most]


if __name__ == "__main__":  # python3 -m cudabench.base.processes stop-group PGID SECONDS
    import sys
    ignore_further_signals()  # a second ^C or TERM must not cut the stop short
    if sys.argv[1:2] == ["stop-group"]:
        stop_group(int(sys.argv[2]), float(sys.argv[3]))
