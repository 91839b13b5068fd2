"""Child processes and signals: process groups stopped with a deadline,
SIGTERM and SIGHUP raised as an exception so that `finally` blocks run,
and who this process's ancestors are."""
import os
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
