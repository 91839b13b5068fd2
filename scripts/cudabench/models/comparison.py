"""A comparison of runs for people and for CI: the table of verdicts, the
summary, the Markdown copy, and the exit code (1 only for a regression)."""
import os
import sys
from collections import Counter

from ..base.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, EXIT_TOOL
from ..base.files import write_whole
from ..base.text import fmt_speed, fmt_value, speed_of, table, visible
from ..results.stats import median
from ..results.context import context_differences
from ..results.verdicts import VERDICTS, inconclusive, shown_median


# The counts beside slower, same and faster, shown when there are any.
OTHER_COUNTS = (("undecided", "undecided"), ("noisy", "noisy"), ("error", "failed"), ("skipped", "skipped"),
                ("only", "only in one"))


def count_words(verdicts, slower):
    """The verdicts counted, in words: `slower` (what a slower row is
    called), the same and faster always, the others when there are any.
    Returns (the words, {verdict: count})."""
    c = Counter(v.verdict for v in verdicts)
    return ([f"{c['slower']} {slower}", f"{c['same']} the same", f"{c['faster']} faster"]
            + [f"{c[k]} {w}" for k, w in OTHER_COUNTS if c[k]]), c


def render(files, names, results, metric, threshold, alpha, markdown, rule=None):
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
    out.append(f"{h}Benchmarks: {what}; speed = the baseline's time / the new one's (below 1x: slower); "
               + (rule or f"a change beyond {bar} with Mann-Whitney p < {alpha:g} is a verdict"))
    if len(files) == 2:
        rows = []
        for v in results[files[1].label]:
            a, b = files[0].runs.get(v.name), files[1].runs.get(v.name)
            row = [v.name, shown_median(a, metric) if a else fmt_value(v.base, metric),
                   shown_median(b, metric) if b else fmt_value(v.new, metric),
                   "-" if v.verdict == "loaded" else fmt_speed(speed_of(v.change))]
            if floored:
                row.append("-" if v.floor != v.floor else f"{100 * v.floor:.1f}%")
            rows.append(row + ["-" if v.p != v.p else f"{v.p:.3g}", f"{v.n_base}/{v.n_new}", v.verdict, v.note])
        out.append(table(["benchmark", files[0].label, files[1].label, "speed"] + (["floor"] if floored else [])
                         + ["p", "samples", "verdict", "note"], rows, markdown))
    else:
        rows = []
        for i, n in enumerate(names):
            base = files[0].runs.get(n)
            row = [n, fmt_value(median(base.samples) if base and base.samples else float("nan"), metric)]
            for f in files[1:]:
                v = results[f.label][i]
                row.append("-" if v.verdict == "absent" else v.note if v.verdict == "skipped" else
                           f"{fmt_value(v.new, metric)} ({fmt_speed(speed_of(v.change))}, {v.verdict})")
            rows.append(row)
        out.append(table(["benchmark"] + [f.label + (" (baseline)" if j == 0 else "") for j, f in enumerate(files)],
                         rows, markdown))
    counts = Counter(v.verdict for vs in results.values() for v in vs)
    out.append("")
    out.append("Summary: " + ", ".join(f"{k} {counts[k]}" for k in VERDICTS if k in counts))
    return "\n".join(out)


def report_verdicts(files, names, results, metric="time", threshold=0.05, alpha=0.05, markdown=None, fmt="text",
           report_only=False, tool="compare", report=None, load_line_at="both"):
    """Print the report (and write it as Markdown), return the exit code.
    The code does not depend on anyone reading the output: a closed pipe
    (`| head`) does not hide a regression. report: the renderer (render, or
    machines.render for machines). load_line_at: where the "Inconclusive"
    line goes, "both" (top and bottom) or "end" (a run that printed its own
    at the top: run-bench.sh's)."""
    report = report or render
    line = load_line(files, results)
    slower = [v.name for vs in results.values() for v in vs if v.verdict == "slower"]
    missing = sorted({v.name for vs in results.values() for v in vs if v.verdict == "missing"})
    failed = sorted({v.name for vs in results.values() for v in vs if v.new_failed})
    broke = sorted({v.name for vs in results.values() for v in vs if v.new_broke})
    notes = "\n".join(f"Note: {visible(n)}" for f in files for n in f.notes)  # rows counted once, ...
    top = line if load_line_at == "both" else ""
    framed = lambda text: "\n\n".join(x for x in (top, text, line, notes) if x)
    if markdown:
        write_whole(markdown, framed(report(files, names, results, metric, threshold, alpha, True)) + "\n")
    try:
        print(framed(report(files, names, results, metric, threshold, alpha, fmt == "markdown")), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if report_only:
        return EXIT_INCONCLUSIVE if line else EXIT_OK
    if failed:
        print(f"{tool}: {len(failed)} benchmark(s) failed in the new run (a wrong result): "
              + visible(", ".join(failed[:10])), file=sys.stderr)
    if slower:
        print(f"{tool}: {len(slower)} benchmark(s) slower beyond the bar (p < {alpha:g}): "
              + visible(", ".join(slower[:10])), file=sys.stderr)
    if missing:
        print(f"{tool}: {len(missing)} benchmark(s) of the baseline missing from the new run: "
              + visible(", ".join(missing[:10])), file=sys.stderr)
    if failed or slower or missing:
        return EXIT_REGRESSION
    if broke:
        print(f"{tool}: {len(broke)} benchmark(s) could not run in the new run: " + visible(", ".join(broke[:10])),
              file=sys.stderr)
        return EXIT_TOOL
    return EXIT_INCONCLUSIVE if line else EXIT_OK


def load_line(files, results):
    """The "Inconclusive: ..." line when rows could not be judged for other
    load (verdicts.inconclusive), counted over the rows the later files
    measured (a lone file's own), as the run that took them counts
    (samples.py): one count."""
    measured = files[1:] or files
    rows = {n for f in measured for n, r in f.runs.items() if r.samples and not r.error}
    loaded = {v.name for vs in results.values() for v in vs if v.verdict == "loaded"}
    loaded |= {n for f in measured for n in rows if n in f.runs and f.runs[n].too_loaded}
    loads = [x for f in files for r in f.runs.values() for x in r.loads]
    busiest = sorted((b for f in files for b in f.meta.get("busiest") or [] if isinstance(b, dict)),
                     key=lambda b: -b.get("cpu_s", 0))
    return inconclusive(len(rows | loaded), len(loaded), loads, busiest)
