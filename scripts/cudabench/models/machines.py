"""Machines compared: compare.py's report when its files come from different
machines (their machine labels differ); a run against the reference for its
hardware is models/kind.py's. Read by compare.py; docs/comparing-machines.md.

Every row gets the speed of each machine against the baseline (baseline time
/ its time: 0.5x is half as fast) with a distribution-free 95% interval (the
Hodges-Lehmann interval of the log ratio, from all pairs of process
samples), the Mann-Whitney verdict of compare.judge held to that interval
(clear_of_the_bar), and rows that one side lacks are listed with the reason
its file gives (no GPU, a failed check).
Below the table, each family of slower rows is given the recorded facts
that differ and bear on it, in FAMILIES' order: the likeliest cause first.
"""
import math

from ..base.text import fmt_speed, speed_of, table
from ..results.gbench import HIGHER_IS_BETTER, compile_filter
from ..results.stats import CONFIDENCE, median, speed, the_bar
from ..results.context import context_differences
from ..results.verdicts import shown_median
from .families import (CPU_KEYS, FAMILIES, GPU_ROWS, different_cpu, differs, fact_texts, fact_value,
                       family_of)
from .comparison import count_words


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
    if filt and not compile_filter(str(filt), f"{f.label}: cudabench_samples.filter").search(name):
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


def clear_of_the_bar(results, files, metric, threshold):
    """A machine's verdict needs its whole interval beyond the bar. Two
    machines' runs are taken at different times, never interleaved, so
    the rank test sees their processes' spread but not what drifted
    between the runs: a 10% change with p 0.04 and an interval reaching
    1.00x is seen between two runs of the same code on a busy VM. Such a
    row is "noisy", with its interval."""
    base = files[0]
    for f in files[1:]:
        for v in results[f.label]:
            if v.verdict not in ("slower", "faster"):
                continue
            bar = the_bar(threshold, v.floor)
            _, lo, hi = speed(base.runs[v.name].clean(), f.runs[v.name].clean(), metric)
            clear = hi < 1 / (1 + bar) if v.verdict == "slower" else lo > 1 / (1 - bar)
            if not clear:  # a nan interval (too few processes) is not clear either
                reach = "too few processes for an interval" if lo != lo else \
                    f"its 95% interval {fmt_interval((1, lo, hi))[1]} reaches within the {100 * bar:g}% bar"
                v.verdict, v.note = "noisy", f"{reach}: more processes, or an interleaved run, can tell"


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
        sp = median([speed_of(v.change) for v in rows])
        cpu = different_cpu(fam, other, [base])
        diffs = [cpu] * bool(cpu) + [
            "{} {} against {}".format(label, *fact_texts(k, [fact_value(other, k), fact_value(base, k)]))
            for k, label in fam.facts if differs(k, fact_value(base, k), fact_value(other, k))
            and not (cpu and k in CPU_KEYS)]
        why = "; ".join(diffs) if diffs else "no recorded fact differs (the same hardware and stack: rerun, or look at load)"
        out.append(f"{fam.label} {fmt_speed(sp)} ({len(rows)} of {total} slower): {why}")
    return out


def counts_line(other, base, verdicts):
    words, _ = count_words(verdicts, "rows slower beyond the bar")
    return f"{other.label} against {base.label}: " + ", ".join(words)


def fmt_interval(sp):
    """(point, low, high) as ("0.93x", "0.90x .. 0.96x")."""
    point, lo, hi = sp
    if point != point:
        return "-", "-"
    return fmt_speed(point), "-" if lo != lo else f"{fmt_speed(lo)} .. {fmt_speed(hi)}"


def render(files, names, results, metric, threshold, alpha, markdown):
    """The report for machines: what differs, the rows, the causes, the counts."""
    h = "### " if markdown else ""
    base = files[0]
    out = [f"{h}What differs between the machines"]
    diffs = context_differences(files)
    out.append(table(["context"] + [f.label for f in files], [[k] + v for k, v in diffs], markdown)
               if diffs else "nothing in the recorded context")
    what = "time" if metric == "time" else metric
    out += ["", f"{h}Rows: {what}; speed = {base.label}'s time / the machine's (below 1x: slower); a change > {100 * threshold:g}% "
                f"with Mann-Whitney p < {alpha:g} and the whole {100 * CONFIDENCE:g}% interval of the speed beyond it is a verdict"]
    if len(files) == 2:
        rows = []
        for v in results[files[1].label]:
            a, b = base.runs.get(v.name), files[1].runs.get(v.name)
            sp, iv = fmt_interval(speed(a.clean(), b.clean(), metric)) if a and b else ("-", "-")
            rows.append([v.name, fmt(a, metric), fmt(b, metric), sp, iv, "-" if v.p != v.p else f"{v.p:.3g}",
                         f"{v.n_base}/{v.n_new}", v.verdict, v.note])
        out.append(table(["benchmark", base.label, files[1].label, "speed", "95% interval", "p", "samples",
                                  "verdict", "note"], rows, markdown))
    else:
        out.append(table(["benchmark"] + [f.label + (" (baseline)" if i == 0 else "")
                                                  for i, f in enumerate(files)],
                                 wide_rows(files, names, results, metric), markdown))
        out.append("* the fastest machine of the row")
    for f in files[1:]:
        out += ["", f"{h}Why {f.label} differs"]
        lines = causes(base, f, results[f.label])
        out += [("- " if markdown else "  ") + x for x in lines] or ["no family of rows is slower"]
    out.append("")
    out += [counts_line(f, base, results[f.label]) for f in files[1:]]
    return "\n".join(out)


def fmt(run, metric):
    return shown_median(run, metric)


def wide_rows(files, names, results, metric):
    rows = []
    for i, n in enumerate(names):
        runs = [f.runs.get(n) for f in files]
        meds = [median(r.samples) if r and r.samples and not r.error else math.nan for r in runs]
        known = [m for m in meds if m == m]
        best = (max if metric in HIGHER_IS_BETTER else min)(known) if known else math.nan
        row = [n]
        for j, (f, r, m) in enumerate(zip(files, runs, meds)):
            star = "*" if m == best and len(known) > 1 else ""
            if j == 0:
                row.append(fmt(r, metric) + star)
                continue
            v = results[f.label][i]
            sp = fmt_interval(speed(runs[0].clean(), r.clean(), metric))[0] if runs[0] and r else "-"
            row.append("-" if v.verdict == "absent" else v.note if v.verdict == "skipped" else
                       f"{fmt(r, metric)}{star} ({sp}, {v.verdict})")
        rows.append(row)
    return rows
