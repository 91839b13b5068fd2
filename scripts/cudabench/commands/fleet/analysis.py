"""Each group's statistics: the machines slower or faster than their group,
bimodal splits, wrong results, what is missing, and the causes."""
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from statistics import NormalDist

from ...results.gbench import COULD_NOT_RUN
from ...results.stats import median
from .machines import NO_STATUS
from .causes import differs, evidence, features, fmt_val, typical


MIN_MACHINES = 3  # fewer than this: ratios are shown, nobody is named
ROBUST_Z = 3.5  # the least robust z for a machine to be named
FAMILY_ALPHA = 0.005  # the chance that a fleet with nothing off names somebody


@dataclass
class BenchStats:
    name: str
    fleet_median: float
    values: dict  # machine key -> median
    ratios: dict  # machine key -> value / fleet median
    slower: list = field(default_factory=list)
    faster: list = field(default_factory=list)
    split: tuple = None  # (slow keys, fast keys, slow ratio, fast ratio) when bimodal


def z_bar(tests):
    """The robust z a machine must pass to be named: ROBUST_Z, or more when
    a group makes many tests (machines x benchmarks), so that a fleet with
    nothing off names nobody in about 99 of 100 runs (Bonferroni)."""
    return max(ROBUST_Z, NormalDist().inv_cdf(1 - FAMILY_ALPHA / max(tests, 1)))


def within_noise(samples):
    """The standard error of one machine's median, from the noise of the
    process samples: the median over machines of each one's variance of
    log samples (so one erratic machine, a throttling GPU, cannot inflate
    the scale it is judged on), corrected to a variance (the median of a
    chi-square over its k degrees of freedom is about (1 - 2/9k)^3 of its
    mean), times 1.2533 / sqrt(n) for a median of n. The same for 16
    machines or 3; 0 without repeated samples."""
    variances, ns = [], []
    for xs in samples.values():
        if len(xs) >= 2:
            logs = [math.log(x) for x in xs]
            mean = sum(logs) / len(logs)
            variances.append(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
            ns.append(len(xs))
    if not variances:
        return 0.0
    k = median(ns) - 1
    return 1.2533 * math.sqrt(median(variances) / (1 - 2 / (9 * k)) ** 3) / math.sqrt(median(ns))


def bench_stats(name, samples, threshold, zc):
    """One benchmark over a group: {machine: process samples (s)}."""
    values = {k: median(xs) for k, xs in samples.items()}
    fm = median(list(values.values()))
    ratios = {k: v / fm for k, v in values.items()}
    s = BenchStats(name, fm, values, ratios)
    if len(values) < MIN_MACHINES:
        return s
    logs = {k: math.log(r) for k, r in ratios.items()}
    bar = math.log1p(threshold)
    sides = [list(logs)]
    noise = within_noise(samples)
    if len(values) >= 4:
        # Two real sides, not one or two outliers (those are named one by
        # one): the widest gap that leaves a quarter of the group, and at
        # least 2 machines, on each side.
        order = sorted(logs, key=logs.get)
        least = max(2, math.ceil(len(order) / 4))
        gaps = [(logs[order[i + 1]] - logs[order[i]], i) for i in range(least - 1, len(order) - least)]
        if gaps:
            gap, i = max(gaps)
            fast, slow = order[:i + 1], order[i + 1:]
            # The sides' medians must also differ beyond what the machines'
            # own noise gives two groups of that size (at the same z bar).
            apart = median([logs[k] for k in slow]) - median([logs[k] for k in fast])
            if gap > bar and apart > zc * 1.2533 * noise * math.sqrt(1 / len(fast) + 1 / len(slow)):
                s.split = (sorted(slow), sorted(fast), median([ratios[k] for k in slow]),
                           median([ratios[k] for k in fast]))
                sides = [fast, slow]
    # Outliers against their own side (a machine far beyond a bimodal
    # group's slow side is still named), beyond the threshold against the
    # whole group, on a scale of the larger of the side's spread and the
    # machines' own noise.
    for side in sides:
        mid = median([logs[k] for k in side])
        # The median it is measured from is noisy too: pi/2n of a machine's variance.
        sigma = max(1.4826 * median([abs(logs[k] - mid) for k in side]),
                    noise * math.sqrt(1 + math.pi / (2 * len(side))))
        for k in side:
            x = logs[k]
            z = (x - mid) / sigma if sigma > 0 else math.copysign(math.inf, x - mid) if x != mid else 0.0
            if x > bar and z > zc:
                s.slower.append(k)
            elif x < -bar and z < -zc:
                s.faster.append(k)
    return s


def short(name):
    return re.sub(r"/(real_time|manual_time|process_time)$", "", name)


def rank_causes(m, group, off, measured):
    """[(score, text)] of what differs on m from its group, likely causes
    first: a feature's score is how well the benchmarks it can affect
    match the slow ones (precision x recall)."""
    likely, also = [], []
    for f in features():
        v = f.get(m)
        typ = typical(f, group)
        if not differs(f, v, typ):
            continue
        scope = {n for n in measured if f.scope(m, n)}
        hit = scope & set(off)
        text = evidence(f, v, typ, len(group))
        if not hit:
            also.append(text)
            continue
        score = (len(hit) / len(scope)) * (len(hit) / len(off)) if off else 0
        (likely if score >= 0.5 or f.kind == "flag" else also).append((score, text))
    throttled = {n: sorted(set(m.result.runs[n].throttled)) for n in off if m.result.runs[n].throttled}
    if throttled:
        reasons = sorted({r for rs in throttled.values() for r in rs})
        likely.append((2.0, f"the GPU throttled ({', '.join(reasons)}) in {len(throttled)} of the {len(off)} "
                            "slow benchmarks"))
    likely.sort(key=lambda x: -x[0])
    return [t for _, t in likely], also


def separating(group, slow, fast):
    """Features whose values on the slow side of a split never occur on the fast side."""
    by = {m.key: m for m in group}
    out = []
    for f in features():
        if f.kind == "flag":
            vs = [f.get(by[k]) for k in slow]
            vf = [f.get(by[k]) for k in fast]
            if all(v is not None for v in vs) and all(v is None for v in vf):
                out.append(f"{f.label} on every slow machine, on no fast one")
            continue
        vs = [f.get(by[k]) for k in slow]
        vf = [f.get(by[k]) for k in fast]
        if any(v is None for v in vs + vf):
            continue
        if f.kind == "num":
            tol = (lambda a, b: a - b > f.abs_tol) if f.abs_tol else (lambda a, b: a > b * (1 + f.tol))
            if tol(min(vf), max(vs)) or tol(min(vs), max(vf)):
                out.append(f"{f.label}: {fmt_val(f, median(vs))} on the slow side, {fmt_val(f, median(vf))} "
                           "on the fast side (medians)")
        elif not set(vs) & set(vf):
            show = lambda xs: ", ".join(f"{v} ({c})" for v, c in Counter(xs).most_common())
            out.append(f"{f.label}: {show(vs)} on the slow side; {show(vf)} on the fast side")
    return out


def analyse(meta, machines, lost, threshold):
    """The findings as plain data (what fleet.json holds and fleet.md shows);
    lost: the run's files that could not be used (load_run)."""
    findings = {"groups": [], "off": [], "faster": [], "splits": [], "wrong": [], "incomplete": [], "unreadable": lost}
    groups = {}
    for m in machines:
        groups.setdefault(m.group, []).append(m)
    for gname in sorted(groups):
        analyse_group(gname, sorted(groups[gname], key=lambda m: (m.host, m.unit)), threshold, findings)
    for m in sorted(machines, key=lambda m: m.key):
        failures(m, findings)
    findings["incomplete"] += unmeasured_nodes(meta, machines, lost)
    findings["incomplete"] += gpus_short_of_gres(meta, machines)
    findings["incomplete"] += one_gpu_twice(machines)
    findings["incomplete"] += missing_tasks(meta, machines, lost)
    return findings


def group_stats(ms, threshold):
    """(every benchmark name the group's machines measured, first seen first;
    the BenchStats of each), over machines with results."""
    names = []
    for m in ms:
        names += [n for n in m.result.runs if n not in names]
    stats = []
    zc = z_bar(len(ms) * len(names))
    for n in names:
        samples = {m.key: m.result.runs[n].samples for m in ms if n in m.medians}
        if samples:
            stats.append(bench_stats(n, samples, threshold, zc))
    return names, stats


def analyse_group(gname, ms, threshold, findings):
    """One group: its benchmarks, who lacks one, who is off or faster, and its bimodal splits."""
    with_data = [m for m in ms if m.medians]
    names, stats = group_stats(with_data, threshold)
    for m in with_data:
        lacking = [n for n in names if n not in m.result.runs]
        if lacking:
            findings["incomplete"].append({"machine": m.key, "error": "no result for "
                                           + names_list(short(n) for n in lacking)
                                           + ", which others in its group have"})
    findings["groups"].append({"name": gname, "machines": [m.key for m in ms], "benchmarks": stats,
                               "note": "" if len(with_data) >= MIN_MACHINES else
                               f"{len(with_data)} machine(s) with results: at least {MIN_MACHINES} are needed "
                               "to name an outlier"})
    for m in with_data:
        off = [s.name for s in stats if m.key in s.slower]
        fast = [s.name for s in stats if m.key in s.faster]
        measured = [s.name for s in stats if m.key in s.ratios]
        if off:
            likely, also = rank_causes(m, with_data, off, measured)
            findings["off"].append({"machine": m.key, "group": gname, "benchmarks": off,
                                    "ratios": {n: s.ratios[m.key] for s in stats for n in [s.name] if n in off},
                                    "likely": likely, "also": also})
        if fast:
            findings["faster"].append({"machine": m.key, "group": gname, "benchmarks": fast,
                                       "ratios": {s.name: s.ratios[m.key] for s in stats if s.name in fast}})
    findings["splits"] += bimodal_splits(gname, stats, with_data)


def bimodal_splits(gname, stats, group):
    """The group's bimodal benchmarks, one finding per pair of sides, with what separates the sides."""
    splits = {}
    for s in stats:
        if s.split:
            splits.setdefault((tuple(s.split[0]), tuple(s.split[1])), []).append(s)
    return [{"group": gname, "slow": list(slow), "fast": list(fast), "benchmarks": [s.name for s in ss],
             "slow_ratio": median([s.split[2] for s in ss]), "fast_ratio": median([s.split[3] for s in ss]),
             "separating": separating(group, slow, fast)} for (slow, fast), ss in splits.items()]


def failures(m, findings):
    """A machine's failed benchmarks and processes (wrong: a failed check,
    exit 1; incomplete: could not run, another exit code, or no results
    when no status or unreadable file says why)."""
    for n, e in sorted(m.errors.items()):
        (findings["incomplete"] if e.startswith(COULD_NOT_RUN) else findings["wrong"]).append(
            {"machine": m.key, "benchmark": n, "error": e})
    said = any(u["machine"] == m.key for u in findings["unreadable"])  # something says why it has no results
    for st in m.status:
        if st.get("error"):
            findings["incomplete"].append({"machine": m.key, "error": st["error"]})
            said = True
            continue
        for i, p in enumerate(st.get("processes", []) or []):
            rc = p.get("exit_code") if isinstance(p, dict) else None
            said = said or rc not in (0, None)
            if rc == 1 and not m.errors:
                findings["wrong"].append({"machine": m.key, "benchmark": f"process {i + 1}",
                                          "error": p.get("error") or "exit 1"})
            elif rc not in (0, 1):
                findings["incomplete"].append({"machine": m.key, "error": f"process {i + 1} exited {rc}: "
                                               + (p.get("error") or "no message")})
    if not m.result and not said:
        findings["incomplete"].append({"machine": m.key, "error": "no results"})


def unmeasured_nodes(meta, machines, lost):
    """Nodes Slurm listed that left nothing in the run folder (not even a file that cannot be read)."""
    hosts = {m.host for m in machines} | {u["file"].split(os.sep)[0] for u in lost}
    return [{"machine": node, "error": "no task ran on this node (Slurm placed two tasks on another node, or this "
             "one was busy or went away)"}
            for node in meta.get("expected_nodes", []) or [] if isinstance(node, str) and node not in hosts]


def gpus_short_of_gres(meta, machines):
    """Every GPU the nodes' gres list, measured: a node whose task saw fewer
    (a broken GPU, or two per-GPU tasks on one GPU) is named."""
    gres, tasks = meta.get("expected_gpus"), meta.get("tasks")
    if not isinstance(gres, dict) or (meta.get("mode") == "gpu" and tasks != sum(
            n for n in gres.values() if isinstance(n, int))):
        return []
    hosts = {m.host for m in machines}
    out = []
    for node, n in sorted(gres.items()):
        if not isinstance(n, int) or node not in hosts:
            continue
        done = {m.unit for m in machines if m.host == node and m.unit.startswith("gpu") and m.medians}
        if len(done) < n:
            out.append({"machine": node, "error": f"{len(done)} of its {n} GPUs (its gres) measured"})
    return out


def one_gpu_twice(machines):
    """Two units of one node that measured one GPU (a per-GPU task that saw
    every GPU and took the wrong one): the bus ids tell."""
    buses = {}
    for m in machines:
        for st in m.status:
            if st.get("pci_bus_id") and m.medians:
                buses.setdefault((m.host, st["pci_bus_id"]), set()).add(m.key)
    return [{"machine": host, "error": f"{' and '.join(sorted(keys))} measured one GPU (PCI bus {bus})"}
            for (host, bus), keys in sorted(buses.items()) if len(keys) > 1]


def missing_tasks(meta, machines, lost):
    tasks = meta.get("tasks")
    recorded = len({st.get("task") for m in machines for st in m.status})
    recorded += sum(u["file"].endswith(".status.json") and not u["error"].startswith(NO_STATUS) for u in lost)
    if isinstance(tasks, int) and recorded < tasks:
        return [{"machine": "-", "error": f"{recorded} of {tasks} array tasks recorded a result"}]
    return []


def grouped_verdicts(machines):
    """[{level, id, hosts, messages: [(message, fix, [hosts])]}]: each kind
    of environment verdict that is not ok, with the nodes that have it. A
    kind's messages may name node-specific things (a path, a count); they
    are listed under the one kind, each with its nodes."""
    kinds = {}
    for m in machines:
        for v in m.env_doc().get("verdicts", []) or []:
            if isinstance(v, dict) and v.get("level") in ("error", "warning", "info"):
                k = kinds.setdefault((v["level"], str(v.get("id", ""))), {})
                k.setdefault((str(v.get("message", "")), str(v.get("fix", ""))), set()).add(m.host)
    rank = {"error": 0, "warning": 1, "info": 2}
    out = []
    for (lvl, vid), msgs in kinds.items():
        hosts = sorted(set().union(*msgs.values()))
        out.append({"level": lvl, "id": vid, "hosts": hosts,
                    "messages": sorted(((msg, fix, sorted(h)) for (msg, fix), h in msgs.items()),
                                       key=lambda x: (-len(x[2]), x[0]))})
    return sorted(out, key=lambda v: (rank[v["level"]], -len(v["hosts"]), v["id"]))


def context_spread(group):
    """[(feature, [(value, [machines])])] for features whose values differ within a group."""
    out = []
    for f in features():
        if f.kind == "flag":
            continue
        vals = {}
        for m in group:
            v = f.get(m)
            if v is not None:
                vals.setdefault(fmt_val(f, v) if f.kind == "num" else str(v), []).append(m.key)
        if f.kind == "num":
            nums = [float(f.get(m)) for m in group if f.get(m) is not None]
            if not nums or not any(differs(f, x, median(nums)) for x in nums):
                continue
        elif len(vals) < 2:
            continue
        out.append((f.label, sorted(vals.items(), key=lambda kv: -len(kv[1]))))
    return out


def names_list(keys, limit=8):
    keys = list(keys)
    return ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
