"""What a result records about where it ran: the context keys worth
comparing (env/context_keys.json, the one schema), the GPU clocks measured
during the run, the machine and hardware a result names, and the columns'
labels."""
import functools
import os
import re
import sys
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


FLAGS_SHOWN = 6  # the most CPU flags a cell lists; a family of them (avx512*) is one


def flag_groups(flags):
    """Flags as words, a family of AVX-512 flags as one: ["avx512 (11 flags)", "vaes"]."""
    wide = sorted(x for x in flags if x.startswith("avx512"))
    rest = sorted(x for x in flags if not x.startswith("avx512"))
    return ([f"avx512 ({len(wide)} flag{'s' if len(wide) > 1 else ''})"] if wide else []) + rest


def flag_texts(values):
    """Each file's CPU flags (host_cpu_flags: a hundred words) as the flags
    not common to all, in one short line: "+avx512 (11 flags) -amx_tile",
    at most FLAGS_SHOWN, then how many more; "-" for None."""
    values = [None if v in ("none", "") else v for v in values]  # a run that recorded no flags
    sets = [set(str(v).split()) for v in values if v is not None]
    common = set.intersection(*sets) if sets else set()
    union = set.union(*sets) if sets else set()
    out = []
    for v in values:
        mine = set(str(v).split()) if v is not None else set()
        words = [f"+{x}" for x in flag_groups(mine - common)] + [f"-{x}" for x in flag_groups(union - mine)]
        more = f" (+{len(words) - FLAGS_SHOWN} more)" if len(words) > FLAGS_SHOWN else ""
        out.append("-" if v is None else " ".join(words[:FLAGS_SHOWN]) + more or "the common flags")
    return out


def context_differences(files):
    rows = []
    keys = [k for k in context_keys() if any(k in f.context for f in files)]
    for k in keys:
        vals = [str(f.context.get(k, "-")) for f in files]
        if len(set(vals)) > 1:
            rows.append((k, flag_texts([f.context.get(k) for f in files]) if k == "host_cpu_flags" else vals))
    clocks = [clock_medians(f) for f in files]
    for c in CLOCK_COUNTERS:
        vals = [x.get(c) for x in clocks]
        known = [v for v in vals if v is not None]
        if len(known) > 1 and (len(known) < len(vals) or max(known) > min(known) * (1 + CLOCK_TOLERANCE)):
            rows.append((f"{c} (measured, median)", ["-" if v is None else f"{v:.0f}" for v in vals]))
    return rows


# A CPU's vector ISA level: the widest its flags offer (x86, then Arm).
ISA_LEVELS = (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx"), ("sse2", "sse2"),
              ("sve2", "sve2"), ("sve", "sve"), ("asimd", "neon"))
VENDORS = {"AuthenticAMD": "amd", "GenuineIntel": "intel", "HygonGenuine": "hygon", "CentaurHauls": "centaur"}
# What a run that does not record a fact gets in its kind's name, in place of it.
UNKNOWN_ID, UNKNOWN_ISA = "cpuid-unknown", "isa-unknown"


def isa_level(flags):
    """avx512, avx2, ... for the CPU flags `flags` (host_cpu_flags); None when not recorded."""
    if not isinstance(flags, str) or flags in ("", "none"):
        return None
    have = set(flags.split())
    return next((level for flag, level in ISA_LEVELS if flag in have), "scalar")


def generation(cpu_id, model=""):
    """The CPU's identity (host_cpu_id) as a short name: f25m17s1 for x86's
    family, model and stepping (led by the vendor when the model name does
    not say it), 0x41-0xd4f-r0p0 for Arm's implementer, part, variant and
    revision; None when not recorded."""
    if not isinstance(cpu_id, str) or cpu_id in ("", "none"):
        return None
    words = cpu_id.split()
    vendor = words.pop(0) if len(words) % 2 else ""
    f = dict(zip(words[::2], words[1::2]))
    if "family" in f:
        short = VENDORS.get(vendor, vendor)
        lead = "" if not short or short in slug(str(model)).split("-") else short + "-"
        return f"{lead}f{f['family']}m{f.get('model', '?')}s{f.get('stepping', '?')}"
    variant = f.get("variant", "?")
    variant = str(int(variant, 0)) if re.fullmatch(r"0x[0-9a-fA-F]+|[0-9]+", variant) else variant
    return f"{f.get('implementer', '?')}-{f.get('part', '?')}-r{variant}p{f.get('revision', '?')}"


def hardware_of(context):
    """The kind of hardware a result was measured on, as a name: the GPU's
    model when bench could use one, else what decides a CPU's speed:
    cpu-<model name>-<identity>-<ISA level>-<threads>c, e.g.
    cpu-amd-epyc-f25m17s1-avx512-2c (a VM's model name, "AMD EPYC", names no
    generation; the identity and the flags do). A run that records no
    identity or no flags says so in the name (cpuid-unknown, isa-unknown),
    so it is never mixed with runs that record them. scripts/lib.sh's
    machine_label gives the same name (this_cpu)."""
    gpu = context.get("gpu_name")
    if isinstance(gpu, str) and gpu and gpu != "none":
        return slug(gpu)
    model = context.get("host_cpu_model") or ""
    threads = context.get("host_threads") or context.get("num_cpus")
    gen = generation(context.get("host_cpu_id"), model)
    if not model and not gen:  # an Arm server's cpuinfo may name neither: its identity names it
        return ""
    return slug(f"cpu-{model}-{gen or UNKNOWN_ID}-{isa_level(context.get('host_cpu_flags')) or UNKNOWN_ISA}-{threads}c")


def this_cpu(cpuinfo):
    """The context facts hardware_of reads, from /proc/cpuinfo's text, as
    env/probe_host.cpp reads them (for the moments before bench is built)."""
    facts, ident, threads, fallback = {}, {}, 0, ""
    names = {"vendor_id": "", "cpu family": "family", "model": "model", "stepping": "stepping",
             "CPU implementer": "implementer", "CPU architecture": "architecture", "CPU part": "part",
             "CPU variant": "variant", "CPU revision": "revision"}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        threads += key == "processor"
        if key == "model name":
            facts.setdefault("host_cpu_model", value)
        elif key in ("Model", "Hardware"):  # Arm and others have no "model name"
            fallback = fallback or value
        elif key in ("flags", "Features"):
            facts.setdefault("host_cpu_flags", value)
        elif key in names:
            ident.setdefault(key, value)
    facts.setdefault("host_cpu_model", fallback)
    facts["host_cpu_id"] = " ".join(((names[k] + " ") if names[k] else "") + ident[k] for k in names if k in ident)
    facts["host_threads"] = str(threads)
    return facts


def main(argv):
    """python3 -m cudabench.results.context this-cpu: this machine's CPU kind (lib.sh's machine_label)."""
    if argv != ["this-cpu"]:
        print("usage: python3 -m cudabench.results.context this-cpu", file=sys.stderr)
        return 2
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            kind = hardware_of(this_cpu(f.read(16 << 20)))
    except OSError as e:
        print(f"machine_label: /proc/cpuinfo: {e.strerror or e}: set CUDABENCH_MACHINE", file=sys.stderr)
        return 3
    if not kind:
        print("machine_label: /proc/cpuinfo names no CPU model or identity: set CUDABENCH_MACHINE", file=sys.stderr)
        return 3
    print(kind)
    return 0


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
