"""Verdicts: each benchmark of later files against the baseline's, from
the change of the medians, the noise floor and a Mann-Whitney U test."""
from dataclasses import dataclass

from ..base.errors import BadInput
from ..base.text import fmt_value
from .gbench import COULD_NOT_RUN, HIGHER_IS_BETTER, Run
from .stats import median, min_p_value, noise_floor, the_bar

# The verdicts, as the summary counts them.
VERDICTS = ("faster", "slower", "same", "undecided", "loaded", "noisy", "error", "skipped", "missing", "new", "only")
# "loaded": too few samples were taken without other load to tell anything;
# its median is shown as loaded, never as a speed (inconclusive()).


@dataclass
class Verdict:
    name: str
    verdict: str
    base: float = float("nan")
    new: float = float("nan")
    change: float = float("nan")  # new time / baseline time - 1: + means slower (text.speed_of shows it)
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
    if a.too_loaded or b.too_loaded:
        return Verdict(name, "loaded", median(a.samples), median(b.samples), n_base=len(a.samples),
                       n_new=len(b.samples), note=loaded_note(a, b))
    dropped = bool(a.loaded or b.loaded)
    a, b = a.clean(), b.clean()  # a verdict rests on samples taken without other load alone
    ma, mb = median(a.samples), median(b.samples)
    if ma == 0:
        return Verdict(name, "error", note="baseline median is zero")
    # The change in time's terms whatever the metric: the new time over the
    # old, less 1 (a rate's time is its inverse), so that speed_of is exact.
    change = mb / ma - 1 if metric not in HIGHER_IS_BETTER else (ma / mb - 1 if mb else float("inf"))
    v = Verdict(name, "", ma, mb, change, n_base=len(a.samples), n_new=len(b.samples))
    if pool:
        v.floor = noise_floor(pool, len(a.samples), len(b.samples))
    bar = the_bar(threshold, v.floor)
    if abs(change) <= bar:
        v.verdict = "same"
        if abs(change) > threshold:
            v.note = "within the noise floor"
        return v
    if a.throttled or b.throttled:
        which = [f"{w} {', '.join(sorted(set(r.throttled)))}" for w, r in (("baseline", a), ("new", b)) if r.throttled]
        v.verdict, v.note = "noisy", "GPU throttled: " + "; ".join(which)
        return v
    if len(a.samples) < 2 or len(b.samples) < 2:
        v.verdict, v.note = "noisy", "single repetition: rerun with --benchmark_repetitions"
        return v
    if min_p_value(len(a.samples), len(b.samples)) >= alpha:
        v.verdict = "loaded" if dropped else "noisy"
        v.note = f"{len(a.samples)} vs {len(b.samples)} samples" + (" without other load" if dropped else "") \
            + f" cannot reach p < {alpha}"
        return v
    from scipy.stats import mannwhitneyu
    v.p = float(mannwhitneyu(a.samples, b.samples, alternative="two-sided").pvalue)
    if v.p < alpha:
        v.verdict = "slower" if change > 0 else "faster"
    else:
        v.verdict = "noisy"
    return v


def judge_all(files, metric="time", threshold=0.05, alpha=0.05, name_filter=None, floors=None):
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


ONE_PROCESS = ("{label}: its samples are repetitions inside one process, which share its memory placement, "
               "clocks and neighbours and do not measure how processes differ: the ratio is shown, no verdict "
               "(samples from processes: scripts/samples.py run --bench BENCH --out FILE, twice, "
               "or scripts/ab.py run for two builds)")


def without_process_samples(files, results):
    """No verdict (slower, faster, same or noisy) where a file's samples come
    from one process (gbench.ResultFile.processes): such rows are
    "undecided", their ratio kept, and the first such file's notes say why,
    once."""
    one = [f for f in files if f.processes < 2]
    if not one:
        return
    for vs in results.values():
        for v in vs:
            if v.verdict in ("slower", "faster", "same", "noisy"):
                v.verdict, v.note = "undecided", "one process: no verdict"
    one[0].notes.append(ONE_PROCESS.format(label=one[0].label or one[0].path))


def shown_median(run, metric="time"):
    """A row's median as every table shows it: of the samples a verdict rests
    on (those taken without other load), or, when too few were, of them all,
    marked "(loaded)": never a loaded number shown as a number; "-" for none."""
    if not run or not run.samples or run.error:
        return "-"
    if run.too_loaded:
        return f"{fmt_value(median(run.samples), metric)} (loaded)"
    return fmt_value(median(run.clean().samples), metric)


def loaded_note(*runs):
    """Which side's samples ran beside other load, in words."""
    sides = ("baseline", "new") if len(runs) == 2 else ("this run",)
    return "could not tell: " + "; ".join(f"{w} {len(r.loaded)} of {len(r.samples)} samples beside other load"
                                          for w, r in zip(sides, runs) if r.loaded)


def inconclusive(rows, loaded, loads, busiest):
    """The one line for a run whose rows could not be told for other load,
    at the top and the bottom of its report; "" when none. rows: how many
    rows were judged; loaded: how many of them could not be; loads: the
    share of the CPUs others took, per process; busiest: samples.busiest()."""
    if not loaded:
        return ""
    who = ""
    if busiest:
        top = busiest[0]
        many = f" ({top['processes']} processes)" if top.get("processes", 1) > 1 else ""
        who = f", mostly `{top['name']}`{many}, pid {top['pid']}"
    most = f"up to {100 * max(loads):.0f}% of the CPUs" if loads else "the share unknown"
    return (f"Inconclusive: {loaded} of {rows} rows ran beside other load ({most}{who}); "
            f"rerun on an idle machine.")
