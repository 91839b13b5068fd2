"""Machines compared: compare.py's report when its files come from different
machines (their machine labels differ) or one is held against the reference
for its hardware (--reference). Read by compare.py; docs/comparing-machines.md.

Every row gets the speed of each machine against the baseline (baseline time
/ its time: 0.5x is half as fast) with a distribution-free 95% interval (the
Hodges-Lehmann interval of the log ratio, from all pairs of process
samples), the Mann-Whitney verdict of compare.judge, and rows that one side
lacks are listed with the reason its file gives (no GPU, a failed check).
Below the table, each family of slower rows is given the recorded facts
that differ and bear on it, in FAMILIES' order: the likeliest cause first.
"""
import math
import os
import re
from dataclasses import dataclass
from statistics import NormalDist

import compare
from compare import BadInput, median


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    rows: str  # a regex on the row's name
    facts: tuple  # (context key or measured counter, label): the likeliest cause first


# The row families, the first that matches a row is its own, and the facts
# that bear on each (context keys of env/context_keys.json, or the
# telemetry counters compare.CLOCK_COUNTERS), likeliest first. The one table
# of which fact explains which rows; docs/comparing-machines.md is tested
# against it.
FAMILIES = (
    Family("transfer", "Transfer rows", r"^(Transfer|VectorAddFlow)/", (
        ("gpu_pcie_max", "PCIe link"), ("gpu_numa_node", "the GPU's NUMA node"),
        ("host_numa_nodes", "NUMA nodes"), ("gpu_name", "GPU"), ("host_cpu_model", "CPU"),
        ("host_memory_gib", "host memory (GiB)"), ("cuda_driver_version", "driver"))),
    Family("library", "Library rows", r"/(cublas_geam|thrust|torch_cuda)/|^Mnist(Train|Eval)/cuda", (
        ("gpu_name", "GPU"), ("cuda_driver_version", "driver"), ("cuda_toolkit", "CUDA toolkit"),
        ("cublas", "cuBLAS"), ("libtorch", "LibTorch"), ("libtorch_cuda", "LibTorch's CUDA"),
        ("cudnn", "cuDNN"), ("sm_clock_mhz", "SM clock under load (MHz)"))),
    Family("dram", "GPU memory-bound rows", r"^(VectorAdd|Copy)/cuda_", (
        ("gpu_name", "GPU"), ("gpu_memory_clock_khz", "memory clock (kHz)"),
        ("gpu_bus_width_bits", "memory bus (bits)"), ("gpu_ecc", "ECC"), ("gpu_power_limit", "power limit"),
        ("mem_clock_mhz", "memory clock under load (MHz)"), ("sm_clock_mhz", "SM clock under load (MHz)"),
        ("gpu_app_clocks_mhz", "application clocks (MHz)"), ("cuda_driver_version", "driver"))),
    Family("cpu", "CPU rows", r"/(cpu_|torch_cpu)|^Mnist(Train|Eval)/cpu", (
        ("host_cpu_model", "CPU"), ("cpu_threads_used", "threads the CPU rows use"),
        ("host_threads", "hardware threads"), ("host_cpu_governor", "CPU governor"),
        ("host_thp", "transparent huge pages"), ("host_memory_gib", "memory (GiB)"),
        ("mhz_per_cpu", "CPU clock (MHz)"), ("host_numa_nodes", "NUMA nodes"), ("libtorch", "LibTorch"))),
    Family("other", "Other rows", r".", (
        ("gpu_name", "GPU"), ("host_cpu_model", "CPU"), ("cuda_driver_version", "driver"),
        ("cuda_toolkit", "CUDA toolkit"), ("libtorch", "LibTorch"))),
)
NUMERIC = {"mhz_per_cpu": 0.03, "sm_clock_mhz": 0.03, "mem_clock_mhz": 0.03}  # relative tolerance
GPU_ROWS = ("transfer", "library", "dram")
CONFIDENCE = 0.95
REFERENCES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results", "reference")


def family_of(name):
    return next(f for f in FAMILIES if re.search(f.rows, name))


def fact(f, key):
    """A file's value of a fact: its context's, or a measured clock's median; None when unknown."""
    if key in compare.CLOCK_COUNTERS:
        return compare.clock_medians(f).get(key)
    v = f.context.get(key)
    return None if v in (None, "", "none", "-1", "0/0") else v


def differs(key, a, b):
    if a is None or b is None:
        return False
    if key in NUMERIC:
        try:
            return abs(float(b) / float(a) - 1) > NUMERIC[key]
        except (ValueError, ZeroDivisionError):
            return str(a) != str(b)
    return str(a) != str(b)


def shown(v):
    return f"{v:.0f}" if isinstance(v, float) else str(v)


MAX_PAIRED = 1000  # samples a side in the interval: 1e6 pairs at most


def quantiles(xs):
    """xs, or MAX_PAIRED of its evenly spaced order statistics when it has
    more (the interval's pairs grow with the product of the two counts)."""
    if len(xs) <= MAX_PAIRED:
        return xs
    xs = sorted(xs)
    return [xs[round(i * (len(xs) - 1) / (MAX_PAIRED - 1))] for i in range(MAX_PAIRED)]


def speed(a, b, metric):
    """(speed, low, high) of b against a: baseline time / b's time (for a
    throughput metric, b / baseline), 1 being the same; the interval is the
    Hodges-Lehmann one of the log ratio over all pairs (distribution-free,
    the large-sample rank bound of Hollander and Wolfe; over MAX_PAIRED
    quantiles a side beyond that many samples), nan when there are too few
    samples for it."""
    if not a.samples or not b.samples:
        return (math.nan,) * 3
    sign = -1 if metric in compare.HIGHER_IS_BETTER else 1
    la, lb = (quantiles([math.log(x) for x in side.samples]) for side in (a, b))
    d = sorted(sign * (x - y) for x in la for y in lb)
    n, m = len(la), len(lb)
    point = math.exp(sign * (math.log(median(a.samples)) - math.log(median(b.samples))))
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    if k < 1:
        return point, math.nan, math.nan
    return point, math.exp(d[k - 1]), math.exp(d[len(d) - k])


def absence(f, name):
    """Why a file has no row `name`, from what it records."""
    run = f.runs.get(name)
    if run and run.error:
        return f"{f.label}: {run.error}"
    if run and run.skipped:
        return f"{f.label}: skipped ({run.skipped})"
    c = f.context
    if family_of(name).name in GPU_ROWS or "cuda" in name:
        usable = str(c.get("libtorch_gpu_usable" if name.startswith("Mnist") or "torch" in name else "gpu_usable", ""))
        if usable.startswith("no"):
            return f"{f.label}: no GPU ({usable[3:].strip() or 'not usable'})"
    filt = f.meta.get("filter")
    if filt and not compare.compile_filter(str(filt), f"{f.label}: cudabench_samples.filter").search(name):
        return f"{f.label}: not in its filter"
    return f"{f.label}: not run"


def relabel(results, files):
    """Rows only one side has are 'only' here: being absent is no failure
    (a machine without a GPU has no GPU rows), though a failed check in the
    side that has it still is. Each says why, as its file records."""
    base = files[0]
    for f in files[1:]:
        for v in results[f.label]:
            if v.verdict in ("missing", "new"):
                lacking = f if v.verdict == "missing" else base
                having = base if v.verdict == "missing" else f
                r = having.runs[v.name]
                err = r.error or (f"skipped: {r.skipped}" if r.only_skipped else "")
                v.verdict = "only"
                v.note = f"only in {having.label}" + (f" ({err})" if err else "") + f"; {absence(lacking, v.name)}"


def causes(base, other, verdicts):
    """Lines: each family with slower rows, its speed, and the facts that
    differ and bear on it (the likeliest first). Facts that are the same are
    not shown."""
    out = []
    slower = [v for v in verdicts if v.verdict == "slower"]
    for fam in FAMILIES:
        rows = [v for v in slower if family_of(v.name) is fam]
        if not rows:
            continue
        total = sum(1 for v in verdicts if family_of(v.name) is fam and v.verdict not in ("only", "skipped"))
        sp = median([1 / (1 + v.change) for v in rows])
        diffs = [f"{label} {shown(fact(other, k))} against {shown(fact(base, k))}"
                 for k, label in fam.facts if differs(k, fact(base, k), fact(other, k))]
        why = "; ".join(diffs) if diffs else "no recorded fact differs (the same hardware and stack: rerun, or look at load)"
        out.append(f"{fam.label} {sp:.2f}x ({len(rows)} of {total} slower): {why}")
    return out


def counts_line(other, base, verdicts, against=None):
    c = {}
    for v in verdicts:
        c[v.verdict] = c.get(v.verdict, 0) + 1
    parts = [f"{c.get('slower', 0)} rows slower beyond the bar", f"{c.get('same', 0)} the same",
             f"{c.get('faster', 0)} faster"]
    parts += [f"{c[k]} {w}" for k, w in (("noisy", "noisy"), ("error", "failed"), ("skipped", "skipped"),
                                        ("only", "only in one")) if c.get(k)]
    return f"{other.label} against {against or base.label}: " + ", ".join(parts)


def fmt_speed(sp):
    point, lo, hi = sp
    if point != point:
        return "-", "-"
    return f"{point:.2f}x", "-" if lo != lo else f"{lo:.2f}x .. {hi:.2f}x"


def render(files, names, results, metric, threshold, alpha, markdown, against=None):
    """The report for machines: what differs, the rows, the causes, the counts."""
    h = "### " if markdown else ""
    base = files[0]
    out = [f"{h}What differs between the machines"]
    diffs = compare.context_differences(files)
    out.append(compare.table(["context"] + [f.label for f in files], [[k] + v for k, v in diffs], markdown)
               if diffs else "nothing in the recorded context")
    what = "time" if metric == "time" else metric
    out += ["", f"{h}Rows: {what}; speed = {base.label} / machine (above 1 is faster); a change > {100 * threshold:g}% "
                f"with Mann-Whitney p < {alpha:g} is a verdict; interval: {100 * CONFIDENCE:g}% for the speed"]
    if len(files) == 2:
        rows = []
        for v in results[files[1].label]:
            a, b = base.runs.get(v.name), files[1].runs.get(v.name)
            sp, iv = fmt_speed(speed(a, b, metric)) if a and b else ("-", "-")
            rows.append([v.name, fmt(a, metric), fmt(b, metric), sp, iv, "-" if v.p != v.p else f"{v.p:.3g}",
                         f"{v.n_base}/{v.n_new}", v.verdict, v.note])
        out.append(compare.table(["benchmark", base.label, files[1].label, "speed", "95% interval", "p", "samples",
                                  "verdict", "note"], rows, markdown))
    else:
        out.append(compare.table(["benchmark"] + [f.label + (" (baseline)" if i == 0 else "")
                                                  for i, f in enumerate(files)],
                                 wide_rows(files, names, results, metric), markdown))
        out.append("* the fastest machine of the row")
    for f in files[1:]:
        out += ["", f"{h}Why {f.label} differs"]
        lines = causes(base, f, results[f.label])
        out += [("- " if markdown else "  ") + x for x in lines] or ["no family of rows is slower"]
    out.append("")
    out += [counts_line(f, base, results[f.label], against) for f in files[1:]]
    return "\n".join(out)


def fmt(run, metric):
    return compare.fmt_value(median(run.samples), metric) if run and run.samples and not run.error else "-"


def wide_rows(files, names, results, metric):
    rows = []
    for i, n in enumerate(names):
        runs = [f.runs.get(n) for f in files]
        meds = [median(r.samples) if r and r.samples and not r.error else math.nan for r in runs]
        known = [m for m in meds if m == m]
        best = (max if metric in compare.HIGHER_IS_BETTER else min)(known) if known else math.nan
        row = [n]
        for j, (f, r, m) in enumerate(zip(files, runs, meds)):
            star = "*" if m == best and len(known) > 1 else ""
            if j == 0:
                row.append(fmt(r, metric) + star)
                continue
            v = results[f.label][i]
            sp = fmt_speed(speed(runs[0], r, metric))[0] if runs[0] and r else "-"
            row.append("-" if v.verdict == "absent" else v.note if v.verdict == "skipped" else
                       f"{fmt(r, metric)}{star} ({sp}, {v.verdict})")
        rows.append(row)
    return rows


# ---------------------------------------------------------------- references

def reference_path(hardware, folder=None):
    return os.path.join(folder or REFERENCES, hardware, "reference.json")


def find_reference(f, folder=None):
    """The reference file for the hardware of result `f`, or None."""
    hw = compare.hardware_of(f.context)
    path = reference_path(hw, folder) if hw else None
    return path if path and os.path.isfile(path) else None


def make_reference(paths, folder=None):
    """One reference from recorded runs of one hardware: their process
    samples together (each entry one process), the first run's context.
    Written whole to <folder>/<hardware>/reference.json; returns its path."""
    import json
    docs = [compare.read_json(p) for p in paths]
    files = [compare.load_doc(d, p) for d, p in zip(docs, paths)]
    kinds = {compare.hardware_of(f.context) for f in files}
    if len(kinds) != 1 or "" in kinds:
        raise BadInput(f"--make-reference: the runs must be of one known hardware (they are: {', '.join(sorted(kinds)) or 'unknown'})")
    hw = kinds.pop()
    ref = {"context": dict(docs[0].get("context", {})), "benchmarks": [],
           "cudabench_reference": {"hardware": hw, "runs": [os.path.basename(p) for p in paths],
                                   "machines": sorted({compare.machine_of(f) for f in files}),
                                   "dates": [d.get("context", {}).get("date") for d in docs]}}
    ref["context"]["machine_label"] = f"reference-{hw}"
    k = 0
    for d in docs:
        procs = sorted({b.get("repetition_index", 0) for b in d["benchmarks"]})
        for b in d["benchmarks"]:
            ref["benchmarks"].append(dict(b, repetition_index=k + procs.index(b.get("repetition_index", 0))))
        k += len(procs)
    path = reference_path(hw, folder)
    compare.refuse_inputs_as_outputs([("--make-reference", path)], paths)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    compare.write_whole(path, json.dumps(ref, indent=1) + "\n")
    return path


if __name__ == "__main__":  # a module of compare.py: --help says so
    import sys
    if sys.argv[1:2] in (["-h"], ["--help"]):
        sys.exit(compare.print_usage("machines", __doc__ + "\nUsage: compare.py A.json B.json ... (see compare.py --help)"))
    print("machines: a module of compare.py: run compare.py A.json B.json", file=sys.stderr)
    sys.exit(compare.EXIT_BAD_INPUT)
