"""fleet.md, fleet.json and the per-group plots."""
import os
from collections import Counter

from ...base.files import write_whole
from ...base.cli import ensure_venv
from ...base.text import Markup, fmt_value, slug, table
from .analysis import ROBUST_Z, context_spread, names_list, short


def ratio_text(r, key, s):
    t = f"{r:.2f}"
    return Markup(f"**{t} slower**") if key in s.slower else Markup(f"*{t} faster*") if key in s.faster else t


def render(meta, machines, findings, verdicts, threshold, plots):
    L = header(meta, machines, findings, threshold)
    L += ["## Findings", ""] + finding_items(meta, findings, threshold) + [""]
    L += builds(machines)
    by = {m.key: m for m in machines}
    for g in findings["groups"]:
        L += group_section(g, [by[k] for k in g["machines"]], plots)
    L += ["## Environment verdicts across nodes", ""] + verdict_items(verdicts, machines) + [""]
    return "\n".join(L)


def header(meta, machines, findings, threshold):
    L = [f"# Fleet run {meta.get('run_id') or '(no run.json)'}", ""]
    if meta:
        mode = "one per GPU (--gpus-per-task=1)" if meta.get("mode") == "gpu" else "one per node"
        L.append(f"{meta.get('tasks', '?')} array tasks, {mode}, submitted {meta.get('submitted', '?')} from "
                 f"{meta.get('submit_host', '?')}; source {meta.get('source', '?')}; "
                 f"{meta.get('processes', '?')} processes x {meta.get('repetitions', '?')} repetitions per machine.")
    L.append(f"{len(machines)} machines (node/unit) in {len(findings['groups'])} group(s). A machine is off when its "
             f"median is more than {100 * threshold:g}% from its group's median and {ROBUST_Z:g} robust standard "
             "deviations from the rest; ratios are time over the group median (above 1: slower).")
    return L + [""]


def finding_items(meta, findings, threshold):
    """The Findings list: who is off and why, bimodal groups, wrong results,
    faster machines, what is incomplete, and the nodes Slurm left out."""
    items = [off_item(o) for o in findings["off"]] + [split_item(sp) for sp in findings["splits"]]
    items += [f"- **wrong result on {w['machine']}**: {short(w['benchmark'])}: {w['error']}"
              for w in findings["wrong"]]
    items += [f"- {f['machine']} is faster than its group in {len(f['benchmarks'])} benchmark(s) "
              f"({names_list(short(n) for n in f['benchmarks'])}): a different setting is likely; see "
              "the context differences below." for f in findings["faster"]]
    items += [f"- incomplete: {u['machine']}: {u['file']}: {u['error']}" for u in findings["unreadable"]]
    items += [f"- incomplete: {i['machine']}: {i.get('benchmark', '') and short(i['benchmark']) + ': '}{i['error']}"
              for i in findings["incomplete"]]
    items = items or [f"- No machine is off: every machine is within {100 * threshold:g}% of its group's median, "
                      "or within the group's own spread, in every benchmark."]
    skipped = [n for n in meta.get("skipped_nodes", []) or [] if isinstance(n, str)]
    if skipped:
        items.append(f"- Not measured, as Slurm listed them at submit (drained, down or not responding): "
                     f"{names_list(skipped)}.")
    return items


def off_item(o):
    worst = max(o["ratios"].values())
    line = (f"- **{o['machine']} is off**: slower than its group ({o['group']}) in {len(o['benchmarks'])} "
            f"benchmark(s), up to {worst:.2f}x the median ({names_list(short(n) for n in o['benchmarks'])}).")
    if o["likely"]:
        line += " Likely cause: " + "; ".join(o["likely"]) + "."
    else:
        line += (" Nothing in the recorded context or telemetry differs from the group in a way that "
                 "explains it: look at the node itself (other work on it, cooling, a failing part).")
    if o["also"]:
        line += " Also differs: " + "; ".join(o["also"]) + "."
    return line


def split_item(sp):
    line = (f"- **bimodal {sp['group']}**: {len(sp['slow'])} machines at {sp['slow_ratio']:.2f}x "
            f"({names_list(sp['slow'])}) and {len(sp['fast'])} at {sp['fast_ratio']:.2f}x "
            f"({names_list(sp['fast'])}) in {len(sp['benchmarks'])} benchmark(s) "
            f"({names_list(short(n) for n in sp['benchmarks'])}).")
    return line + (" What separates them: " + "; ".join(sp["separating"]) + "." if sp["separating"] else
                   " Nothing recorded separates the two sides.")


def builds(machines):
    """Each environment's build and how many machines ran it (each machine's first status)."""
    count = Counter()
    for m in machines:
        for st in m.status[:1]:
            count[(st.get("fingerprint") or "?", st.get("build") or "?")] += 1
    if not count:
        return []
    return (["## Builds", ""] + [f"- environment {fp}: {b} ({n} machine(s))" for (fp, b), n in sorted(count.items())]
            + [""])


def group_section(g, group, plots):
    """A group: the note, the ratios side by side, its plot, each benchmark's
    spread and outliers, and what differs within the group."""
    L = [f"## {g['name']}: {len(g['machines'])} machine(s)", ""]
    if g["note"]:
        L += [g["note"] + ".", ""]
    stats = g["benchmarks"]
    if stats:
        keys = [k for k in g["machines"] if any(k in s.ratios for s in stats)]
        head = ["machine"] + [short(s.name) for s in stats]
        rows = [["fleet median"] + [fmt_value(s.fleet_median, "time") for s in stats]]
        rows += [[k] + [ratio_text(s.ratios[k], k, s) if k in s.ratios else "-" for s in stats] for k in keys]
        L += ["Side by side: the fleet median, then each machine's ratio to it.", "",
              table(head, rows, True), ""]
        if g["name"] in plots:
            L += [f"![{g['name']}]({plots[g['name']]})", ""]
        rows = []
        for s in stats:
            rs = sorted(s.ratios.items(), key=lambda kv: kv[1])
            rows.append([short(s.name), fmt_value(s.fleet_median, "time"), str(len(rs)),
                         f"{rs[0][1]:.2f} ({rs[0][0]})", f"{rs[-1][1]:.2f} ({rs[-1][0]})",
                         ", ".join(s.slower) or "-", "yes" if s.split else "-"])
        L += [table(["benchmark", "fleet median", "machines", "fastest", "slowest", "slower (off)",
                             "bimodal"], rows, True), ""]
    spread = context_spread(group)
    if spread:
        L += ["What differs within the group:", ""]
        L += [f"- {label}: " + "; ".join(f"{v} on {names_list(ks, 4)}" for v, ks in vals) for label, vals in spread]
        L.append("")
    return L


def verdict_items(verdicts, machines):
    """Each kind of environment verdict, with how many nodes have it (and in which forms)."""
    hosts = sorted({m.host for m in machines})

    def count(hs):
        return f"all {len(hosts)} nodes" if len(hs) == len(hosts) else f"{len(hs)} of {len(hosts)} nodes"

    def said(msg, fix):
        return f"{msg.rstrip('.')}." + (f" Fix: {fix.rstrip('.')}." if fix else "")

    if not verdicts:
        return ["- none: every node's report is clean"]
    L = []
    for v in verdicts:
        whom = "" if len(v["hosts"]) == len(hosts) else f" ({names_list(v['hosts'])})"
        if len(v["messages"]) == 1:
            msg, fix, _ = v["messages"][0]
            L.append(f"- {count(v['hosts'])}: {v['level']}: {said(msg, fix)}{whom}")
            continue
        L.append(f"- {count(v['hosts'])}: {v['level']}: {v['id']}, in {len(v['messages'])} forms{whom}:")
        L += [f"  - {count(hs)}: {said(msg, fix)} ({names_list(hs)})" for msg, fix, hs in v["messages"]]
    return L


def plot_name(group):
    return "fleet-" + slug(group) + ".png"


def plot_groups(findings, out_dir, threshold):
    """fleet-<group>.png: each machine's ratio per benchmark, the band of
    +-threshold, outliers named. Returns {group: file name}."""
    ensure_venv("fleet", ("matplotlib",))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = {}
    for g in findings["groups"]:
        stats = g["benchmarks"]
        if not stats:
            continue
        name = plot_name(g["name"])
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(stats) + 2), 4.2))
        ax.axhspan(1 / (1 + threshold), 1 + threshold, color="tab:green", alpha=0.08, lw=0)
        ax.axhline(1.0, color="gray", lw=0.8)
        for i, s in enumerate(stats):
            keys = sorted(s.ratios)
            xs = [i + (j - (len(keys) - 1) / 2) * min(0.5 / max(len(keys), 1), 0.06) for j in range(len(keys))]
            for x, k in zip(xs, keys):
                off = k in s.slower
                ax.plot(x, s.ratios[k], "o", ms=5 if off else 4,
                        color="tab:red" if off else "tab:orange" if k in s.faster else "tab:blue", alpha=0.85)
                if off or k in s.faster:
                    ax.annotate(k, (x, s.ratios[k]), fontsize=7, xytext=(4, 2), textcoords="offset points")
        ax.set_xticks(range(len(stats)))
        ax.set_xticklabels([short(s.name) for s in stats], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("time / group median")
        ax.set_title(f"{g['name']}: {len(g['machines'])} machine(s); band: +-{100 * threshold:g}%", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        try:
            write_whole(os.path.join(out_dir, name),
                                lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
        finally:
            plt.close(fig)
        out[g["name"]] = name
    return out


def to_json(meta, machines, findings, verdicts, code):
    def stats_json(s):
        return {"name": s.name, "fleet_median_s": s.fleet_median, "ratios": s.ratios, "values_s": s.values,
                "slower": s.slower, "faster": s.faster,
                "bimodal": None if not s.split else {"slow": s.split[0], "fast": s.split[1]}}
    return {
        "run": meta,
        "machines": [{"machine": m.key, "host": m.host, "unit": m.unit, "device": m.device, "group": m.group,
                      "status": m.status, "medians_s": m.medians, "errors": m.errors,
                      "samples_s": {n: r.samples for n, r in (m.result.runs.items() if m.result else [])},
                      "context": {k: v for k, v in m.context.items() if k != "cudabench_env"},
                      "verdicts": m.env_doc().get("verdicts", [])} for m in machines],
        "groups": [dict(g, benchmarks=[stats_json(s) for s in g["benchmarks"]]) for g in findings["groups"]],
        "off": findings["off"], "faster": findings["faster"], "bimodal": findings["splits"],
        "wrong": findings["wrong"], "incomplete": findings["incomplete"], "unreadable": findings["unreadable"],
        "verdicts": [dict(v, messages=[{"message": msg, "fix": fix, "hosts": hs} for msg, fix, hs in v["messages"]])
                     for v in verdicts],
        "exit_code": code,
    }
