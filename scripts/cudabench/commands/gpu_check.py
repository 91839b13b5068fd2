"""The GPU check's planner and bookkeeping (scripts/gpu-check.sh takes the
options, the results folder and its lock, then runs this): each step's
estimate and cap, from STEPS or the last run; a step started only when its
estimate with a margin fits the time left, under `timeout` for at most its
cap; steps.txt, the run's status (the worst step's), and after every step
summary.txt and gpu-check.tar.gz in the output folder.

    gpu_check.py --started EPOCH --budget S --results RES --dest OUT [--last DIR]

GC_DRY_RUN, GC_QUICK and GC_BUILD (the environment) are the script's.
Exit: the run's status, 0 ok, 4 a step skipped, 5 one loaded, 3 one failed,
1 a wrong result (the worst wins), or death by the signal that stopped it.
Only the standard library: it runs before any venv exists.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

from ..base.cli import ArgParser, run_tool
from ..base.errors import BadInput, ToolError
from ..base.files import write_whole
from ..base.processes import Terminated, ends_with_us, stop_groups
from ..base.paths import ROOT, SCRIPTS
from ..sampling.driver import DRIVER_CHECKED, driver_checked

# The steps in the order a first run must prove things: the build, a
# correctness pass (the GPU tests, then memcheck of one small run of each
# kernel family), the headline numbers, then the rest. A step runs only
# where what it needs is there: gpu (not in a dry run), torch (python3's
# CUDA torch, so LibTorch is built), nccl (the build has it), sanitizer
# (compute-sanitizer). Estimates are seconds measured on an H200 (the two
# runs of 2026-12-04; docs/gpu-check.md says how each was made), and sum within
# the budget with a reserve; a results folder with an earlier run's
# steps.txt gives its own times instead (plan_steps below).
STEPS = """
preflight        5   90  -
build           65  330  -
tests           45  150  -
memcheck        15  150  gpu,sanitizer
sanitize        20   90  gpu,sanitizer
env             10   60  gpu
headline       100  200  gpu
bench           80  180  gpu
train           25   90  gpu,torch
train-py        45  120  gpu,torch
mnist           20   90  gpu,torch
ddp             15   90  gpu,torch,nccl
flush-ab        45   90  gpu
"""
KEPT = 20  # seconds kept at the end of the budget: a step's 15 s kill grace and the last snapshot
KILL_GRACE = 15  # timeout -k: longer than the 5 s ddp_scaling.py gives its ranks after TERM
RANK = (0, 4, 5, 3, 1)  # the run's status is the worst so far, in this order


def ends_with_us_prefix():
    """setpriv's parent-death signal for a step under timeout, where this
    setpriv has it (lib.sh's run_job does the same): the step ends with its timeout."""
    try:
        ok = subprocess.run(["setpriv", "--pdeathsig", "KILL", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return ["setpriv", "--pdeathsig", "KILL", "--"] if ok else []


def status_of(rc):
    """A child's exit code as a shell gives it: 128+N for signal N (Popen says -N)."""
    return 128 - rc if rc < 0 else rc


def own_group_ending_with_us():
    """A preexec_fn: the step in a process group of its own (stopped whole),
    killed if this process ends (base/processes.ends_with_us)."""
    arm = ends_with_us()

    def pre():
        os.setpgid(0, 0)
        if arm:
            arm()
    return pre


def run_in_group(cmd, stdout=None, stderr=None, cwd=None):
    """cmd in a process group of its own (timeout leads it), killed whole if
    this process is stopped while it runs: nothing it started outlives it."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=cwd,
                         preexec_fn=own_group_ending_with_us())
    try:
        return status_of(p.wait())
    except BaseException:
        stop_groups([p], KILL_GRACE)
        raise


def plan_steps(last, dry_run, quick):
    """(name, estimate, cap, needs, where the estimate came from) per step: the
    last run's time where the step passed there, its cap where it timed out
    there, else STEPS'; a run of the other kind (dry or not) does not count."""
    ran = {}
    try:
        with open(os.path.join(last, "plan.txt")) as f:
            same = f"# dry run {dry_run}, quick {quick}" in f.read().splitlines()
        with open(os.path.join(last, "steps.txt")) as f:
            for line in f:
                name, result, t, *_ = line.split() + ["", "", ""]
                ran.setdefault(name, (result, t))
    except OSError:
        same = False
    plan = []
    for row in STEPS.strip().splitlines():
        name, est, cap, needs = row.split()
        est, cap, where = int(est), int(cap), "STEPS"
        result, t = ran.get(name, ("", ""))
        if same and t.isdigit() and len(t) <= 5 and result in ("ok", "timed-out"):
            est, where = (int(t), f"last run: {t} s") if result == "ok" else (cap, f"last run: timed out at {t} s")
            cap = max(cap, est * 3 // 2)
        plan.append((name, est, cap, needs, where))
    return plan


class Run:
    """One run of the check: its clock, its files and its status."""

    def __init__(self, a):
        self.a, self.res, self.status, self.current = a, a.results, 0, ""
        self.dry = os.environ.get("GC_DRY_RUN") == "1"
        self.ends_with_us = ends_with_us_prefix()

    def elapsed(self):
        return int(time.time()) - self.a.started

    def log(self, text):
        print(f"gpu-check [{self.elapsed()} s]: {text}", file=sys.stderr, flush=True)

    def worsen(self, code):
        if RANK.index(code) > RANK.index(self.status):
            self.status = code

    def record(self, name, result, seconds, detail=""):
        """steps.txt: name, result, seconds, detail; one line per step (a
        full disk costs the line, not the run)."""
        try:
            with open(os.path.join(self.res, "steps.txt"), "a") as f:
                f.write(f"{name:<10} {result:<9} {seconds:4d} s  {detail}\n")
        except OSError as e:
            self.log(f"steps.txt: cannot write: {e.strerror}")
        self.log(f"{name}: {result}" + (f" ({detail})" if detail else ""))

    def snapshot(self):
        """summary.txt and gpu-check.tar.gz in the output folder, each written
        whole within 20 s (a stuck disk must not hold the run past its call);
        one that cannot be made is said, and the run goes on."""
        try:
            write_whole(os.path.join(self.a.dest, "summary.txt"), self.write_summary)
            self.write_tarball()
        except ToolError as e:
            self.log(f"snapshot: {e}")
        except OSError as e:
            self.log(f"snapshot: {e.filename or ''}: {e.strerror}")

    def write_summary(self, path):
        with open(path, "w") as out, open(os.path.join(self.res, "logs", "summary.err"), "w") as err:
            rc = run_in_group(["timeout", "-k", "5", "20", sys.executable, os.path.join(SCRIPTS, "gpu_summary.py"),
                               self.res], stdout=out, stderr=err)
        if rc:
            with open(path, "a") as out:
                out.write(f"(summary failed, exit {rc}: see logs/summary.err; 124: its 20 s deadline)\n")

    def write_tarball(self):
        """Never the tarball or the summary: the output folder may be the
        results folder, so the archive is made beside it, then moved in."""
        tar = self.res + ".tar.gz.tmp"
        rc = run_in_group(["timeout", "-k", "5", "20", "tar", "czf", tar, "--exclude=gpu-check.tar.gz*",
                      "--exclude=summary.txt*", "-C", os.path.dirname(self.res), os.path.basename(self.res)])
        if rc <= 1 and os.path.exists(tar):
            os.replace(tar, os.path.join(self.a.dest, "gpu-check.tar.gz"))
        elif os.path.exists(tar):
            os.remove(tar)

    def unmet(self, needs):
        """Why a step cannot run here ("" when it can): HAVE_<need> and
        WHY_<need> are what the preflight and the build found (have.env)."""
        have = read_have(os.path.join(self.res, "have.env"))
        for need in needs.split(","):
            if need not in ("-", "gpu") and have.get(f"HAVE_{need}") != "1":
                return f"needs {need}: {have.get(f'WHY_{need}') or 'not found'}"
        return "dry run: no GPU" if "gpu" in needs.split(",") and self.dry else ""

    def run_step(self, name, est, cap, needs):
        """The step in its own process group under timeout, its output in
        logs/NAME.log; skipped when its needs are unmet or its estimate with
        a margin (25%, and 5 s) does not fit the time left."""
        t0 = self.elapsed()
        left, need = self.a.budget - t0 - KEPT, est * 5 // 4 + 5
        why = self.unmet(needs)
        if not why and need > left:
            why = (f"needs ~{need} s ({est} s estimated + 25% + 5 s), {left} s of the {self.a.budget} s budget "
                   f"left ({KEPT} s kept for the end)")
        if why:
            self.record(name, "skipped", 0, why)
            self.worsen(4)
            return
        cap = min(cap, left)
        log = os.path.join(self.res, "logs", name + ".log")
        self.current = name
        with open(log, "w") as out:
            rc = run_in_group(["timeout", "-k", str(KILL_GRACE), str(cap), *self.ends_with_us, "bash",
                          os.path.join(SCRIPTS, "gpu-check-steps.sh"), name], out, subprocess.STDOUT, ROOT)
        self.current = ""
        self.judge(name, rc, self.elapsed() - t0, cap, log)

    def judge(self, name, rc, took, cap, log):
        """The step's result from its exit code, and what went wrong said here too."""
        with open(log, errors="replace") as f:
            text = f.read().splitlines()
        if rc == 0:
            self.record(name, "ok", took)
        elif rc == 1:
            self.record(name, "WRONG", took, "a check found a wrong result")
        elif rc == 4:
            said = [line[len("skipped: "):] for line in text if line.startswith("skipped: ")]
            self.record(name, "skipped", took, said[-1] if said else "")
        elif rc == 5:
            self.record(name, "loaded", took, "checked, but its rows ran beside other load: not a measurement")
        elif rc in (124, 137):
            self.record(name, *(("timed-out", took, f"stopped at its {cap} s limit") if took >= cap else
                                ("failed", took, f"killed (exit {rc}) before its {cap} s limit: out of memory?")))
        else:
            self.record(name, "failed", took, f"exit {rc}")
        self.worsen({0: 0, 1: 1, 4: 4, 5: 5}.get(rc, 3))
        if rc not in (0, 4):
            shown = [line for line in text if line.startswith("MISSING")] or text[-6:]
            print("\n".join(f"    | {line}" for line in shown), file=sys.stderr, flush=True)


def read_have(path):
    """have.env's HAVE_<need> and WHY_<need>, as bash reads them (printf %q)."""
    if not os.path.isfile(path):
        return {}
    show = '. "$1" && for v in ${!HAVE_*} ${!WHY_*}; do printf "%s=%s\\0" "$v" "${!v}"; done'
    try:
        out = subprocess.run(["bash", "-c", show, "have", path], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def run_all(run, plan):
    """Every step in the plan's order, a snapshot after each: the run's status."""
    stopped = ""
    for name, est, cap, needs, _ in plan:
        if stopped:
            run.record(name, "skipped", 0, f"not run: {stopped}")
            run.worsen(4)
        else:
            run.run_step(name, est, cap, needs)
        # Nothing after a failed preflight or build can mean anything.
        if name in ("preflight", "build") and not stopped and not passed(run.res, name):
            stopped = f"{name} did not pass"
        # Once the build has it, the driver checked for every step's processes.
        if name == "build" and not stopped:
            build = os.environ.get("GC_BUILD", "build-gpu")
            os.environ.update(driver_checked(os.path.join(build, "cudabench-driver-check"), os.environ))
            run.log("the driver checked once for every step" if os.environ[DRIVER_CHECKED] else
                    "the driver check did not finish: each process checks it again")
        run.snapshot()
    return run.status


def passed(res, name):
    with open(os.path.join(res, "steps.txt")) as f:
        return any(line.split()[:2] == [name, "ok"] for line in f)


def start_clean(a, plan):
    """Last run's files must not pass for this run's: moved to RES.previous."""
    dry, quick = os.environ.get("GC_DRY_RUN", "0"), os.environ.get("GC_QUICK", "0")
    if os.path.isdir(a.results) and os.listdir(a.results):
        shutil.rmtree(a.results + ".previous", ignore_errors=True)
        os.replace(a.results, a.results + ".previous")
    os.makedirs(os.path.join(a.results, "logs"), exist_ok=True)
    try:
        os.makedirs(a.dest, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{a.dest}: cannot make it: {e.strerror}") from None
    for n in ("summary.txt", "gpu-check.tar.gz"):
        if os.path.lexists(os.path.join(a.dest, n)):
            os.remove(os.path.join(a.dest, n))
    with open(os.path.join(a.results, "plan.txt"), "w") as f:
        f.write(f"# dry run {dry}, quick {quick}\n# budget {a.budget} s, {KEPT} s kept for the end\n")
        f.writelines(f"{n:<10} {e:4d} {c:4d} {needs:<20} {w}\n" for n, e, c, needs, w in plan)


def check(a):
    """The run, with a signal ending it: the step's group stopped, the step
    recorded as stopped, a snapshot, then death by the same signal."""
    run = Run(a)
    plan = plan_steps(a.last or a.results, os.environ.get("GC_DRY_RUN", "0"), os.environ.get("GC_QUICK", "0"))
    start_clean(a, plan)
    os.environ.update(GC_RES=a.results, PYTHONUNBUFFERED="1")
    run.log(f"results in {a.results}, budget {a.budget} s" + (", dry run: GPU steps skipped" if run.dry else ""))
    try:
        status = run_all(run, plan)
    except (Terminated, KeyboardInterrupt) as e:
        sig = getattr(e, "signum", signal.SIGINT)
        run.record(run.current or "?", "stopped", run.elapsed(), f"by {signal.Signals(sig).name}")
        run.snapshot()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        raise
    run.log(f"done in {run.elapsed()} s, exit {status}")
    with open(os.path.join(a.dest, "summary.txt")) as f:
        sys.stdout.write(f.read())
    return status


def main(argv=None):
    ap = ArgParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--started", type=int, required=True, help="when the run started (seconds since the epoch)")
    ap.add_argument("--budget", type=int, required=True, help="the run's seconds, from --started")
    ap.add_argument("--results", required=True, help="the results folder (locked by the script)")
    ap.add_argument("--dest", required=True, help="where summary.txt and gpu-check.tar.gz go")
    ap.add_argument("--last", help="the folder whose last run gives the estimates (default --results)")
    a = ap.parse_args(argv)
    return run_tool("gpu-check", lambda: check(a))


def entry():
    """The program, as scripts/gpu_check.py runs it: its exit code."""
    return main()
