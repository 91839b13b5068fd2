"""The sequential gate's decisions (scripts/ab.py run, docs/regression-tracking.md):
interleaved processes are looked at after GATE_FIRST a side and then each
time their number has grown by GATE_GROWTH, until every row is decided,
GATE_PROCESSES a side, or the time budget; at each look every open row's
interval of the change is held against its bar."""
import math
from dataclasses import dataclass
from statistics import NormalDist, stdev

from ..base.text import fmt_speed, speed_of
from .gbench import Run
from .stats import noise_floor, speed, the_bar

GATE_FIRST = 6
GATE_GROWTH = 1.35
GATE_PROCESSES = 40
GATE_SECONDS = 150  # what CI gave the fixed 15 + 15 processes of the gate before (~2 minutes)
# A row still open at the end with this share of a side's processes beside
# other load is "loaded" (could not tell for the load), not "undecided".
LOADED_SHARE = 0.25


def looks(most, first=GATE_FIRST):
    """Processes per side at each look: first, then growing by GATE_GROWTH, up to most."""
    out = [min(first, most)]
    while out[-1] < most:
        out.append(min(most, max(out[-1] + 1, math.ceil(out[-1] * GATE_GROWTH))))
    return out


def bars(names, floors, threshold):
    """{row: the change that counts}: the threshold, or the row's noise floor
    at GATE_PROCESSES vs GATE_PROCESSES when that is higher (the most this
    machine can resolve for it)."""
    out = {}
    for n in names:
        fl = noise_floor(floors[n], GATE_PROCESSES, GATE_PROCESSES) if floors and n in floors else float("nan")
        out[n] = the_bar(threshold, fl)
    return out


def rule(args):
    return (f"sequential: slower or faster when the interval of the change excludes zero and the change is beyond "
            f"the bar (max({100 * args.threshold:g}%, the noise floor)); same when the interval lies within the bar; "
            f"undecided otherwise, at the end (alpha {args.alpha:g} over all looks)")


def sequential_verdict(a: Run, b: Run, bar, confidence, metric="time"):
    """(verdict, low, high) of b against a at one look of a sequential run:
    the interval of the change (+ slower; Hodges-Lehmann at `confidence`)
    decides. "slower" when it is above zero and the change beyond `bar`;
    "faster" the mirror; "same" when it lies inside (-bar, bar); "" while
    it straddles the bar (more processes can tell)."""
    sp, lo, hi = speed(a, b, metric, confidence)
    if lo != lo:
        return "", lo, hi
    change, low, high = 1 / sp - 1, 1 / hi - 1, 1 / lo - 1
    if low > 0 and change > bar:
        return "slower", low, high
    if high < 0 and change < -bar:
        return "faster", low, high
    if -bar < low and high < bar:
        return "same", low, high
    return "", low, high


def look(files, verdicts, bar, confidence, n, decided):
    """Decide what this look can: decided[row] = (verdict, low, high, n,
    bar); returns the rows still open."""
    left = []
    for v in verdicts:
        if v.name in decided or v.verdict not in ("same", "slower", "faster", "noisy", "loaded"):
            continue
        a, b = files[0].runs[v.name], files[1].runs[v.name]
        # Samples taken beside other load are left out: the gate decides on the others alone.
        verdict, low, high = sequential_verdict(a.clean(), b.clean(), bar[v.name], confidence)
        if verdict:
            decided[v.name] = (verdict, low, high, n, bar[v.name])
        else:
            left.append(v.name)
            v.interval = (low, high, bar[v.name])
            v.loaded_share = max(len(r.loaded) / len(r.samples) for r in (a, b))
    return left


def speeds(low, high):
    """A change's interval as the speeds it spans: "0.91x .. 0.95x"."""
    return f"{fmt_speed(speed_of(high))} .. {fmt_speed(speed_of(low))}"


def open_for_load(v):
    """Whether an open row is open because of load: a quarter or more of a
    side's processes ran beside it, or those left gave no interval."""
    if not hasattr(v, "interval") or not v.loaded_share:
        return False
    no_interval = v.interval[0] != v.interval[0]
    return v.loaded_share >= LOADED_SHARE or no_interval


@dataclass
class Budget:
    """What the run could spend: seconds per pair of processes (measured),
    the time budget and the most processes a side, at the run's confidence."""
    pair_s: float
    seconds: float
    most: int
    confidence: float
    wanted: float = 0.05  # the change the budget is sized for


POWER = 0.8  # the sizing's: a change of that size is told 4 times in 5


def sizing(a: Run, b: Run, n, budget: Budget):
    """Kalibera and Jones's sizing at the level of variation that counts
    here, the process (a sample is one process's median, so the variation
    between its repetitions is already averaged in, and more repetitions
    cannot remove the variation between processes). sd, the standard
    deviation of the log process medians measured in this run, pooled over
    the sides (not a robust one: a bimodal machine's MAD can be 0), gives
    the interval's half-width at k processes a side, z sd sqrt(2 / k)
    (Hodges-Lehmann's is ~1.02x the mean's); a change d is told with
    POWER when d = (z + z_power) sd sqrt(2 / k). Returns (the smallest
    change told so within the processes the budget allows; the processes a
    side and the seconds that `wanted` would need), or None without
    samples to size from."""
    logs = [[math.log(x) for x in side.clean().samples] for side in (a, b)]
    if min(len(x) for x in logs) < 2:
        return None
    sd = math.sqrt(sum(stdev(x) ** 2 for x in logs) / 2)
    z = 1.02 * (NormalDist().inv_cdf(0.5 + budget.confidence / 2) + NormalDist().inv_cdf(POWER))
    k = max(n, min(budget.most, int(budget.seconds / budget.pair_s))) if budget.pair_s > 0 else n
    need = max(2, math.ceil(2 * (z * sd / math.log(1 + budget.wanted)) ** 2))
    return math.exp(z * sd * math.sqrt(2 / k)) - 1, need, need * budget.pair_s


def sizing_note(size, budget):
    smallest, need, secs = size
    return (f"this runner could tell a change of {100 * smallest:.0f}% or more within the budget "
            f"({budget.seconds:g} s, at most {budget.most} processes a side; {100 * POWER:.0f}% of the time); "
            f"{100 * budget.wanted:g}% would need about {need} processes a side, {secs:.0f} s")


def headline(verdicts, most=GATE_PROCESSES):
    """The line above an ab report with rows it could not tell: the
    smallest change the runner could tell for any of them, and what the
    wanted change would need for all (beyond `most` processes a side, no
    budget can buy it: the runner's noise must come down)."""
    sized = [v for v in verdicts if v.verdict == "undecided" and getattr(v, "size", None)]
    if not sized:
        return ""
    best = min(sized, key=lambda v: v.size[0])
    worst = max(sized, key=lambda v: v.size[2])
    more = ("(--seconds, or the action's budget input)" if worst.size[1] <= most else
            f"(more than the gate's {most} processes a side: a longer budget cannot buy it; a quieter runner can)")
    return (f"Could not tell {len(sized)} row(s) within the budget: at the noise measured, the smallest change "
            f"this runner could tell is {100 * best.size[0]:.0f}% ({best.name.split('/real_time')[0]}); telling "
            f"5% for every row would need about {worst.size[1]} processes a side, {worst.size[2]:.0f} s {more}.")


def settle(v, decided, n, why, threshold, budget=None, runs=None):
    """The final verdict of one row: what its look decided, or undecided
    with why and the budget's sizing (runs: the row's (a, b)); a row whose
    noise floor sets its bar says that it cannot gate a smaller change on
    this machine."""
    floor = lambda bar: bar if bar > threshold else float("nan")  # shown only where a measured floor set the bar
    if v.name in decided:
        verdict, low, high, at, bar = decided[v.name]
        v.verdict, v.floor = verdict, floor(bar)
        v.note = f"speed {speeds(low, high)} after {at} vs {at} processes"
    elif open_for_load(v):
        v.verdict, v.floor, v.change = "loaded", floor(v.interval[2]), float("nan")  # no speed from loaded medians
        v.note = (f"could not tell: {100 * v.loaded_share:.0f}% of a side's {n} processes ran beside other load "
                  f"({why})")
        return
    elif hasattr(v, "interval"):
        low, high, bar = v.interval
        v.verdict, v.floor = "undecided", floor(bar)
        v.note = (f"could not tell: speed {speeds(low, high)} after {n} vs {n} processes straddles the "
                  f"{100 * bar:.1f}% bar ({fmt_speed(speed_of(bar))} / {fmt_speed(speed_of(-bar))}) ({why})")
        v.size = sizing(*runs, n, budget) if budget and runs else None
        if v.size:
            v.note += "; " + sizing_note(v.size, budget)
    else:
        return
    if v.floor > threshold:
        v.note += f"; cannot gate a change under {100 * v.floor:.0f}% here (its noise floor at {GATE_PROCESSES} vs {GATE_PROCESSES} processes)"
