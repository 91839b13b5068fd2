"""The sampler: runs bench processes and merges them into one result, one
sample per process for each row (scripts/samples.py's docstring says how).
The one code path that takes samples from processes, for the default run
(samples.py run), the A/B runner (ab.py), the fleet and the stack matrix."""
import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field

from . import driver
from .driver import DRIVER_CHECKED
from ..base.errors import BadInput, ToolError, one_line
from ..base.processes import LoadMeter, Terminated, wait_in_own_group
from ..base.files import read_json, write_json
from ..base.cli import bounded
from ..base.progress import Progress
from ..base.text import fmt_value, table
from ..results.verdicts import inconclusive
from ..results.gbench import MAX_FILTER, MIN_CLEAN, SAMPLES_META, finite_number, load_doc, name_prefix, partial_note
from ..results.merged import busiest, merge
from ..results.stats import median, median_interval, processes_for
from ..results.context import hardware_of

EXIT_WRONG = 1
DEFAULT_PROCESSES = 4  # the default run's: 4 vs 4 reach p < 0.05 (min_p_value), in the time one process took
# A process that ran while the rest of the machine took more than this share
# of all CPUs' time is run again, up to RETRIES times; the decision uses the
# load, never the result, so it treats every arm alike.
MAX_INTERFERENCE = 0.05
RETRIES = 3
FULL_BYTES = 1 << 20  # less free space than this where results go: the disk is full (a result is ~100 KiB)
META = SAMPLES_META
# The default run takes more processes for a row whose median is not known
# to within +-WIDE (stats.median_interval at MEDIAN_COVERAGE), up to
# MOST_PROCESSES and within SECONDS, while they can narrow it. SECONDS: on
# the 2-core VMs four processes of the default rows take 30-35 s, and the
# rows too noisy for +-WIDE there would need dozens (docs/comparing-machines.md).
WIDE = 0.05
MOST_PROCESSES = 12
SECONDS = 45
ONE_OUT = 7  # from 7 process samples on, one wild one falls outside the median's interval
MAX_COUNT = 1000  # the most processes (per side), repetitions per process or trials a run takes
MIN_TIME = bounded(0, 3600, float, "(]")  # --min-time: seconds per benchmark and process
# bench flags that the samples set themselves, or that make bench measure nothing.
OWN_FLAGS = {"--benchmark_out": "--out", "--benchmark_out_format": "--out", "--benchmark_filter": "--filter",
             "--benchmark_repetitions": "--reps", "--benchmark_list_tests": None, "--help": None, "-h": None,
             "--env": None, "--explain": None}
@dataclass
class Arm:
    """One kind of process: the ab.py sides A and B, run-bench's one run."""
    name: str
    bench: str
    env: dict = field(default_factory=dict)
    wrap: list = field(default_factory=list)  # a command prefix (scripts/cpu-quota.sh 0.9)
    good: int = 0  # processes that gave a result

    def check(self, flag):
        if not (os.path.isfile(self.bench) and os.access(self.bench, os.X_OK)):
            raise BadInput(f"{flag} {self.bench}: no such executable (build it first)")
        return self


@dataclass
class Sampling:
    """How each process samples: the same for every arm of a run."""
    filter: str = "."
    reps: int = 1
    min_time: float = None
    max_interference: float = MAX_INTERFERENCE
    extra: list = field(default_factory=list)  # more bench flags (after ours: they win)
    process_seconds: float = 3600

    def __post_init__(self):
        for x in self.extra:
            flag = x.split("=", 1)[0]
            if flag in OWN_FLAGS:
                instead = OWN_FLAGS[flag]
                raise BadInput(f"{x}: " + (f"give {instead} instead" if instead else "not for a measured run"))


class ProcessTimedOut(ToolError):
    """A bench process ran past --process-seconds and was stopped (exit 3)."""

    def __init__(self, message, seconds):
        super().__init__(message)
        self.seconds = seconds


def check_driver_once(arms):
    """The driver checked once for every process of the run (each arm's
    environment gets the verdict), not once per process: with persistence
    mode off, each check costs a GPU initialisation of 1 to 5 s. A verdict
    this run inherited (gpu-check.sh checked) stands for an arm that changes
    no variable; a check that fails sets the variable empty, so that each
    process checks again whatever was inherited."""
    verdicts = {}
    for arm in arms:
        if DRIVER_CHECKED in arm.env:  # checked by an earlier schedule of this run (ab.py's looks)
            continue
        env = dict(os.environ, **arm.env)
        if os.environ.get(DRIVER_CHECKED) == "ok" and not set(arm.env) - {DRIVER_CHECKED}:
            continue
        check = os.path.join(os.path.dirname(os.path.abspath(arm.bench)), "cudabench-driver-check")
        key = (check, tuple(sorted(env.items())))
        if key not in verdicts:
            verdicts[key] = driver.driver_checked(check, env)
        arm.env.update(verdicts[key])


def bench_command(arm, s, out):
    cmd = arm.wrap + [arm.bench, f"--benchmark_filter={s.filter}", f"--benchmark_repetitions={s.reps}",
                      "--benchmark_report_aggregates_only=false",
                      f"--benchmark_out={out}", "--benchmark_out_format=json"]
    if s.reps > 1:
        cmd.append("--benchmark_enable_random_interleaving=true")
    if s.min_time:
        cmd.append(f"--benchmark_min_time={s.min_time}")
    return cmd + s.extra


def run_process(arm, i, s, workdir, meter=None):
    """Run one bench process of `arm` (polling `meter` while it runs); return its JSON document. BadInput
    when the first one refuses its flags or nothing matches, ToolError when
    one fails without a usable result (each named with its log)."""
    out = os.path.join(workdir, f"{arm.name}{i:02d}.json")
    log = os.path.join(workdir, f"{arm.name}{i:02d}.stderr")
    env = dict(os.environ, **arm.env)
    try:
        with open(log, "w") as err:
            rc = wait_in_own_group(bench_command(arm, s, out), err, env, s.process_seconds, meter)
    except OSError as e:
        raise ToolError(f"{log}: cannot write: {e.strerror or e}")
    with open(log, errors="replace") as f:
        lines = [x.strip() for x in f if x.strip()]
    last = lines[-1] if lines else ""
    who = f"process {i} of {arm.name} ({arm.bench})"
    if rc is None:
        raise ProcessTimedOut(f"{who} was still running after {s.process_seconds:g} s (--process-seconds) and was "
                              f"stopped: a stuck GPU or a hung program; log: {log}", s.process_seconds)
    if rc == 2 and not arm.good:
        raise BadInput(f"{arm.bench} refused its arguments: {last}")
    if rc == 2:  # it ran with these arguments before: not a refusal
        raise ToolError(f"{who} failed (exit 2) after {arm.good} good one(s): {last or 'no message'}; see {log}")
    no_match = BadInput(f"--filter '{s.filter}' matches no benchmark of {arm.bench}")
    if any(x.startswith("Failed to match any benchmarks") for x in lines):
        raise no_match
    if rc not in (0, EXIT_WRONG) or not os.path.exists(out):
        how = f"signal {-rc}" if rc < 0 else f"exit {rc}"
        full = full_disk(workdir)
        why = last or (f"{full}, so its log is empty" if full else "no message")
        raise ToolError(f"{who} failed without a result ({how}): {why}; log: {log}")
    try:
        doc = read_json(out)
        load_doc(doc, out)  # the checks compare makes, here, where the process is known
    except BadInput as e:
        raise ToolError(f"{who} wrote a result that cannot be used: {one_line(e)}; log: {log}")
    if not doc.get("benchmarks"):
        raise no_match
    arm.good += 1
    return doc


def full_disk(folder):
    """'no space left on device in FOLDER' when its file system has less
    than FULL_BYTES free (os.statvfs), else "": why a process that wrote its
    result and its log there failed without a word."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return ""
    free = st.f_bavail * st.f_frsize
    return f"no space left on device in {folder} ({free // 1024} KiB free)" if free < FULL_BYTES else ""


def require_space(folder):
    """ToolError (exit 3) when `folder`'s disk is full: found before the first process, not after the last."""
    why = full_disk(folder)
    if why:
        raise ToolError(why)


@dataclass
class Schedule:
    """What one schedule of processes has spent: re-runs, and the other
    programs seen beside its loaded processes."""
    budget: int  # the most re-runs in all: as many as processes per arm
    deadline: float = None  # time.monotonic() past which no process runs again, nor starts beside load
    reruns: int = 0
    exhausted: bool = False
    others: list = field(default_factory=list)
    loaded: bool = False  # a process ran beside other load (steal included, whoever took it)

    def may_rerun(self, progress):
        """Whether a loaded process may run again: re-runs left, and the deadline not passed."""
        if self.reruns >= self.budget or self.past():
            if not self.exhausted:
                progress.say("the machine stayed busy: no more processes run again" if not self.past() else
                             "the budget ended: no loaded process runs again")
            self.exhausted = True
            return False
        self.reruns += 1
        return True

    def past(self):
        return self.deadline is not None and time.monotonic() >= self.deadline


def run_attempts(arm, index, s, workdir, plan, progress, keep_on_stop):
    """One process of `arm`, run again while it ran beside more than
    s.max_interference of other load and plan (a Schedule) allows; returns
    (doc, load) of the attempt kept. Stopped meanwhile: a finished attempt
    is handed to keep_on_stop before the stop goes on."""
    finished = None  # (doc, load) of the last attempt that gave a result
    try:
        for attempt in range(RETRIES + 1):
            meter = LoadMeter()
            doc = run_process(arm, index, s, workdir, meter)
            finished = (doc, None)
            load = meter.share()
            finished = (doc, load)
            if load > s.max_interference:
                plan.loaded = True
                plan.others += [{"name": n, "pid": pid, "cpu_s": cpu} for n, pid, cpu in meter.busiest()]
            if load <= s.max_interference or attempt == RETRIES or not plan.may_rerun(progress):
                return finished
            top = meter.busiest(1)
            progress.say(f"process {arm.name}{index} ran beside {100 * load:.0f}% other load"
                         + (f" (mostly `{top[0][0]}`, pid {top[0][1]})" if top else "") + "; running it again")
    except (Terminated, KeyboardInterrupt, ProcessTimedOut):
        if finished:  # stopped after it ended, or while running a loaded one again: it finished
            keep_on_stop(*finished)
        raise
    return finished


def run_schedule(arms, order, s, workdir, progress=None, into=None, deadline=None):
    """The processes in `order` (arm names); returns ({arm: [doc]}, {arm:
    [load]}, meta). A process beside more than s.max_interference of other
    load runs again (RETRIES times at most, and no more re-runs in all than
    processes per arm); one kept beside it anyway is listed in meta's
    'loaded'. deadline (time.monotonic()): past it, no loaded process runs
    again, and on a machine that showed other load no process starts once
    each arm has MIN_CLEAN and the arms have as many each (meta's
    "budget_ended" says how many of how many ran); on an idle machine the
    processes asked for all run: they are the fewest a verdict needs. progress: a
    base.progress.Progress that each process ticks, or None for silence.
    into: the ({arm: [doc]}, {arm: [load]}) each finished process is added
    to at once (a caller stopped meanwhile keeps them), numbered on from
    those already there; new ones by default."""
    progress = progress or Progress("samples", len(order), enabled=False)
    docs, loads = into or ({n: [] for n in arms}, {n: [] for n in arms})

    def keep(name, doc, load):
        docs[name].append(doc)
        loads[name].append(None if load is None else round(load, 4))
    plan = Schedule(max(1, len(order) // max(1, len(arms))), deadline)
    require_space(workdir)
    check_driver_once(arms.values())
    started, ran = time.monotonic(), 0
    for name in order:
        counts = [len(docs[n]) for n in arms]
        if plan.past() and plan.loaded and min(counts) >= MIN_CLEAN and len(set(counts)) == 1:
            progress.total -= len(order) - ran
            break
        doc, load = run_attempts(arms[name], len(docs[name]), s, workdir, plan, progress,
                                 lambda d, x, n=name: keep(n, d, x))
        keep(name, doc, load)
        ran += 1
        progress.tick(f"{name}{len(docs[name]) - 1} beside {100 * load:.0f}% other load" if load > s.max_interference
                      else "")
    meta = {"filter": s.filter, "reps_per_process": s.reps, "min_time": s.min_time,
            "order": "".join(order[:ran]) if all(len(n) == 1 for n in arms) else order[:ran],
            "wall_s": round(time.monotonic() - started, 1), "reruns": plan.reruns, "max_interference": s.max_interference,
            "busiest": busiest(plan.others)}
    if ran < len(order):
        meta["budget_ended"] = {"processes": ran, "planned": len(order)}
    return docs, loads, meta


def summary(doc):
    """The console table of a merged result: per benchmark, the median of the
    process samples, their spread (lowest to highest, relative to the
    median), the throughput, how many, and the load."""
    f = load_doc(doc, "result")
    bps = {}
    for b in f.benchmarks:
        if finite_number(b.get("bytes_per_second")):
            bps.setdefault(b.get("run_name") or b["name"], []).append(b["bytes_per_second"])
    rows, noisy = [], doc.get(META, {}).get("too_noisy") or {}
    for n, r in f.runs.items():
        if r.error or not r.samples:
            rows.append([n, "-", "-", "-", "-", f"FAILED: {r.error}" if r.error else f"skipped: {r.skipped}"])
            continue
        if r.too_loaded:  # shown as loaded, never as a result
            rows.append([n, f"{fmt_value(median(r.samples), 'time')} (loaded)", "-", "-", len(r.samples),
                         f"could not tell: {len(r.loaded)} of {len(r.samples)} beside other load"])
            continue
        note = f"{len(r.loaded)} of {len(r.samples)} left out (beside other load)" if r.loaded else ""
        if n in noisy:
            note = "; ".join(x for x in (note, noisy_note(noisy[n])) if x)
        r = r.clean()
        m = median(r.samples)
        spread = f"{100 * (min(r.samples) / m - 1):+.1f}% .. {100 * (max(r.samples) / m - 1):+.1f}%"
        rate = f"{median(bps[n]) / 1e9:.3g} GB/s" if n in bps else "-"
        rows.append([n, fmt_value(m, "time"), spread, rate, len(r.samples), note])
    return table(["benchmark", "median", "spread", "throughput", "samples", "note"], rows, False)


def clean_samples(doc):
    """{row: its process samples taken without other load} of every measured row."""
    return {n: r.clean().samples for n, r in load_doc(doc, "result").runs.items() if not r.error and r.samples}


def halfwidth(xs):
    """How well the median of xs is known, relative to it: half its
    distribution-free interval (stats.median_interval); nan below MIN_CLEAN."""
    lo, hi = median_interval(xs) if len(xs) >= MIN_CLEAN else (math.nan, math.nan)
    return (hi - lo) / 2 / median(xs) if lo == lo else math.nan


def processes_needed(xs):
    """About how many processes would know a wide row's median to within
    +-WIDE: as many as its robust spread asks (stats.processes_for), and
    at least ONE_OUT (from there one wild process falls outside the
    interval), else two more."""
    return max(processes_for(xs, WIDE), ONE_OUT if len(xs) < ONE_OUT else len(xs) + 2)


def noisy_note(x):
    """A row that stopped early, in words: how well its median is known, and what it would take."""
    return (f"median within +-{100 * x['halfwidth']:.0f}% at {x['processes']} processes; +-{100 * WIDE:g}% "
            f"would take about {x['needs']}")


def stays_busy(loads, limit):
    """Whether the processes just run all ran beside more than `limit` of
    other load, their re-runs included: running more only doubles the time."""
    return bool(loads) and all(x > limit for x in loads)


def more_processes(arm, s, work, docs, loads, meta, a, progress):
    """Processes beyond the first --processes, for the rows whose median is
    still wide, two at a time, until none is, --most processes, or the
    next two would end past --seconds. A row that the processes the budget
    can still buy would not narrow to +-WIDE (processes_needed, from the
    noise its processes show) stops at once and is kept in meta's
    "too_noisy": its half-width, processes and the processes it would need.
    Adds to docs and loads as each process ends; returns meta."""
    started = time.monotonic() - meta["wall_s"]
    noisy = {}
    while True:
        rows = clean_samples(merge(docs, "run", meta, loads))
        spent = time.monotonic() - started
        each = spent / len(docs)
        reachable = min(a.most, len(docs) + 2 * int(max(0.0, a.seconds - spent) // (2 * each)))
        wide = []
        for n, xs in rows.items():
            h = halfwidth(xs)  # nan below the 4 samples the interval needs: those rows are loaded, not noisy
            if n in noisy or h <= WIDE:
                continue
            need = processes_needed(xs)
            if h == h and need > reachable:
                noisy[n] = {"halfwidth": round(h, 4), "processes": len(xs), "needs": need}
            else:
                wide.append(n)
        if not wide or stays_busy(loads[-2:], s.max_interference) or reachable <= len(docs):
            meta["wide"] = wide  # still wide at the end: the budget ended first
            break
        named = "|".join(name_prefix(n) for n in wide)
        more = Sampling(named if len(named) <= MAX_FILTER else s.filter, s.reps, s.min_time, s.max_interference,
                        s.extra, s.process_seconds)
        two = min(2, a.most - len(docs))
        progress.say(f"{len(wide)} row(s) still wide after {len(docs)} processes: {two} more "
                     f"({', '.join(x.split('/real_time')[0] for x in wide[:2])}{', ...' if len(wide) > 2 else ''})")
        progress.total += two
        _, _, m = run_schedule({"p": arm}, ["p"] * two, more, work, progress, into=({"p": docs}, {"p": loads}))
        meta.update(reruns=meta["reruns"] + m["reruns"], wall_s=round(time.monotonic() - started, 1),
                    busiest=busiest(meta["busiest"] + m["busiest"]))
    meta["processes_run"], meta["too_noisy"] = len(docs), noisy
    return meta


def stopped_by(e):
    """What stopped a run: a signal's name, or the --process-seconds limit."""
    if isinstance(e, KeyboardInterrupt):
        return "SIGINT"
    if isinstance(e, Terminated):
        return signal.Signals(e.signum).name
    return f"the --process-seconds limit ({e.seconds:g} s)"


def write_run(a, docs, loads, meta):
    """FILE: the processes merged, the machine named by --label or its
    hardware, written whole; returns the document."""
    doc = merge(docs, "run", meta, loads)
    doc["context"]["machine_label"] = a.label or hardware_of(doc["context"]) or "unknown"
    write_json(a.out, doc)
    return doc


def keep_partial(a, docs, loads, planned, why):
    """FILE of the processes that finished before the run was stopped, written
    whole and marked partial (how many of how many, and what stopped it);
    nothing when none finished."""
    if not docs:
        return
    meta = {"filter": a.filter, "reps_per_process": a.reps, "min_time": a.min_time, "tool": "run-bench",
            "bench": a.bench, "max_interference": a.max_interference,
            "partial": {"processes": len(docs), "planned": planned, "stopped_by": why}}
    write_run(a, docs, loads, meta)
    print(f"samples: {partial_note(a.out, meta['partial'])}: its rows are kept, marked partial", file=sys.stderr)


def inconclusive_line(runs, meta):
    """The "Inconclusive: ..." line for a run whose rows had too few samples without other load, or ""."""
    rows = [r for r in runs.values() if r.samples and not r.error]
    return inconclusive(len(rows), sum(r.too_loaded for r in rows), [x for x in meta.get("loads", []) if x],
                        meta.get("busiest"))


def add_process_seconds(p):
    """--process-seconds (samples run, ab.py): a bench process still running
    after this long is stopped and the run fails (exit 3), as a stuck GPU
    would otherwise hold it."""
    p.add_argument("--process-seconds", action=bounded(1, 86400, float), default=Sampling.process_seconds,
                   help=f"stop a bench process still running after this long, and fail "
                        f"(default {Sampling.process_seconds:g})")
