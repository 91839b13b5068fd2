"""A run among the recorded machines of its kind: compare.py --reference.

Machines of one kind differ more than the processes of one machine do, so a
run is judged by where it falls among the machines, not by its processes
against pooled processes (docs/methodology.md). For each row, each recorded
machine gives one level, the log of its median; the run gives its own:

  slower / faster  beyond the prediction interval for one more machine of
                   this kind (stats.machine_bounds: the machines' mean +-
                   t(k-1) times their spread, the spread at least the
                   noise in one machine's median), or leaving its family's
                   level on this machine as no recorded machine does
                   (row_patterns); and beyond the slowest (fastest)
                   recorded machine by more than the threshold
  same             within the recorded machines' range, widened by the
                   threshold
  undecided        beyond the range but inside the interval: how few
                   machines are recorded cannot tell; and with one
                   recorded machine, always (the ratio and its interval
                   are shown, no verdict)
  loaded           fewer than two of the run's samples were taken without
                   other load: its median is shown as loaded, and no speed
"""
import math
from dataclasses import dataclass

from ..base.text import fmt_speed, fmt_value, speed_of, table
from ..results.context import context_keys
from ..results.gbench import HIGHER_IS_BETTER
from ..results.stats import CONFIDENCE, machine_bounds, median, median_se, speed, t_quantile
from ..results.verdicts import Verdict, judge_all, loaded_note
from .references import FACTS, OUTLIER_OK, far_rows, outlier_note, refusal
from .comparison import count_words
from .families import CPU_KEYS, FAMILIES, different_cpu, differs, fact_texts, fact_value, family_of

ADD = "scripts/compare.py --add-machine {run}"
# A verdict on a row: beyond where this share of machines of the kind fall.
# 97.5%, not 95%: some 27 rows are judged at once (the row_patterns test
# shares its level among a family's rows; this one does not, and the
# threshold beyond the slowest machine is what keeps it rarer still).
MACHINE_CONFIDENCE = 0.975
JUDGED = ("same", "slower", "faster", "undecided", "loaded", "noisy")


@dataclass
class KindVerdict(Verdict):
    machines: int = 0  # recorded machines with this row
    low: float = math.nan  # the bounds of a machine of this kind, as speeds against the kind (or the interval)
    high: float = math.nan
    spread: float = math.nan  # the recorded machines' slowest / fastest - 1
    beyond: float = math.nan  # + slower than the slowest recorded machine, - faster than the fastest


def levels(run, metric):
    """log time of each sample (for a throughput, -log: larger is slower)."""
    sign = -1 if metric in HIGHER_IS_BETTER else 1
    return [sign * math.log(x) for x in run.samples]


def judge_kind(whole, machines, f, metric="time", threshold=0.05):
    """(names, {f.label: [KindVerdict]}): every row of `f` among `machines`
    (references.Machine); rows with an error, skipped or on one side only
    keep judge_all's verdict."""
    names, results = judge_all([whole, f], metric, threshold)
    runs = {n: [m.file.runs[n] for m in machines if n in m.file.runs and m.file.runs[n].samples] for n in names}
    patterns = row_patterns(machines, f, names, metric)
    out = []
    for v in results[f.label]:
        b = f.runs.get(v.name)
        if v.verdict in ("error", "skipped", "missing", "new") or not runs[v.name] or not (b and b.samples):
            out.append(KindVerdict(**vars(v)))
            continue
        out.append(among(v.name, runs[v.name], b, metric, threshold, patterns.get(v.name)))
    return names, {f.label: out}


def row_patterns(machines, f, names, metric):
    """{row: (residual, bound)}: how far each row of the run stands from its
    family's level on this machine (the median over the family's rows of
    its distance from the machines' mean), and how far a row may: rows of
    the recorded machines stand from their own machine's level (a two-way
    fit, row + machine + residual, over the rows every machine has) times
    Student's t with (R-1)(k-1) degrees of freedom at MACHINE_CONFIDENCE,
    shared by the R rows judged at once. A machine of the kind is slower or
    faster as a whole; one thread on the two-thread rows is a pattern no
    machine of the kind shows, and two machines can already tell it."""
    out, k = {}, len(machines)
    for fam in FAMILIES if k >= 2 else ():
        rows = [n for n in names if family_of(n) is fam and n in f.runs and f.runs[n].samples and not f.runs[n].error
                and not f.runs[n].too_loaded                and all(n in m.file.runs and m.file.runs[n].samples for m in machines)]
        if len(rows) < 3:
            continue
        x = {n: [median(levels(m.file.runs[n], metric)) for m in machines] for n in rows}
        mu = {n: sum(v) / k for n, v in x.items()}
        level = [sum(x[n][j] - mu[n] for n in rows) / len(rows) for j in range(k)]
        df = (len(rows) - 1) * (k - 1)
        s = math.sqrt(sum((x[n][j] - mu[n] - level[j]) ** 2 for n in rows for j in range(k)) / df)
        d = {n: median(levels(f.runs[n].clean(), metric)) - mu[n] for n in rows}
        shift = median(list(d.values()))
        t = t_quantile(1 - (1 - MACHINE_CONFIDENCE) / (2 * len(rows)), df)
        for n in rows:
            se = median_se(levels(f.runs[n].clean(), metric))
            out[n] = (d[n] - shift, t * math.sqrt(s * s * (1 + 1 / k) + se * se))
    return out


def among(name, recorded, run, metric, threshold, pattern=None):
    """One row's KindVerdict: the run's samples among the recorded machines'
    (one Run each). The machines' spread is taken as at least the noise in
    one machine's median, so machines that happen to agree exactly do not
    make every other machine an outlier. Only the run's samples taken
    without other load count; with fewer than two, the row is "loaded"."""
    if run.too_loaded:
        return KindVerdict(name, "loaded", median([median(r.samples) for r in recorded]), median(run.samples),
                           n_base=sum(len(r.samples) for r in recorded), n_new=len(run.samples),
                           machines=len(recorded), note=loaded_note(run))
    run = run.clean()
    ys = levels(run, metric)
    y = median(ys)
    xs = [median(levels(r, metric)) for r in recorded]
    k = len(xs)
    v = KindVerdict(name, "", math.exp(median(xs)), math.exp(y), math.exp(y - median(xs)) - 1,
                    n_base=sum(len(r.samples) for r in recorded), n_new=len(run.samples), machines=k,
                    spread=math.exp(max(xs) - min(xs)) - 1)
    if metric in HIGHER_IS_BETTER:
        v.base, v.new = 1 / v.base, 1 / v.new
    if k == 1:
        _, v.low, v.high = speed(recorded[0], run, metric)
        v.verdict, v.note = "undecided", "recorded on one machine: no verdict"
        return v
    noise = max(median_se(levels(r, metric)) for r in recorded)
    centre, h = machine_bounds(xs, median_se(ys), noise, MACHINE_CONFIDENCE)
    v.change = math.exp(y - centre) - 1
    v.low, v.high = math.exp(-h), math.exp(h)
    bar = math.log1p(threshold)
    off = 0  # +1 or -1: the row leaves its family's level on this machine beyond what machines of the kind show
    if pattern and abs(pattern[0]) > pattern[1]:
        off = 1 if pattern[0] > 0 else -1
    v.beyond = math.exp(y - max(xs)) - 1 if y > max(xs) else math.exp(y - min(xs)) - 1 if y < min(xs) else 0.0
    if (y > centre + h or off > 0) and y > max(xs) + bar:
        v.verdict = "slower"
        v.note = pattern_note(pattern) if y <= centre + h else ""
    elif (y < centre - h or off < 0) and y < min(xs) - bar:
        v.verdict = "faster"
        v.note = pattern_note(pattern) if y >= centre - h else ""
    elif min(xs) - bar <= y <= max(xs) + bar:
        v.verdict = "same"
    else:
        v.verdict = "undecided"
        v.note = (f"{apart(v.beyond)} {'below the slowest' if v.beyond > 0 else 'above the fastest'} of "
                  f"{k} recorded machines, within what {k} can tell")
    return v


def apart(beyond):
    """How far beyond the slowest (+) or fastest (-) recorded machine, as a
    speed: twice the time is "50%" below, half the time "100%" above."""
    return f"{100 * abs(1 - 1 / (1 + beyond)):.0f}%"


def pattern_note(pattern):
    return (f"{100 * (math.exp(abs(pattern[0])) - 1):.0f}% {'slower' if pattern[0] > 0 else 'faster'} than its "
            f"family's level on this machine: a pattern no recorded machine shows")


def bound(x):
    return "<0.1x" if x < 0.1 else ">10x" if x > 10 else fmt_speed(x)


def row_cells(v, metric):
    sp = fmt_speed(speed_of(v.change))
    bounds = "-" if v.low != v.low else f"{bound(v.low)} .. {bound(v.high)}"
    spread = "-" if v.spread != v.spread or v.machines < 2 else f"{100 * v.spread:.0f}%"
    new = fmt_value(v.new, metric) + (" (loaded)" if v.verdict == "loaded" else "")
    return [v.name, fmt_value(v.base, metric), new, sp, v.machines or "-", spread, bounds,
            v.verdict, v.note]


def fact_lines(machines, f):
    """[[fact, each machine's value, this run's]] for the facts that are not the same everywhere."""
    rows = []
    for k in (k for k in context_keys() if k in FACTS):
        vals = [m.facts.get(k) for m in machines] + [f.context.get(k)]
        if any(v is not None for v in vals) and len({str(v) for v in vals}) > 1:
            rows.append([k] + fact_texts(k, vals))
    return rows


def causes(fam, machines, f):
    """The family's facts (likeliest first) in which the run differs from every recorded machine."""
    cpu = different_cpu(fam, f, [m.file for m in machines])
    out = [cpu] if cpu else []
    for key, label in fam.facts:
        if cpu and key in CPU_KEYS:
            continue
        mine = fact_value(f, key)
        known = [t for t in (fact_value(m.file, key) for m in machines) if t is not None]
        if mine is not None and known and all(differs(key, t, mine) for t in known):
            texts = fact_texts(key, [mine] + known)
            out.append(f"{label} {texts[0]} against {', '.join(sorted(set(texts[1:])))}")
    return out


def family_line(fam, vs, machines, f):
    """What the run's rows of one family say, in words a user can act on."""
    k = max(v.machines for v in vs)
    spread = max((v.spread for v in vs if v.machines >= 2 and v.spread == v.spread), default=math.nan)
    sp = median([speed_of(v.change) for v in vs if v.change == v.change] or [math.nan])
    differ = f"they differ by up to {100 * spread:.0f}%" if spread == spread else ""
    slower = [v for v in vs if v.verdict == "slower"]
    faster = [v for v in vs if v.verdict == "faster"]
    undecided = [v for v in vs if v.verdict == "undecided" and v.beyond == v.beyond]  # not the one-machine rows
    loaded = [v for v in vs if v.verdict == "loaded"]
    if k == 1 and sp == sp:
        return (f"{fam.label}: {fmt_speed(sp)} the one recorded machine of this kind; no verdict, since one machine "
                f"cannot show how machines of this kind differ")
    if slower:
        why = causes(fam, machines, f)
        return (f"{fam.label} {apart(median([v.beyond for v in slower]))} below the slowest of {k} recorded "
                f"machines ({len(slower)} of {len(vs)} rows; {differ}): likeliest cause " + ("; ".join(why) if why else
                "none recorded (every fact is one a recorded machine has): look at load, or at the machine's host"))
    if faster:
        return f"{fam.label} {apart(median([v.beyond for v in faster]))} above the fastest of {k} recorded " \
               f"machines ({len(faster)} of {len(vs)} rows; {differ})"
    if undecided:
        widest = max((v.beyond for v in undecided), key=lambda b: abs(1 - 1 / (1 + b)))
        return (f"{fam.label}: {len(undecided)} of {len(vs)} rows beyond the {k} recorded machines' range (by up "
                f"to {apart(widest)}), but {k} machines cannot tell whether that is more than machines of this "
                f"kind differ ({differ}): could not tell")
    if loaded:
        return (f"{fam.label}: {len(loaded)} of {len(vs)} rows sampled beside other load: could not tell; "
                f"rerun on an idle machine")
    return f"{fam.label}: as fast as the {k} recorded machines of this kind ({differ})"


def render(machines, hw, f, results, metric, markdown, run_path, kept=""):
    """The report: the machines and their facts, the rows, a line per family, the counts."""
    h = "### " if markdown else ""
    vs = results[f.label]
    out = [f"{h}{f.label} among the {len(machines)} recorded machine(s) of {hw}",
           ", ".join(f"{m.name} (recorded {m.recorded[:10]}{', an outlier added with ' + OUTLIER_OK if m.outlier else ''})"
                     for m in machines), ""]
    facts = fact_lines(machines, f)
    if facts:
        out += [table(["fact"] + [m.name for m in machines] + [f.label], facts, markdown), ""]
    what = "time" if metric == "time" else metric
    out += [f"{h}Rows: {what}; speed = the recorded machines' geometric mean time / this machine's (below 1x: slower); bounds: where "
            f"{100 * MACHINE_CONFIDENCE:g}% of machines of this kind fall (with one machine: the {100 * CONFIDENCE:g}% "
            f"interval of this run against it)"]
    out.append(table(["benchmark", "recorded machines", f.label, "speed", "machines", "they differ", "bounds",
                      "verdict", "note"], [row_cells(v, metric) for v in vs], markdown))
    out += ["", f"{h}What this says"]
    for fam in FAMILIES:
        rows = [v for v in vs if family_of(v.name) is fam and v.verdict in JUDGED]
        if rows:
            out.append(("- " if markdown else "  ") + family_line(fam, rows, machines, f))
    out += ["", counts_line(f, vs, machines, run_path, kept)]
    return "\n".join(out)


def counts_line(f, vs, machines, run_path, kept):
    """The counts, and the offer to add this run: never for a run --add-machine would refuse."""
    k = len(machines)
    words, c = count_words(vs, "rows slower than machines of this kind")
    line = f"{f.label} against {k} recorded machine(s) of its kind: " + ", ".join(words)
    clean = not any(c[x] for x in ("slower", "faster", "loaded", "noisy", "error"))
    refused, far = refusal(f), far_rows(f, machines)
    if kept:
        line += f"\nthis run is in the reference already, as machine {kept}"
    elif refused:
        line += f"\nnot for the reference: {refused}"
    elif far:
        line += (f"\n{outlier_note(far, k)}: if this machine is right, add it with "
                 f"{ADD.format(run=run_path)} {OUTLIER_OK}")
    elif k == 1 or clean:
        why = "one machine of this kind is recorded" if k == 1 else "not an outlier, on a clean run"
        line += f"\n{why}: add this one to the reference with {ADD.format(run=run_path)}"
    return line
