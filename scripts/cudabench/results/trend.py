"""A history of one machine's gate runs as trends per row: the points
(one per commit: the median of the processes taken without other load),
the noise between commits, and the change points where a row's level
moved and stayed moved (ruptures' PELT on the log medians, with a penalty
from that noise, and kept only where the step is beyond the bar)."""
import math
import os
from dataclasses import dataclass, field

from ..base.errors import BadInput
from ..base.files import read_json
from .gbench import finite_number, load
from .stats import median, robust_sd

BAR = 0.05  # a step smaller than this is not called a change point (the gate's threshold)
RECENT = 3  # a slowdown among the newest this many points fails a machine's check (history.py push --check)


@dataclass
class Point:
    commit: str
    subject: str
    time: float
    value: float  # the median of the clean process samples (nan: none was clean)
    low: float  # the lowest and highest clean process sample
    high: float
    loaded: bool  # too few samples without other load: shown, never used
    seen: float  # the median of all its samples, loaded ones included (how a loaded point is drawn)
    verdict: str  # the gate's verdict against the parent ("" for a first entry)
    label: str = ""  # how it is named: a commit's first 7 hex digits, or a machine run's id


@dataclass
class Trend:
    row: str
    points: list
    noise: float = math.nan  # the log level's spread between commits that did not move it
    changes: list = field(default_factory=list)  # [(index of the first point of the new level, speed)]
    levels: list = field(default_factory=list)  # [(first index, last index, level)] between change points


def check_entry(path):
    """A history entry's `cudabench_history` block and its results (ResultFile); BadInput naming the file otherwise."""
    doc = read_json(path)
    info = doc.get("cudabench_history") if isinstance(doc, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("commit"), str):
        raise BadInput(f"{path}: no 'cudabench_history' (written by scripts/ab.py run --history)")
    t = info.get("time", 0)
    if not finite_number(t) or t < 0:
        raise BadInput(f"{path}: cudabench_history.time is {t!r}: expected seconds since 1970")
    vs = info.get("verdicts", {})
    if not isinstance(vs, dict) or not all(isinstance(v, dict) and isinstance(v.get("verdict"), str)
                                           for v in vs.values()):
        raise BadInput(f"{path}: cudabench_history.verdicts: expected {{name: {{verdict, change}}}}")
    if not isinstance(info.get("subject", ""), str):
        raise BadInput(f"{path}: cudabench_history.subject: expected a string")
    return info, load(path)


def load_history(folder, skipped=None):
    """The per-commit files of one machine, oldest first: [(info, ResultFile)];
    BadInput naming the file for anything that is not one (with a list
    `skipped`: its message appended there, and the file left out)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError as e:
        raise BadInput(f"{folder}: cannot read ({e.strerror})")
    out = []
    for n in names:
        try:
            out.append(check_entry(os.path.join(folder, n)))
        except BadInput as e:
            if skipped is None:
                raise
            skipped.append(str(e))
    if not out:
        raise BadInput(f"{folder}: no per-commit JSON files")
    out.sort(key=lambda e: (e[0].get("time", 0), e[0]["commit"]))
    return out


def trends(history, bar=BAR):
    """[Trend] of every row of a machine's history."""
    rows = sorted({n for _, f in history for n, r in f.runs.items() if r.samples and not r.error})
    out = []
    for row in rows:
        pts = []
        for info, f in history:
            r = f.runs.get(row)
            if not r or not r.samples or r.error:
                continue
            c = r.clean().samples
            pts.append(Point(info["commit"], info.get("subject", ""), info.get("time", 0),
                             median(c) if c else math.nan, min(c) if c else math.nan, max(c) if c else math.nan,
                             r.too_loaded, median(r.samples), info.get("verdicts", {}).get(row, {}).get("verdict", ""),
                             str(info.get("run") or info["commit"][:7])))
        out.append(change_points(Trend(row, pts), bar))
    return out


def change_points(trend, bar=BAR):
    """The trend with its noise, levels and change points: PELT (ruptures,
    an L2 cost on the log medians of the points that are not loaded) with
    the penalty 3 log(n) noise^2, the noise being the robust spread of
    consecutive differences / sqrt 2 (one step does not inflate it). A
    change point whose step is within +-bar is dropped and its levels
    joined: the page calls a row moved only where the gate could."""
    used = [i for i, p in enumerate(trend.points) if not p.loaded and p.value == p.value]
    if len(used) < 4:
        trend.levels = [(used[0], used[-1], median([trend.points[i].value for i in used]))] if used else []
        return trend
    import numpy as np
    import ruptures
    y = np.log([trend.points[i].value for i in used])
    diffs = np.diff(y)
    trend.noise = max(robust_sd(list(diffs)) / math.sqrt(2), 1e-4)
    ends = ruptures.Pelt(model="l2", min_size=2, jump=1).fit(y).predict(pen=3 * math.log(len(y)) * trend.noise ** 2)
    bounds, start = [], 0
    for end in ends:
        seg = y[start:end]
        level = float(np.median(seg))
        if bounds and abs(math.exp(level - bounds[-1][2]) - 1) <= bar:
            s0 = bounds.pop()[0]  # too small a step: one level
            bounds.append((s0, end, float(np.median(y[s0:end]))))
        else:
            bounds.append((start, end, level))
        start = end
    trend.levels = [(used[s], used[e - 1], math.exp(lv)) for s, e, lv in bounds]
    trend.changes = [(used[s], math.exp(prev - lv)) for (_, _, prev), (s, _, lv) in zip(bounds, bounds[1:])]
    return trend


def recent_slowdown(trend, recent=RECENT, bar=BAR):
    """(index, speed) of the row's newest change point when it is a
    slowdown (beyond the bar: change_points keeps no smaller step) whose
    new level starts among the newest `recent` points used, and that level
    is also beyond the bar above the median of the 2 x `recent` points
    before it (a return from one fast run is no slowdown; a return to an
    old slow level after a faster spell is); else None."""
    if not trend.changes:
        return None
    i, sp = trend.changes[-1]
    used = [k for k, p in enumerate(trend.points) if not p.loaded and p.value == p.value]
    before = median([trend.points[k].value for k in used if k < i][-2 * recent:])
    slower = sp < 1 and trend.levels[-1][2] > before * (1 + bar)
    return (i, sp) if slower and used.index(i) >= len(used) - recent else None
