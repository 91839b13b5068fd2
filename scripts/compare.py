#!/usr/bin/env python3
"""Compare Google Benchmark JSON files: verdicts, tables, and an exit code.

    compare.py BASELINE.json CONTENDER.json [MORE.json ...] [options]

The first file is the baseline. Benchmarks are paired by name (the run name,
without aggregate suffixes); every repetition is a sample. For each pair:

  relative change of the medians  d = (median_new - median_base) / median_base
  (for time; for --metric bytes_per_second or items_per_second, higher is
  better and d is reported so that positive still means slower), and a
  two-sided Mann-Whitney U test on the samples (scipy.stats.mannwhitneyu).

  same     |d| <= the bar: the threshold, or with --floors the measured
           noise floor when that is higher
  faster / slower   |d| > the bar and p < alpha
  noisy    |d| > the bar but p >= alpha, or too few repetitions to test
           (a single sample, or fewer than the test needs to reach alpha),
           or the GPU throttled during a sample of either file (cudabench's
           label "throttled: <reasons>"): a slowdown then says nothing
           about the code
  error    a run failed (error_occurred) in either file
  skipped  skipped (Google Benchmark 1.8+'s "skipped" with its
           "skip_message", shown in the row) in the baseline, or in both:
           nothing to compare, never a failure
  missing  in the baseline but not in a later file (it stopped running), or
           measured in the baseline and skipped in a later one: fails the
           gate like slower
  new      in a later file but not in the baseline: listed, never a failure

With --filter, only the benchmarks whose name matches count (the others are
not read at all).

The report starts with what differs between the two runs: the recorded
context (toolkit, driver, GPU and its settings, host) and the GPU clocks
measured during the runs (the medians of cudabench's sm_clock_mhz and
mem_clock_mhz counters), since a different clock explains a difference.

--floors FILE takes the noise floors an A/A run measured (scripts/ab.py
calibrate): for each benchmark, the process medians of identical builds.
The floor for n_base vs n_new samples is the change that comparisons of
n_base vs n_new of those medians exceed only 0.1% of the time (resampled); it is
shown beside each verdict. Use it with files whose samples are one per
process (what scripts/ab.py writes); repetitions within one process are not
independent samples.

Exit codes: 0 no regression; 1 some benchmark is slower beyond the bar
with significance, missing from a later file, or failed its check there
(the CI gate; --report-only always exits 0 here); 2 bad input
(unreadable JSON, not Google Benchmark output, no benchmarks in common,
mismatched or unknown units, a bad floors file, an output that is one of
the inputs, even through a link); 3 the tool could not run
(scipy missing, or an internal error), never read as a regression. Run with a
python that lacks scipy, it re-runs itself with the project's venv
(~/.cache/cudabench/venv, made by scripts/setup.sh). Works on any Google
Benchmark program's JSON.

Why Python: scipy's Mann-Whitney U and matplotlib (scripts/report.py) are the
well-kept libraries for the statistics and the plots; the C++ side needs none.
"""
import argparse
import errno
import functools
import json
import math
import os
import random
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_TOOL = 0, 1, 2, 3
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
HIGHER_IS_BETTER = {"bytes_per_second", "items_per_second"}
# The benchmark context's keys, defined once (who writes each, what it holds,
# which ones this tool and fleet.py read): read by context_schema().
CONTEXT_SCHEMA = Path(__file__).resolve().parent.parent / "env" / "context_keys.json"
# Telemetry counters (cudabench's NVML samples) whose medians over a file's
# benchmarks are compared like context: a relative difference above this is shown.
CLOCK_COUNTERS = ["sm_clock_mhz", "mem_clock_mhz"]
CLOCK_TOLERANCE = 0.01
THROTTLED = "throttled: "
COULD_NOT_RUN = "could not run: "  # bench's prefix for an error that is not a wrong result
MAX_JSON_BYTES = 256 << 20  # a result file larger than this is refused, never read whole


class BadInput(Exception):
    pass


class ToolError(Exception):
    """The tool itself cannot run (a missing library): exit 3, never 1."""


def ensure_venv(tool="compare", modules=("scipy.stats",)):
    """Make sure `modules` can be imported: re-run this script with the
    project's venv when the running python lacks one, or raise ToolError
    with one line saying how to get it."""
    import importlib
    try:
        for m in modules:
            importlib.import_module(m)
        return
    except ImportError as e:
        missing = e.name or modules[0]
    cache = os.environ.get("CUDABENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cudabench")
    venv = os.environ.get("CUDABENCH_VENV") or os.path.join(cache, "venv")
    py = os.path.join(venv, "bin", "python")
    if os.access(py, os.X_OK) and not os.environ.get("CUDABENCH_REEXEC"):
        os.environ["CUDABENCH_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(py, [py, os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    raise ToolError(f"needs {missing.split('.')[0]}, which {sys.executable} lacks: run scripts/setup.sh "
                    f"(it makes the project's venv, {venv}) or run with that venv's python")


@dataclass
class Run:
    name: str
    samples: list = field(default_factory=list)  # metric values, in seconds for time
    error: str = ""
    skipped: str = ""  # why Google Benchmark 1.8+ skipped it (SkipWithMessage): no sample, no failure
    throttled: list = field(default_factory=list)  # the reasons of each throttled sample
    loads: list = field(default_factory=list)  # the share of the CPUs others took, per sample that says
    loaded: list = field(default_factory=list)  # the samples taken beside more load than allowed (samples.py)

    @property
    def only_skipped(self):
        """It skipped itself and measured nothing."""
        return bool(self.skipped) and not self.samples


@dataclass
class ResultFile:
    path: str
    context: dict
    runs: dict  # name -> Run
    label: str = ""
    benchmarks: list = field(default_factory=list)  # the file's entries (those the filter kept)
    meta: dict = field(default_factory=dict)  # how its samples were taken (samples.py's cudabench_samples)


def read_json(path):
    """A JSON file's content; BadInput, naming the file, when it cannot be read."""
    return decode_json(read_bytes(path), path)


def read_bytes(path, what="a JSON file", tail=None):
    """A file's bytes; BadInput naming it when it cannot be read, is not a
    regular file (a FIFO, /dev/zero: never waited on, never read without
    end) or is over MAX_JSON_BYTES. Every input file is read through here.
    tail: only its last `tail` bytes (a log's last words), whatever its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})")
    too_big = BadInput(f"{path}: larger than the {MAX_JSON_BYTES / 2**20:g} MiB limit for {what}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path}: not a regular file: expected {what}")
        if tail:
            f.seek(max(0, st.st_size - tail))
        elif st.st_size > MAX_JSON_BYTES:
            raise too_big
        try:
            raw = f.read(tail or MAX_JSON_BYTES + 1)  # it may have grown since
        except OSError as e:
            raise BadInput(f"{path}: cannot read ({e.strerror})")
    if not tail and len(raw) > MAX_JSON_BYTES:
        raise too_big
    return raw


def decode_json(raw, path):
    """Bytes read from `path` as JSON; BadInput naming it when they are not
    (not UTF-8, not JSON, nested too deeply). The fuzz target drives this."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}): expected JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON ({e.msg} at line {e.lineno})")
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply")


def output_folder(path):
    """argparse type of an --out folder: a name, never "" or "-"."""
    if path in ("", "-"):
        raise argparse.ArgumentTypeError(f"'{path}': expected a folder name")
    return path


def refuse_stdout(path, flag):
    """BadInput for an output named "-": a file name is expected, never a file called "-"."""
    if path == "-":
        raise BadInput(f"{flag} -: expected a file name (the report already goes to stdout)")


def is_stream(path):
    """Written in place, never replaced: a device or a pipe, or a file
    descriptor's path (/dev/stdout, /dev/fd/N, /proc/.../fd/N: it may lead
    to pipe:[N], which no path resolution can follow). A regular file under
    /dev (/dev/shm) is a file."""
    if path.startswith(("/dev/fd/", "/dev/std")) or (path.startswith("/proc/") and "/fd/" in path):
        return os.path.exists(path)
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def write_target(path):
    """What writing `path` replaces: the file at the end of its symbolic
    links (a chain, a dangling one), so that a link stays a link."""
    target = os.path.realpath(path)
    if os.path.islink(target):  # realpath stops at a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    return target


def temp_beside(target):
    """A new empty file beside `target`, with a short name (target's own
    name may be near the 255-byte limit): its path."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp.")
    os.close(fd)
    os.chmod(tmp, 0o644)
    return tmp


def check_writable(path, flag):
    """BadInput naming `flag` unless a file can be written at `path` (tried
    beside it, then removed): found before any work, not after."""
    refuse_stdout(path, flag)
    if is_stream(path):
        if os.access(path, os.W_OK):
            return
        raise BadInput(f"{flag} {path}: cannot write: permission denied")
    try:
        target = write_target(path)
    except OSError as e:
        raise BadInput(f"{flag} {path}: cannot write: {e.strerror}")
    if os.path.isdir(target):
        raise BadInput(f"{flag} {path}: cannot write: is a directory")
    try:
        os.unlink(temp_beside(target))
    except OSError as e:
        raise BadInput(f"{flag} {path}: cannot write: {e.strerror}")


def same_file(a, b):
    """Whether paths a and b name one file: itself, through symbolic links or a hard link."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_inputs_as_outputs(outputs, inputs):
    """BadInput naming both when writing an output would replace an input
    (the same file by its name, a symbolic or a hard link). outputs: (flag,
    path) pairs; inputs: paths. Every tool that reads files and writes
    others calls this before any work."""
    for flag, out in outputs:
        for path in inputs:
            if out and path and same_file(out, path):
                raise BadInput(f"{flag} {out}: is the input {path} (an output never replaces an input)")


def make_folder(path, flag):
    """Make the output folder `path` if missing and check that a file can be
    written in it: BadInput naming `flag` and why when not (a regular file
    on the way, a read-only file system, no permission). Before any work."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{flag} {path}: not a folder")
    try:
        os.makedirs(path, exist_ok=True)
        os.unlink(temp_beside(os.path.join(path, "x")))
    except OSError as e:
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)  # a full disk is no bad input: exit 3
        raise (ToolError if full else BadInput)(f"{flag} {path}: cannot write there: {e.strerror or e}")


_HELD_LOCKS = []  # the lock files this process holds: open, so held, until it exits


def hold_lock(lock, what):
    """Hold the file `lock` (flock, never waiting) until this process exits,
    as scripts/regress.sh holds build/regress/.lock: BadInput naming the
    holder when another run holds it. A lock held by an ancestor
    (regress.sh runs ab.py into its own build/regress) is this run's."""
    import fcntl
    try:
        f = open(lock, "a+")
    except OSError as e:
        raise BadInput(f"{lock}: cannot write: {e.strerror}")
    f.seek(0)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = one_line(f.read(200))
        f.close()
        pid = re.match(r"pid (\d+)", holder)
        if pid and int(pid.group(1)) in ancestors():
            return
        raise BadInput(f"another run holds {what} ({holder or 'its pid not yet written'}): wait for it, or stop it")
    try:  # who holds it, for the next one to name; a full disk only leaves it unsaid
        f.truncate(0)
        f.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
    except OSError:
        pass
    _HELD_LOCKS.append(f)


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


def load(path, metric="time", name_filter=None):
    """Read one Google Benchmark JSON file into samples per benchmark."""
    return load_doc(read_json(path), path, metric, name_filter)


def load_doc(doc, path, metric="time", name_filter=None):
    """A Google Benchmark document (read from `path`) as samples per
    benchmark; BadInput naming the file and the entry for anything else.
    name_filter (a regex): the entries whose run name it does not match are
    left out before their numbers are read."""
    wanted = compile_filter(name_filter) if isinstance(name_filter, str) else name_filter
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise BadInput(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    if not isinstance(doc.get("context", {}), dict):
        raise BadInput(f"{path}: 'context' is a {type(doc['context']).__name__}: expected an object")
    runs, aggregates, kept = {}, {}, []
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise BadInput(f"{path}: benchmarks[{i}] has no name (expected an object with a 'name' string)")
        if not isinstance(b.get("run_name", ""), str):
            raise BadInput(f"{path}: {b['name']}: 'run_name' must be a string")
        if not isinstance(b.get("label", ""), str):
            raise BadInput(f"{path}: {b['name']}: 'label' must be a string")
        name = b.get("run_name") or b["name"]
        if wanted and not wanted.search(name):
            continue
        kept.append(b)
        run = runs.setdefault(name, Run(name))
        if b.get("error_occurred"):
            run.error = str(b.get("error_message") or "error")
            continue
        if b.get("skipped") is True:  # Google Benchmark 1.8+: "skip_message", real_time 0
            run.skipped = one_line(b.get("skip_message") or "skipped")
            continue
        if b.get("run_type") == "aggregate":
            aggregates.setdefault(name, []).append(b)
            continue
        run.samples.append(_value(b, metric, path))
        if finite_number(b.get("load")):
            run.loads.append(float(b["load"]))
        if b.get("loaded") is True:
            run.loaded.append(len(run.samples) - 1)
        label = b.get("label") or ""
        if THROTTLED in label:
            run.throttled.append(label.split(THROTTLED, 1)[1].split(";")[0].strip())
    # A file with only aggregates (--benchmark_report_aggregates_only): use the
    # median as the one sample we have.
    for name, aggs in aggregates.items():
        if not runs[name].samples and not runs[name].skipped:
            for a in aggs:
                if a.get("aggregate_name") == "median":
                    runs[name].samples.append(_value(a, metric, path))
    meta = doc.get(SAMPLES_META)
    return ResultFile(path, doc.get("context", {}), runs, benchmarks=kept, meta=meta if isinstance(meta, dict) else {})


def finite_number(x):
    """A JSON value that is a finite number (not a bool, a string, NaN or inf)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _sample(b, key, path):
    """b[key] as a sample: a finite number > 0, else BadInput naming it."""
    x = b.get(key)
    if not finite_number(x) or x <= 0:
        raise BadInput(f"{path}: {b['name']}: {key} is {json.dumps(x)}: expected a finite number > 0")
    return float(x)


def _clock(b, key, path):
    x = b.get(key)
    if not finite_number(x):
        raise BadInput(f"{path}: {b['name']}: {key} is {json.dumps(x)}: expected a number")
    return float(x)


def _value(b, metric, path):
    if metric == "time":
        unit = b.get("time_unit", "ns")
        if not isinstance(unit, str) or unit not in TIME_UNITS:
            raise BadInput(f"{path}: {b['name']}: unknown time unit {json.dumps(unit)} (expected ns, us, ms or s)")
        if "real_time" not in b:
            raise BadInput(f"{path}: {b['name']}: no real_time")
        return _sample(b, "real_time", path) * TIME_UNITS[unit]
    if metric not in b:
        raise BadInput(f"{path}: {b['name']}: has no '{metric}' counter")
    return _sample(b, metric, path)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def min_p_value(n1, n2):
    """The smallest two-sided p a Mann-Whitney U test can give for n1, n2."""
    return 2.0 / math.comb(n1 + n2, n1)


FLOOR_QUANTILE = 0.999
FLOOR_DRAWS = 4000


def load_floors(path):
    """{benchmark name: [relative process medians]} from an A/A calibration
    file (scripts/ab.py calibrate)."""
    return floors_from_doc(read_json(path), path)


def floors_from_doc(doc, path):
    benches = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benches, dict):
        raise BadInput(f"{path}: not a floors file (no 'benchmarks' object; make one with scripts/ab.py calibrate)")
    out = {}
    for name, b in benches.items():
        pool = b.get("process_medians") if isinstance(b, dict) else None
        if not isinstance(pool, list) or not all(finite_number(x) and x > 0 for x in pool):
            raise BadInput(f"{path}: {name}: 'process_medians' must be a list of positive numbers")
        out[name] = [float(x) for x in pool]
    return out


MAX_SIMULATED = 1000


def noise_floor(pool, n_a, n_b, quantile=FLOOR_QUANTILE, draws=FLOOR_DRAWS):
    """The |relative change of medians| that n_a vs n_b samples drawn from
    `pool` (process medians of identical builds) exceed with probability
    1 - quantile: two disjoint random subsets per draw when the pool is big
    enough, else draws with replacement. Deterministic (fixed seed). At
    most MAX_SIMULATED samples a side are drawn: beyond, the floor is that
    of MAX_SIMULATED (larger, so conservative), and the time stays bounded."""
    if len(pool) < 4 or n_a < 1 or n_b < 1:
        return float("nan")
    n_a, n_b = min(n_a, MAX_SIMULATED), min(n_b, MAX_SIMULATED)
    rng = random.Random(20261130)
    changes = []
    for _ in range(draws):
        if len(pool) >= n_a + n_b:
            s = rng.sample(pool, n_a + n_b)
            a, b = s[:n_a], s[n_a:]
        else:
            a = [rng.choice(pool) for _ in range(n_a)]
            b = [rng.choice(pool) for _ in range(n_b)]
        changes.append(abs(median(b) / median(a) - 1.0))
    changes.sort()
    return changes[min(len(changes) - 1, int(math.ceil(quantile * len(changes))) - 1)]


SAMPLES_META = "cudabench_samples"  # how a merged result's samples were taken (samples.py writes it)
# The verdicts, as the summary counts them.
VERDICTS = ("faster", "slower", "same", "noisy", "error", "skipped", "missing", "new", "only")


@dataclass
class Verdict:
    name: str
    verdict: str
    base: float = float("nan")
    new: float = float("nan")
    change: float = float("nan")  # + means slower (worse)
    p: float = float("nan")
    n_base: int = 0
    n_new: int = 0
    note: str = ""
    floor: float = float("nan")  # the measured noise floor (nan: none)
    new_failed: bool = False  # the new run failed this benchmark's check: a wrong result, fails the gate
    new_broke: bool = False  # the new run could not run it (bench's "could not run: ..."): exit 3


def new_error(b: Run):
    """The Verdict fields for the new run's error: a failed check (a wrong
    result) or a benchmark that could not run."""
    broke = b.error.startswith(COULD_NOT_RUN)
    return {"new_failed": bool(b.error) and not broke, "new_broke": broke}


def judge(name, a: Run, b: Run, metric="time", threshold=0.05, alpha=0.05, pool=None):
    if a.error or b.error:
        return Verdict(name, "error", note=("new: " + b.error) if b.error else ("baseline: " + a.error),
                       **new_error(b))
    if b.only_skipped and a.samples:  # it measured before and skips itself now
        return Verdict(name, "missing", median(a.samples), float("nan"), n_base=len(a.samples),
                       note=f"measured in the baseline, skipped in the new file: {b.skipped}")
    skips = [f"{w}: {r.skipped}" for w, r in (("baseline", a), ("new", b)) if r.only_skipped]
    if skips:
        return Verdict(name, "skipped", *(median(r.samples) if r.samples else float("nan") for r in (a, b)),
                       n_base=len(a.samples), n_new=len(b.samples), note="skipped in " + "; ".join(skips)
                       + " (not a failure)")
    if not a.samples or not b.samples:
        return Verdict(name, "error", note="no samples")
    ma, mb = median(a.samples), median(b.samples)
    if ma == 0:
        return Verdict(name, "error", note="baseline median is zero")
    change = (mb - ma) / ma
    if metric in HIGHER_IS_BETTER:
        change = -change
    v = Verdict(name, "", ma, mb, change, n_base=len(a.samples), n_new=len(b.samples))
    if pool:
        v.floor = noise_floor(pool, len(a.samples), len(b.samples))
    bar = max(threshold, v.floor) if v.floor == v.floor else threshold
    if abs(change) <= bar:
        v.verdict = "same"
        if abs(change) > threshold:
            v.note = "within the noise floor"
        return v
    if a.throttled or b.throttled:
        which = [f"{w} {', '.join(sorted(set(r.throttled)))}" for w, r in (("baseline", a), ("new", b)) if r.throttled]
        v.verdict, v.note = "noisy", "GPU throttled: " + "; ".join(which)
        return v
    if a.loaded or b.loaded:
        which = [f"{w} {len(r.loaded)} of {len(r.samples)} (up to {100 * max(r.loads or [0]):.0f}%)"
                 for w, r in (("baseline", a), ("new", b)) if r.loaded]
        v.verdict, v.note = "noisy", "sampled beside other load: " + "; ".join(which)
        return v
    if len(a.samples) < 2 or len(b.samples) < 2:
        v.verdict, v.note = "noisy", "single repetition: rerun with --benchmark_repetitions"
        return v
    if min_p_value(len(a.samples), len(b.samples)) >= alpha:
        v.verdict, v.note = "noisy", f"{len(a.samples)} vs {len(b.samples)} repetitions cannot reach p < {alpha}"
        return v
    from scipy.stats import mannwhitneyu
    v.p = float(mannwhitneyu(a.samples, b.samples, alternative="two-sided").pvalue)
    if v.p < alpha:
        v.verdict = "slower" if change > 0 else "faster"
    else:
        v.verdict = "noisy"
    return v


def clock_medians(f):
    """{counter: median over the file's benchmark samples} for the telemetry clocks."""
    out = {}
    for c in CLOCK_COUNTERS:
        xs = [_clock(b, c, f.path) for b in f.benchmarks
              if isinstance(b, dict) and b.get("run_type") != "aggregate" and c in b]
        xs = [x for x in xs if x > 0]  # 0: NVML had no reading
        if xs:
            out[c] = median(xs)
    return out


@functools.cache
def context_schema():
    """The entries of env/context_keys.json, in its order. Read when first
    needed, not on import: a missing or broken schema is the tool's failure
    (exit 3), never a traceback in every script that imports this one."""
    try:
        return read_json(CONTEXT_SCHEMA)["keys"]
    except BadInput as e:
        raise ToolError(str(e))
    except (KeyError, TypeError):
        raise ToolError(f"{CONTEXT_SCHEMA}: expected an object with a list 'keys'")


def context_keys():
    """The context keys worth showing when they differ between runs, in the schema's order."""
    return [e["key"] for e in context_schema() if e.get("compare")]


def context_differences(files):
    rows = []
    keys = [k for k in context_keys() if any(k in f.context for f in files)]
    for k in keys:
        vals = [str(f.context.get(k, "-")) for f in files]
        if len(set(vals)) > 1:
            rows.append((k, vals))
    clocks = [clock_medians(f) for f in files]
    for c in CLOCK_COUNTERS:
        vals = [x.get(c) for x in clocks]
        known = [v for v in vals if v is not None]
        if len(known) > 1 and (len(known) < len(vals) or max(known) > min(known) * (1 + CLOCK_TOLERANCE)):
            rows.append((f"{c} (measured, median)", ["-" if v is None else f"{v:.0f}" for v in vals]))
    return rows


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def hardware_of(context):
    """The hardware a result was measured on, as a name: the GPU's model when
    bench could use one, else cpu-<CPU model>-<threads>c (what
    scripts/lib.sh's machine_label gives by default)."""
    gpu = context.get("gpu_name")
    if isinstance(gpu, str) and gpu and gpu != "none":
        return slug(gpu)
    model = context.get("host_cpu_model")
    threads = context.get("host_threads") or context.get("num_cpus")
    return slug(f"cpu-{model}-{threads}c") if model else ""


def machine_of(f):
    """The machine a result names (run-bench.sh --label), else its hardware."""
    label = f.context.get("machine_label")
    if isinstance(label, str) and label:
        return label
    hardware = hardware_of(f.context)
    if hardware:
        return hardware
    # An older run that names no hardware: results/<machine>/<toolkit>/latest.json names it.
    parts = os.path.abspath(f.path).split(os.sep)
    return parts[-3] if len(parts) >= 4 and parts[-4] == "results" else ""


def default_label(f, i):
    """A file's column: its machine, or its file name when nothing names
    one (set_labels tells apart files of one machine)."""
    return machine_of(f) or os.path.basename(f.path) or f"file{i}"


def fmt_value(x, metric):
    if x != x:  # nan
        return "-"
    if metric == "time":
        for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if x >= scale:
                return f"{x / scale:.3g} {unit}"
        return f"{x / 1e-9:.3g} ns"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}/s"
    return f"{x:.3g}/s"


def fmt_change(c):
    return "-" if c != c else f"{100 * c:+.1f}%"


def md_cell(x):
    """One Markdown table cell's text: a `|` would start a new column and a
    newline end the row, so `|` is escaped and newlines become spaces. Every
    Markdown table of the scripts goes through here (table())."""
    return " ".join(str(x).splitlines()).replace("|", "\\|")


def table(headers, rows, markdown):
    if markdown:
        line = lambda r: "| " + " | ".join(md_cell(c) for c in r) + " |"
        return "\n".join([line(headers), "|" + "|".join("---" for _ in headers) + "|"] + [line(r) for r in rows])
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


MAX_FILTER = 10000  # characters, as bench takes


@functools.lru_cache(maxsize=64)  # machines.absence asks once per absent row
def compile_filter(rx, what="--filter"):
    """A benchmark-name filter, matched in linear time by RE2 as bench
    matches it (Python's re backtracks: '(.*)*z' would never end)."""
    try:
        import re2
    except ImportError:
        raise ToolError("the google-re2 module is missing: run scripts/setup.sh")
    if len(rx) > MAX_FILTER:
        raise BadInput(f"{what}: a regular expression of at most {MAX_FILTER} characters, not {len(rx)}")
    options = re2.Options()
    options.log_errors = False  # the error is our one line
    try:
        return re2.compile(rx, options)
    except re2.error as e:
        why = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise BadInput(f"{what} {rx}: not a valid regular expression ({why})")


def compare(files, metric="time", threshold=0.05, alpha=0.05, name_filter=None, floors=None):
    """Verdicts of every later file against the first: (names, {label:
    [Verdict per name]}). A benchmark of the baseline that a later file
    lacks is "missing" there (it fails the gate), one only in later files
    "new" where it is. floors: {name: [process medians of an A/A run]}.
    name_filter: the --filter the files were loaded with (load leaves out
    what it does not match), named when nothing is in common."""
    base = files[0]
    names = list(base.runs)
    names += list(dict.fromkeys(n for f in files[1:] for n in f.runs if n not in base.runs))
    for f in files[1:]:
        if not any(n in base.runs and n in f.runs for n in names):
            raise BadInput("no benchmarks in common" + (f" matching '{name_filter}'" if name_filter else "") +
                           " between " + ", ".join(x.path for x in (base, f)))
    floors = floors or {}

    def verdict(n, f):
        a, b = base.runs.get(n), f.runs.get(n)
        if a and b:
            return judge(n, a, b, metric, threshold, alpha, floors.get(n))
        if a and a.only_skipped:  # nothing measured on either side: nothing went missing
            return Verdict(n, "skipped", note=f"skipped in the baseline: {a.skipped}; not in {f.label}")
        if a:
            return Verdict(n, "missing", n_base=len(a.samples), note=f"not in {f.label}: did it stop running?")
        if b:
            return Verdict(n, "new", new=median(b.samples) if b.samples else float("nan"), n_new=len(b.samples),
                           note="not in the baseline" + (f"; new: {b.error}" if b.error else "")
                           + (f"; skipped: {b.skipped}" if b.only_skipped else ""), **new_error(b))
        return Verdict(n, "absent")
    return names, {f.label: [verdict(n, f) for n in names] for f in files[1:]}


def render(files, names, results, metric, threshold, alpha, markdown):
    out = []
    h = "### " if markdown else ""
    diffs = context_differences(files)
    out.append(f"{h}What differs between the runs")
    if diffs:
        out.append(table(["context"] + [f.label for f in files], [[k] + v for k, v in diffs], markdown))
    else:
        out.append("nothing in the recorded context")
    out.append("")
    what = "time (lower is better)" if metric == "time" else f"{metric} (higher is better)"
    floored = any(v.floor == v.floor for vs in results.values() for v in vs)
    bar = f"max({100 * threshold:g}%, the noise floor)" if floored else f"{100 * threshold:g}%"
    out.append(f"{h}Benchmarks: {what}; change > {bar} with Mann-Whitney p < {alpha:g} is a verdict")
    if len(files) == 2:
        rows = []
        for v in results[files[1].label]:
            row = [v.name, fmt_value(v.base, metric), fmt_value(v.new, metric), fmt_change(v.change)]
            if floored:
                row.append("-" if v.floor != v.floor else f"{100 * v.floor:.1f}%")
            rows.append(row + ["-" if v.p != v.p else f"{v.p:.3g}", f"{v.n_base}/{v.n_new}", v.verdict, v.note])
        out.append(table(["benchmark", files[0].label, files[1].label, "change"] + (["floor"] if floored else [])
                         + ["p", "samples", "verdict", "note"], rows, markdown))
    else:
        rows = []
        for i, n in enumerate(names):
            base = files[0].runs.get(n)
            row = [n, fmt_value(median(base.samples) if base and base.samples else float("nan"), metric)]
            for f in files[1:]:
                v = results[f.label][i]
                row.append("-" if v.verdict == "absent" else v.note if v.verdict == "skipped" else
                           f"{fmt_value(v.new, metric)} ({fmt_change(v.change)}, {v.verdict})")
            rows.append(row)
        out.append(table(["benchmark"] + [f.label + (" (baseline)" if j == 0 else "") for j, f in enumerate(files)],
                         rows, markdown))
    counts = {}
    for vs in results.values():
        for v in vs:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
    out.append("")
    out.append("Summary: " + ", ".join(f"{k} {counts[k]}" for k in VERDICTS if k in counts))
    return "\n".join(out)


def write_whole(path, text_or_writer):
    """Write `path` whole or not at all: a temporary file beside it (beside
    the file its symbolic links lead to), fsync'd, then renamed over it;
    removed on any failure or interruption (ToolError, naming the file, when
    the disk is full). `text_or_writer`: the text, or a function that writes
    to the path it is given (matplotlib's savefig)."""
    def emit(target, mode="w"):
        if callable(text_or_writer):
            text_or_writer(target)
        else:
            with open(target, mode, encoding="utf-8") as f:
                f.write(text_or_writer)

    refuse_stdout(path, "output")
    tmp = None
    try:
        if is_stream(path):
            return emit(path, "a")  # /dev/stdout, a pipe, /dev/full: written in place, never replaced
        target = write_target(path)
        tmp = temp_beside(target)
        emit(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        raise ToolError(f"{path}: cannot write: {e.strerror or e}")
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def finish(files, names, results, metric="time", threshold=0.05, alpha=0.05, markdown=None, fmt="text",
           report_only=False, tool="compare", report=None):
    """Print the report (and write it as Markdown), return the exit code.
    The code does not depend on anyone reading the output: a closed pipe
    (`| head`) does not hide a regression. report: the renderer (render, or
    machines.render for machines)."""
    report = report or render
    slower = [v.name for vs in results.values() for v in vs if v.verdict == "slower"]
    missing = sorted({v.name for vs in results.values() for v in vs if v.verdict == "missing"})
    failed = sorted({v.name for vs in results.values() for v in vs if v.new_failed})
    broke = sorted({v.name for vs in results.values() for v in vs if v.new_broke})
    if markdown:
        write_whole(markdown, report(files, names, results, metric, threshold, alpha, True) + "\n")
    try:
        print(report(files, names, results, metric, threshold, alpha, fmt == "markdown"), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if report_only:
        return EXIT_OK
    if failed:
        print(f"{tool}: {len(failed)} benchmark(s) failed in the new run (a wrong result): "
              + ", ".join(failed[:10]), file=sys.stderr)
    if slower:
        print(f"{tool}: {len(slower)} benchmark(s) slower beyond the bar (p < {alpha:g}): "
              + ", ".join(slower[:10]), file=sys.stderr)
    if missing:
        print(f"{tool}: {len(missing)} benchmark(s) of the baseline missing from the new run: "
              + ", ".join(missing[:10]), file=sys.stderr)
    if failed or slower or missing:
        return EXIT_REGRESSION
    if broke:
        print(f"{tool}: {len(broke)} benchmark(s) could not run in the new run: " + ", ".join(broke[:10]),
              file=sys.stderr)
        return EXIT_TOOL
    return EXIT_OK


def set_labels(files, labels):
    """Give each file its column label: --labels (which must be unique and
    one per file) or default_label. Results are indexed by label, so every
    label is unique: default labels that collide (three runs of one toolkit
    on one GPU) get the file name, then a number. compare.py and report.py
    both label runs here."""
    if labels is not None:
        if len(labels) != len(files):
            raise BadInput(f"--labels has {len(labels)} names for {len(files)} files")
        if any(not lab.strip() for lab in labels):
            raise BadInput("--labels: an empty name (expected one name per file, comma-separated)")
        dup = sorted({lab for lab in labels if labels.count(lab) > 1})
        if dup:
            raise BadInput(f"--labels: '{dup[0]}' given twice (each file needs its own)")
        for f, lab in zip(files, labels):
            f.label = lab
        return
    for i, f in enumerate(files):
        f.label = default_label(f, i)
    groups = {}
    for f in files:
        groups.setdefault(f.label, []).append(f)
    for label, fs in groups.items():
        toolkits = [str(f.context.get("cuda_toolkit", "")) for f in fs]
        if len(fs) > 1 and len(set(toolkits)) == len(fs) and all(toolkits):
            for f, t in zip(fs, toolkits):
                f.label = f"{label} {t}"
            continue
        if len(fs) > 1:
            # The file name, or with its folder when those collide too (a
            # fleet run's node1/cpu.json and node2/cpu.json).
            bases = [os.path.basename(f.path) for f in fs]
            for f, base in zip(fs, bases):
                if bases.count(base) > 1:
                    base = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(f.path))), base)
                f.label = f"{label} ({base})"
    seen = {}
    for f in files:
        seen[f.label] = seen.get(f.label, 0) + 1
        if seen[f.label] > 1:
            f.label = f"{f.label} #{seen[f.label]}"


def with_baseline_first(files, baseline):
    """files, the one labelled (or named) `baseline` first."""
    if baseline is None:
        return files
    pick = [f for f in files if baseline in (f.label, f.path)]
    if not pick:
        raise BadInput(f"--baseline {baseline}: no such column (the columns: {', '.join(f.label for f in files)})")
    return pick[:1] + [f for f in files if f is not pick[0]]


def compare_files(a, files, against=None):
    """Verdicts, the report (for machines when the files name different
    machines or one is a reference), the plots, the exit code."""
    import machines
    floors = load_floors(a.floors) if a.floors else None
    names, results = compare(files, a.metric, a.threshold, a.alpha, a.filter, floors)
    report = None
    if against or len({machine_of(f) for f in files}) > 1:
        machines.relabel(results, files)
        report = functools.partial(machines.render, against=against)
    if a.plot:
        import report as plots
        rc = plots.main([f.path for f in files] + ["--out", a.plot, "--labels", ",".join(f.label for f in files)])
        if rc:
            return rc  # it said why (a full disk: 3)
    return finish(files, names, results, a.metric, a.threshold, a.alpha, a.markdown, a.format, a.report_only,
                  report=report)


def against_reference(a, wanted):
    """The one file against the reference for its hardware."""
    import machines
    if len(a.files) != 1:
        raise BadInput("--reference takes one result file (the run to hold against its hardware's reference)")
    f = load(a.files[0], a.metric, wanted)
    path = machines.find_reference(f, a.reference or None)
    hw = hardware_of(f.context) or "unknown hardware"
    if not path:
        if a.if_any:
            return EXIT_OK
        raise BadInput(f"--reference: no reference for {hw} in {a.reference or machines.REFERENCES} "
                       "(make one: compare.py --make-reference RUN.json; docs/comparing-machines.md)")
    check_outputs(a, [path])
    ref = load(path, a.metric, wanted)
    ref.label, f.label = f"reference {hw}", machine_of(f) or "this machine"
    if f.label == ref.label:
        f.label += " (this run)"
    against = f"the reference for its hardware ({hw}, recorded {str(ref.context.get('date', '?'))[:10]})"
    return compare_files(a, [ref, f], against=against)


def check_outputs(a, inputs):
    """No output (--markdown, --plot's files) is one of the inputs."""
    import report
    outputs = [("--markdown", a.markdown)] + [("--plot", os.path.join(a.plot, n)) for n in report.OUTPUTS if a.plot]
    refuse_inputs_as_outputs(outputs, inputs)


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so that `finally`
    blocks remove temporary files before it exits."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, _frame):
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


def one_line(text):
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


class StdoutError(Exception):
    """Standard output could not be written (a full disk, closed, a reader gone)."""


class _CheckedStdout:
    """sys.stdout whose failures are StdoutError, also when it is closed
    (Python's print() then writes nothing and says nothing)."""

    def __init__(self, inner):
        self.inner = inner

    def _do(self, what, *args):
        if self.inner is None:
            raise StdoutError(OSError(errno.EBADF, "it is closed"))
        try:
            return getattr(self.inner, what)(*args)
        except OSError as e:
            raise StdoutError(e) from None

    def write(self, text):
        return self._do("write", text)

    def flush(self):
        return self._do("flush") if self.inner is not None else None

    def __getattr__(self, name):
        return getattr(self.inner, name)


def stdout_failed(tool, e):
    """The exit for standard output that failed: a reader that went away
    ends the tool quietly, as SIGPIPE would (141); anything else is exit 3
    in one line. The descriptor then points at /dev/null, so Python's own
    flush at exit says nothing more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
    err = e.args[0] if e.args else e
    if getattr(err, "errno", None) == errno.EPIPE:
        return 128 + signal.SIGPIPE
    print(f"{tool}: standard output: cannot write: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
    return EXIT_TOOL


def print_usage(tool, text):
    """A tool's --help text on standard output: 0, or 3 when it cannot be written."""
    try:
        if sys.stdout is None:
            raise OSError(errno.EBADF, "it is closed")
        sys.stdout.write(text.strip() + "\n")
        sys.stdout.flush()
    except (OSError, StdoutError) as e:
        return stdout_failed(tool, e if isinstance(e, StdoutError) else StdoutError(e))
    return EXIT_OK


def guarded(tool, body):
    """Run body() and map every failure to its own exit code, in one line:
    2 bad input, 3 the tool could not run (never 1, which means slower),
    128 + the signal when stopped. Standard output is checked (stdout_failed).
    No traceback reaches the terminal; CUDABENCH_DEBUG=1 prints it after the line."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _raise_terminated)
    if not isinstance(sys.stdout, _CheckedStdout):
        sys.stdout = _CheckedStdout(sys.stdout)
    try:
        rc = body()
        sys.stdout.flush()
        return rc
    except StdoutError as e:
        return stdout_failed(tool, e)
    except BadInput as e:
        print(f"{tool}: {one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ToolError as e:
        print(f"{tool}: {one_line(e)}", file=sys.stderr)
        return EXIT_TOOL
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated as e:
        print(f"{tool}: stopped by signal {e.signum}", file=sys.stderr)
        return 128 + e.signum
    except Exception as e:  # an internal error must not read as a regression
        print(f"{tool}: internal error: {type(e).__name__}: {one_line(e)}", file=sys.stderr)
        if os.environ.get("CUDABENCH_DEBUG") == "1":
            import traceback
            traceback.print_exc()
        return EXIT_TOOL


def bounded(lo, hi, kind=int, ends="[]"):
    """The argparse action of a count or number option: a `kind` (int or
    float) from lo to hi, each end in or out as `ends` says ("[]", "(]",
    "()"); anything else is one line naming the option, the value and the
    range (exit 2). The range is added to the option's --help. Every count
    and number the scripts take is parsed here."""
    what = f"{'a whole number' if kind is int else 'a number'} in {ends[0]}{lo:g}, {hi:g}{ends[1]}"

    def fits(x):
        return (lo < x if ends[0] == "(" else lo <= x) and (x < hi if ends[1] == ")" else x <= hi)

    class Bounded(argparse.Action):
        def __init__(self, *args, **kw):
            kw["help"] = f"{kw.get('help') or ''} ({what})".lstrip()
            super().__init__(*args, **kw)

        def __call__(self, parser, namespace, value, option=None):
            try:
                x = kind(value)
            except ValueError:
                x = None
            if x is None or not fits(x):
                parser.error(f"{option or self.metavar or self.dest} {value if x is None else x}: expected {what}")
            setattr(namespace, self.dest, x)
    return Bounded


class ArgParser(argparse.ArgumentParser):
    """argparse with misuse in one line (`tool: error: ... (see --help)`),
    exit 2, instead of the usage block."""

    def error(self, message):
        print(f"{self.prog}: {one_line(message)} (see --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)

    def print_help(self, file=None):
        """--help on standard output, checked: exit 3 when it cannot be written."""
        if print_usage(self.prog, self.format_help()):
            sys.exit(EXIT_TOOL)


def main(argv=None):
    ap = ArgParser(prog="compare", description=__doc__.split("\n\n")[0],
                   formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("files", nargs="+", help="Google Benchmark JSON files; the first is the baseline")
    ap.add_argument("--metric", default="time", choices=["time", "bytes_per_second", "items_per_second"])
    ap.add_argument("--threshold", action=bounded(0, 10, float, "(]"), default=0.05,
                    help="relative change that counts (default 0.05)")
    ap.add_argument("--alpha", action=bounded(0, 1, float, "()"), default=0.05,
                    help="significance level (default 0.05)")
    ap.add_argument("--filter", help="only benchmarks whose name matches this regex")
    ap.add_argument("--labels", help="comma-separated column labels, one per file")
    ap.add_argument("--floors", metavar="FILE", help="noise floors from an A/A run (scripts/ab.py calibrate)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown (e.g. $GITHUB_STEP_SUMMARY)")
    ap.add_argument("--format", choices=["text", "markdown"], default="text", help="what to print")
    ap.add_argument("--report-only", action="store_true", help="never exit 1 for a regression")
    ap.add_argument("--baseline", metavar="LABEL", help="the column the others are held against (default the first)")
    ap.add_argument("--reference", nargs="?", const="", metavar="DIR",
                    help="hold each file against the reference for its hardware (in DIR, default results/reference)")
    ap.add_argument("--if-any", action="store_true", help="with --reference: no reference for this hardware is not an error")
    ap.add_argument("--make-reference", action="store_true",
                    help="make the reference of the files' hardware from them (into --reference DIR)")
    ap.add_argument("--plot", metavar="DIR", type=output_folder, help="also plots and report.md through report.py")
    a = ap.parse_args(argv)

    def body():
        ensure_venv()
        if a.make_reference:
            import machines
            print(f"compare: reference written: {machines.make_reference(a.files, a.reference or None)}")
            return EXIT_OK
        if len(a.files) < 2 and a.reference is None:
            raise BadInput("need at least two files (baseline first)")
        wanted = compile_filter(a.filter) if a.filter is not None else None
        if a.markdown:
            check_writable(a.markdown, "--markdown")
        if a.plot:
            make_folder(a.plot, "--plot")
        check_outputs(a, a.files + [a.floors])
        if a.reference is not None:
            return against_reference(a, wanted)
        files = [load(p, a.metric, wanted) for p in a.files]
        set_labels(files, a.labels.split(",") if a.labels is not None else None)
        files = with_baseline_first(files, a.baseline)
        return compare_files(a, files)

    return guarded("compare", body)


if __name__ == "__main__":
    sys.modules.setdefault("compare", sys.modules[__name__])  # machines.py and report.py raise this BadInput
    sys.exit(main())
