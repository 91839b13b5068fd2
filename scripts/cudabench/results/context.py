"""What a result records about where it ran: the context keys worth
comparing (env/context_keys.json, the one schema), the GPU clocks measured
during the run, the machine and hardware a result names, and the columns'
labels."""
import functools
import os
from pathlib import Path

from ..base.errors import BadInput, ToolError
from ..base.files import read_json
from ..base.paths import ROOT
from ..base.text import slug, visible
from .gbench import CLOCK_COUNTERS, number
from .stats import median

# The benchmark context's keys, defined once (who writes each, what it holds,
# which ones compare.py and fleet.py read): read by context_schema().
CONTEXT_SCHEMA = Path(ROOT) / "env" / "context_keys.json"
CLOCK_TOLERANCE = 0.01  # a relative difference of the measured clocks above this is shown


def clock_medians(f):
    """{counter: median over the file's benchmark samples} for the telemetry clocks."""
    out = {}
    for c in CLOCK_COUNTERS:
        xs = [number(b, c, f.path) for b in f.benchmarks
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
    # An older run that names no hardware: results[/archive]/<machine>/<toolkit>/latest.json names it.
    parts = os.path.abspath(f.path).split(os.sep)
    return parts[-3] if len(parts) >= 4 and parts[-4] in ("results", "archive") else ""


def default_label(f, i):
    """A file's column: its machine, or its file name when nothing names
    one (set_labels tells apart files of one machine)."""
    return machine_of(f) or os.path.basename(f.path) or f"file{i}"


def set_labels(files, labels):
    """Give each file its column label: --labels (which must be unique and
    one per file) or default_label. Results are indexed by label, so every
    label is unique: default labels that collide (three runs of one toolkit
    on one GPU) get the file name, then a number. compare.py and report.py
    both label runs here. Every label is as text.visible() shows it: a
    newline or an escape in --labels, a machine_label or a path cannot
    forge a line of a report."""
    if labels is not None:
        labels = [visible(lab) for lab in labels]
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
        f.label = visible(default_label(f, i))
    groups = {}
    for f in files:
        groups.setdefault(f.label, []).append(f)
    for label, fs in groups.items():
        toolkits = [str(f.context.get("cuda_toolkit", "")) for f in fs]
        if len(fs) > 1 and len(set(toolkits)) == len(fs) and all(toolkits):
            for f, t in zip(fs, toolkits):
                f.label = visible(f"{label} {t}")
            continue
        if len(fs) > 1:
            # The file name, or with its folder when those collide too (a
            # fleet run's node1/cpu.json and node2/cpu.json).
            bases = [os.path.basename(f.path) for f in fs]
            for f, base in zip(fs, bases):
                if bases.count(base) > 1:
                    base = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(f.path))), base)
                f.label = visible(f"{label} ({base})")
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
