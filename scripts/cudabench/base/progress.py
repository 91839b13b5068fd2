"""Progress on long work: what is done, what is left, and an estimate of
the time left. On a terminal, one line redrawn in place; in a log (stderr
not a terminal), one line every CUDABENCH_PROGRESS_SECONDS (default 10)
and at the end, so a CI log shows the run moving without a flood. The one
form of a progress line: the scripts print theirs through follow() below
(python3 -m cudabench.base.progress, lib.sh's progress_reader)."""
import io
import re
import sys
import time

from .processes import ignore_further_signals
from .settings import setting
from .text import visible


def log_interval():
    """CUDABENCH_PROGRESS_SECONDS (common/settings.json; 0: every step)."""
    return float(setting("CUDABENCH_PROGRESS_SECONDS"))


def clock(seconds):
    s = max(0, round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s} s"


class Progress:
    """progress = Progress("ab", 80, "processes", budget=150); progress.step(done, what)."""

    def __init__(self, tool, total, unit="processes", budget=None, stream=None, enabled=True):
        self.tool, self.total, self.unit, self.budget = tool, total, unit, budget
        # The stream itself (base/cli.py shows control characters on stderr
        # visibly): its own \r and erase-line are drawn, its text made visible here.
        self.stream = getattr(stream or sys.stderr, "raw", stream or sys.stderr)
        self.tty = self.stream.isatty()
        self.every = log_interval()
        self.enabled = enabled
        self.started = time.monotonic()
        self.shown = self.started  # the first log line after `every` seconds: a short run stays quiet
        self.open = False  # a terminal line is drawn and not yet ended
        self.count = 0  # steps done (tick)

    def left(self, done):
        """Seconds left: the time per step so far times the steps left,
        capped by the budget, but while steps remain never less than one
        step (past the budget, the one under way still runs); None before
        the first step."""
        spent = time.monotonic() - self.started
        if not done:
            return None
        each = spent / done
        rest = each * max(0, self.total - done)
        if not self.budget or done >= self.total:
            return rest
        return min(rest, max(self.budget - spent, each))

    def line(self, done, what=""):
        spent = time.monotonic() - self.started
        rest = self.left(done)
        over = ", passed" if self.budget and spent > self.budget else ""
        eta = "estimating" if rest is None else f"about {clock(rest)} left" + (
            f" (budget {clock(self.budget)}{over})" if self.budget else "")
        return (f"{self.tool}: {done}/{self.total} {self.unit} done, {clock(spent)} so far, {eta}"
                + (f"; {visible(what)}" if what else ""))

    def step(self, done, what=""):
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            print(f"\r{self.line(done, what)}\x1b[K", end="", file=self.stream, flush=True)
            self.open = True
        elif now - self.shown >= self.every or done >= self.total:
            print(self.line(done, what), file=self.stream, flush=True)
            self.shown = now

    def tick(self, what=""):
        """One more step done."""
        self.count += 1
        self.step(self.count, what)

    def say(self, text):
        """A message of its own, on its own line (a terminal's progress line is ended first)."""
        if not self.enabled:
            return
        self.end()
        print(f"{self.tool}: {visible(text)}", file=self.stream, flush=True)

    def end(self):
        if self.open:
            print(file=self.stream, flush=True)
            self.open = False


STEP = re.compile(r"(\d+) (\d+) ?(.*)")  # a script's "DONE ALL [WHAT]"
NINJA = re.compile(r"\[(\d+)/(\d+)\]")  # ninja's "[DONE/ALL] what it runs"


def follow(tool, unit, lines, ninja=False):
    """The progress of the steps read from `lines`: "DONE ALL [WHAT]" each,
    or with `ninja` its "[DONE/ALL] ..." lines (its other lines dropped)."""
    shown = None
    for line in lines:
        m = (NINJA if ninja else STEP).match(line)
        if not m:
            continue
        shown = shown or Progress(tool, int(m[2]), unit)
        shown.total = int(m[2])
        shown.step(int(m[1]), "" if ninja else m[3].strip())
        if int(m[1]) >= shown.total:
            shown.end()  # a terminal's line ends with the work: the script's next line starts afresh
    if shown:
        shown.end()


if __name__ == "__main__":  # python3 -m cudabench.base.progress TOOL UNIT [--ninja] < steps
    ignore_further_signals()  # it ends when the script that writes to it does (end of input)
    follow(sys.argv[1], sys.argv[2], io.TextIOWrapper(sys.stdin.buffer, errors="replace"), "--ninja" in sys.argv[3:])
