"""Child processes and signals: process groups stopped with a deadline,
SIGTERM and SIGHUP raised as an exception so that `finally` blocks run,
who this process's ancestors are, and how much of the machine others took
while a child ran (LoadMeter)."""
import os
import resource
import signal
import subprocess
import time


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so that `finally`
    blocks remove temporary files before it exits."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum, _frame):
    raise Terminated(signum)


def split_passthrough(argv):
    """(our arguments, the ones after `--` that go to the program we run)."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def stop_groups(procs, grace):
    """SIGTERM the process group of each process still running (each one
    started with start_new_session), then SIGKILL what is left after `grace`
    seconds; every wait has a deadline. ab.py and ddp_scaling.py stop their
    children here."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = [p for p in procs if p.poll() is None]
        for p in live:
            try:
                os.killpg(p.pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        for p in live:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass


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


class LoadMeter:
    """The share of the machine's CPU time that others took while a child ran:
    busy time not spent by our children or by us, plus steal, out of all the
    CPU time /proc/stat counted meanwhile. (Not out of wall time x
    os.cpu_count(): /proc/stat counts in ticks, so a short process saw
    whole ticks over a few ms, and it may count other CPUs than
    os.cpu_count() does; either made shares of 241%.) Always in [0, 1]."""

    def __init__(self):
        self.stat0 = proc_stat()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.children0, self.self0 = r.ru_utime + r.ru_stime, time.process_time()

    def share(self):
        stat = proc_stat()
        if stat is None or self.stat0 is None or stat[2] <= self.stat0[2]:
            return 0.0
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = (r.ru_utime + r.ru_stime - self.children0) + (time.process_time() - self.self0)
        foreign = max(0.0, stat[0] - self.stat0[0] - ours)
        stolen = max(0.0, stat[1] - self.stat0[1])
        return min(1.0, (foreign + stolen) / (stat[2] - self.stat0[2]))
