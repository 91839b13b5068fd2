"""The results format: Google Benchmark JSON read into samples per
benchmark (Run), with cudabench's additions (throttled GPU labels, the load
beside each process sample, the GPU clocks), and the name filter bench uses."""
import functools
import json
import math
import re
from dataclasses import dataclass, field

from ..base.errors import BadInput, ToolError, one_line
from ..base.files import read_json

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
HIGHER_IS_BETTER = {"bytes_per_second", "items_per_second"}
# Telemetry counters (cudabench's NVML samples) whose medians over a file's
# benchmarks are compared like context.
CLOCK_COUNTERS = ["sm_clock_mhz", "mem_clock_mhz"]
THROTTLED = "throttled: "
COULD_NOT_RUN = "could not run: "  # bench's prefix for an error that is not a wrong result
SAMPLES_META = "cudabench_samples"  # how a merged result's samples were taken (samples.py writes it)
MAX_FILTER = 10000  # characters, as bench takes
MIN_CLEAN = 2  # a row needs this many samples taken without other load to say anything
# The version of Google Benchmark's JSON format (its "json_schema_version",
# at the top or in the context since 1.8) this reader knows; a file without
# one is of this format too.
FORMAT_VERSION = 1
# What tells one row from another: a second row with all of these equal is
# the same sample again (a file written or concatenated twice).
IDENTITY = ("name", "run_type", "aggregate_name", "family_index", "per_family_instance_index", "machine",
            "repetition_index")


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

    def clean(self):
        """The row without its samples taken beside other load: the only ones a verdict rests on."""
        skip = set(self.loaded)
        return Run(self.name, [x for i, x in enumerate(self.samples) if i not in skip], self.error, self.skipped,
                   self.throttled)

    @property
    def too_loaded(self):
        """Fewer than MIN_CLEAN of its samples were taken without other load: nothing can be told from it."""
        return bool(self.loaded) and len(self.samples) - len(self.loaded) < MIN_CLEAN


@dataclass
class ResultFile:
    path: str
    context: dict
    runs: dict  # name -> Run
    label: str = ""
    benchmarks: list = field(default_factory=list)  # the file's entries (those the filter kept)
    meta: dict = field(default_factory=dict)  # how its samples were taken (samples.py's cudabench_samples)
    notes: list = field(default_factory=list)  # what a report must say of it (partial, rows counted once)

    @property
    def processes(self):
        """How many processes its samples come from: the sampler's count, else
        the distinct processes its entries name, else 1 (Google Benchmark's
        own file: every repetition inside one process)."""
        n = self.meta.get("processes")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
        return max(1, len({(b.get("machine"), b.get("process")) for b in self.benchmarks if "process" in b}))

    @property
    def partial(self):
        """How a run stopped before all its processes ran (samples.py), or None: a whole run."""
        p = self.meta.get("partial")
        return p if isinstance(p, dict) else None


def partial_note(path, partial):
    """The line every reader shows for a partial run (samples.py wrote it when stopped)."""
    return (f"{path}: partial: {partial.get('processes', '?')} of {partial.get('planned', '?')} processes ran before "
            f"{partial.get('stopped_by', 'something')} stopped the run")


def load(path, metric="time", name_filter=None):
    """Read one Google Benchmark JSON file into samples per benchmark."""
    return load_doc(read_json(path), path, metric, name_filter)


def load_doc(doc, path, metric="time", name_filter=None):
    """A Google Benchmark document (read from `path`) as samples per
    benchmark; BadInput naming the file and the entry for anything else.
    name_filter (a regex): the entries whose run name it does not match are
    left out before their numbers are read. A row that appears twice
    (unique_rows) is one sample, and the file's notes say so."""
    wanted = compile_filter(name_filter) if isinstance(name_filter, str) else name_filter
    check_format(doc, path)
    rows, twice = unique_rows([b for b in named_rows(doc, path) if not wanted or wanted.search(run_name(b))], path)
    runs, aggregates = {}, {}
    for b in rows:
        name = run_name(b)
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
        run.samples.append(metric_value(b, metric, path))
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
                    runs[name].samples.append(metric_value(a, metric, path))
    meta = doc.get(SAMPLES_META)
    f = ResultFile(path, doc.get("context", {}), runs, benchmarks=rows, meta=meta if isinstance(meta, dict) else {})
    if f.partial:
        f.notes.append(partial_note(path, f.partial))
    if twice:
        f.notes.append(f"{path}: {twice} row(s) appear twice (the same benchmark, repetition and numbers): each "
                       "counted once")
    return f


def check_format(doc, path):
    """BadInput naming the file unless it is Google Benchmark JSON of a
    format this reader knows: a 'benchmarks' list, an object 'context', and
    no json_schema_version (at the top or in the context) but FORMAT_VERSION."""
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise BadInput(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    if not isinstance(doc.get("context", {}), dict):
        raise BadInput(f"{path}: 'context' is a {type(doc['context']).__name__}: expected an object")
    for where, d in (("", doc), ("context.", doc.get("context", {}))):
        v = d.get("json_schema_version", FORMAT_VERSION)
        if str(v) != str(FORMAT_VERSION) or isinstance(v, bool):
            raise BadInput(f"{path}: {where}json_schema_version is {json.dumps(v)}: this tool reads Google "
                           f"Benchmark's JSON format version {FORMAT_VERSION} (a newer cudabench may read it)")


def run_name(b):
    return b.get("run_name") or b["name"]


def named_rows(doc, path):
    """The document's entries, each checked to be an object with a name
    (and a string run_name and label, and a whole repetition_index when it has one)."""
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise BadInput(f"{path}: benchmarks[{i}] has no name (expected an object with a 'name' string)")
        for key in ("run_name", "label"):
            if not isinstance(b.get(key, ""), str):
                raise BadInput(f"{path}: {b['name']}: '{key}' must be a string")
        index = b.get("repetition_index", 0)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise BadInput(f"{path}: {b['name']}: repetition_index is {json.dumps(index)}: expected a whole "
                           "number >= 0")
    return doc["benchmarks"]


def unique_rows(rows, path):
    """(rows, how many were dropped): each row once. A row whose IDENTITY
    (its benchmark, repetition, machine) another row has is the same sample
    written twice when its numbers are the same too: it is dropped and
    counted; with other numbers it is BadInput naming the file (which of
    the two would be the sample?). Rows without a repetition_index are
    told apart by their whole content. Every reader of rows (load_doc,
    results.merged, the reference) goes through here."""
    seen, out = {}, []
    for b in rows:
        content = json.dumps(b, sort_keys=True)
        key = json.dumps([b.get(k) for k in IDENTITY]) if "repetition_index" in b else content
        if key in seen:
            if seen[key] != content:
                raise BadInput(f"{path}: {b['name']}: repetition_index {b['repetition_index']} appears twice with "
                               "different numbers: expected each repetition once")
            continue
        seen[key] = content
        out.append(b)
    return out, len(rows) - len(out)


def finite_number(x):
    """A JSON value that is a finite number (not a bool, a string, NaN or inf)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def positive_number(b, key, path):
    """b[key] as a sample: a finite number > 0, else BadInput naming it."""
    x = b.get(key)
    if not finite_number(x) or x <= 0:
        raise BadInput(f"{path}: {b['name']}: {key} is {json.dumps(x)}: expected a finite number > 0")
    return float(x)


def number(b, key, path):
    x = b.get(key)
    if not finite_number(x):
        raise BadInput(f"{path}: {b['name']}: {key} is {json.dumps(x)}: expected a number")
    return float(x)


def metric_value(b, metric, path):
    if metric == "time":
        unit = b.get("time_unit", "ns")
        if not isinstance(unit, str) or unit not in TIME_UNITS:
            raise BadInput(f"{path}: {b['name']}: unknown time unit {json.dumps(unit)} (expected ns, us, ms or s)")
        if "real_time" not in b:
            raise BadInput(f"{path}: {b['name']}: no real_time")
        return positive_number(b, "real_time", path) * TIME_UNITS[unit]
    if metric not in b:
        raise BadInput(f"{path}: {b['name']}: has no '{metric}' counter")
    return positive_number(b, metric, path)


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


def name_prefix(name):
    """A filter for one benchmark: its name up to the time suffix, anchored
    (Google Benchmark matches names that may still hold a min_time part)."""
    for suffix in ("/real_time", "/manual_time", "/process_time"):
        if name.endswith(suffix):
            return "^" + re.escape(name[: -len(suffix) + 1])
    return "^" + re.escape(name) + "$"
