"""Process results merged into one result: an entry per benchmark per
process (the median of its repetitions), the first process's context, and
how the samples were taken (SAMPLES_META): the default run, the A/B runner,
the fleet and the stack matrix write what merge() makes."""
from .gbench import SAMPLES_META, THROTTLED, unique_rows
from .stats import median

META = SAMPLES_META
# Google Benchmark's own fields; every other number in an entry is a counter.
GB_FIELDS = {"family_index", "per_family_instance_index", "repetition_index", "repetitions", "threads",
             "iterations"}


def process_entries(doc, process, load=None, loaded=False):
    """One entry per benchmark of one process's JSON: the median of its
    repetitions for every number (times, counters), its first label (a
    throttled one when any repetition throttled), or its error; with the
    process's load, and "loaded" when it ran beside more than allowed. A
    row the process wrote twice is one repetition (gbench.unique_rows)."""
    order, reps = [], {}
    for b in unique_rows(doc.get("benchmarks", []), f"process {process}")[0]:
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name") or b["name"]
        if name not in reps:
            order.append(name)
            reps[name] = []
        reps[name].append(b)
    out = []
    for name in order:
        # A repetition Google Benchmark 1.8+ skipped ("skipped": true) has no
        # numbers: the others give the sample; skipped in all, the entry is.
        rs = [r for r in reps[name] if r.get("skipped") is not True] or reps[name][:1]
        e = dict(rs[0])
        e.update(name=rs[0]["name"], run_name=name, run_type="iteration", repetition_index=process,
                 process=process, repetitions_in_process=len(rs))
        if load is not None:
            e["load"] = load
        if loaded:
            e["loaded"] = True
        errors = [r for r in rs if r.get("error_occurred")]
        if errors:
            e["error_occurred"] = True
            e["error_message"] = errors[0].get("error_message", "error")
            out.append(e)
            continue
        if e.get("skipped") is True:
            out.append(e)
            continue
        for k, v in rs[0].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in GB_FIELDS:
                xs = [r[k] for r in rs if isinstance(r.get(k), (int, float))]
                if xs:
                    e[k] = median(xs)
        throttled = [r["label"] for r in rs if THROTTLED in (r.get("label") or "")]
        if throttled:
            e["label"] = throttled[0]
        out.append(e)
    return out


def merge(docs, side, meta, loads=None):
    """One Google Benchmark JSON for one arm: an entry per benchmark per
    process (repetition_index = the process), the first process's context,
    and META: how the samples were taken, each process's load."""
    limit = meta.get("max_interference", 1.0)
    loads = loads or [None] * len(docs)
    merged = {"context": dict(docs[0].get("context", {})) if docs else {}, "benchmarks": [],
              META: dict(meta, side=side, processes=len(docs), sample="the median of one process's repetitions")}
    if any(x is not None for x in loads):
        merged[META].update(loads=loads, loaded=[i for i, x in enumerate(loads) if x is not None and x > limit])
    twice = sum(unique_rows(d.get("benchmarks", []), f"process {i}")[1] for i, d in enumerate(docs))
    if twice:
        merged[META]["rows_counted_once"] = twice  # written twice by a process: one repetition each
    for i, (d, load) in enumerate(zip(docs, loads)):
        merged["benchmarks"] += process_entries(d, i, load, load is not None and load > limit)
    for e in merged["benchmarks"]:
        e["repetitions"] = len(docs)
    return merged


def busiest(others, most=3):
    """The other programs that took the most CPU time beside the loaded
    processes, by name: [{name, pid (its busiest process), cpu_s, processes}]."""
    by = {}
    for o in others:
        b = by.setdefault(o["name"], {"name": o["name"], "pid": o["pid"], "cpu_s": 0.0, "pids": {}})
        b["cpu_s"] = round(b["cpu_s"] + o["cpu_s"], 2)
        b["pids"][o["pid"]] = b["pids"].get(o["pid"], 0) + o["cpu_s"]
    out = sorted(by.values(), key=lambda b: -b["cpu_s"])[:most]
    for b in out:
        pids = b.pop("pids")
        b["pid"], b["processes"] = max(pids, key=pids.get), len(pids)
    return out
