"""The gate's history: a page to look at, and a writer that appends to a
history branch without losing anyone's entry.

    history.py page DIR --out OUT [--title T]
    history.py record RESULT --entries DIR --machine NAME --run-id ID [--commit REV]
    history.py push --entries DIR [--repo PATH] [--remote origin] [--branch bench-history] [--seconds 300]
                    [--check]

page: DIR holds one folder per machine, each with one JSON per commit (what
scripts/regress.sh keeps: ab.py run --history) or per run (record). Writes OUT/README.md (a page
GitHub shows on the branch) and OUT/<machine>.png: per machine and row, the
commits' medians (of the processes taken without other load) with their
range, the levels between change points with the noise band (+-2 noise
between commits), each change point with the commit that moved it and its
speed (old time / new time; above 1 is faster), and, marked as such, the
points that ran beside other load (never used) and the gate's undecided
verdicts.

record: keeps RESULT (a default run's JSON, scripts/samples.py) as
DIR/<machine>/<UTC time>-<run id>.json: a machine's history is keyed by
run, so nightly runs of an unchanged commit are all kept; --commit names
the revision of cudabench that measured (a new one can explain a step).

push: appends the JSON files under --entries (DIR/<machine>/<name>.json) to
--branch on --remote, then remakes the page there, in one commit on top of
the remote's tip, pushed without force. A push that lost a race (another
writer moved the tip) starts again from the new tip, after a random pause,
until --seconds; an entry the branch already has is left as it is (the
first run of a commit stays). Runs in --repo (default .), whose credentials
for the remote it uses (a checkout made by actions/checkout has them, or
git's own configuration from the environment). With --check, each
machine of --entries is then checked on the branch as pushed: a row whose
newest change point, among its newest 3 entries, is a slowdown beyond 5%
to a level also 5% above the 6 entries before it fails, named with the
entry that began it.

Exit codes: 0 done; 1 --check found a slowdown; 2 bad input (no entries,
a history file that is not one, a run id that is not a name); 3 git
failed, or every try lost its race until --seconds.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time

from ..base.errors import BadInput, ToolError, one_line
from ..base.cli import ArgParser, bounded, ensure_venv, output_folder, run_tool
from ..base.files import make_folder, read_json, refuse_inputs_as_outputs, temporary_folder, write_whole
from ..base.text import fmt_speed, slug, table
from ..results import entries as history_entries
from ..results.gbench import load_doc
from ..results.trend import RECENT, load_history, recent_slowdown, trends

GIT_SECONDS = 120  # every git call has this deadline
# git push's words when another writer moved the branch first (the ref's old value no longer matches)
LOST_RACE = re.compile(r"fetch first|non-fast-forward|failed to update ref|cannot lock ref|incorrect old value|stale info")


def plot_machine(name, ts, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = min(2, len(ts))
    fig, axes = plt.subplots((len(ts) + cols - 1) // cols, cols, figsize=(7 * cols, 3 * ((len(ts) + cols - 1) // cols)),
                             squeeze=False)
    for ax, t in zip(axes.flat, ts):
        plot_row(ax, t)
    for ax in axes.flat[len(ts):]:
        ax.axis("off")
    fig.suptitle(f"{name}: time per row over the commits (oldest left)")
    fig.tight_layout()
    try:
        write_whole(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"))
    finally:
        plt.close(fig)


def plot_row(ax, t):
    us = 1e6
    xs = [i for i, p in enumerate(t.points) if not p.loaded and p.value == p.value]
    ax.errorbar(xs, [t.points[i].value * us for i in xs],
                yerr=[[(t.points[i].value - t.points[i].low) * us for i in xs],
                      [(t.points[i].high - t.points[i].value) * us for i in xs]],
                fmt="o", ms=3, color="tab:blue", ecolor="lightsteelblue", capsize=2, label="median, range")
    for first, last, level in t.levels:
        band = (level * (1 - 2 * t.noise), level * (1 + 2 * t.noise)) if t.noise == t.noise else (level, level)
        ax.fill_between([first - 0.4, last + 0.4], band[0] * us, band[1] * us, color="tab:blue", alpha=0.12)
        ax.plot([first - 0.4, last + 0.4], [level * us] * 2, color="navy", lw=1)
    for i, sp in t.changes:
        ax.axvline(i - 0.5, color="tab:red", ls="--", lw=1)
        ax.annotate(f"{t.points[i].label} {fmt_speed(sp)}", (i - 0.5, 1), xycoords=("data", "axes fraction"),
                    color="tab:red", fontsize=7, ha="left", va="top")
    loaded = [i for i, p in enumerate(t.points) if p.loaded]
    if loaded:
        ax.plot(loaded, [t.points[i].seen * us for i in loaded], "x", color="gray", label="loaded: not used")
    und = [i for i in xs if t.points[i].verdict == "undecided"]
    if und:
        ax.plot(und, [t.points[i].value * us for i in und], "o", ms=9, mfc="none", mec="orange", label="undecided")
    ax.set_title(t.row.replace("/real_time", ""), fontsize=9)
    ax.set_ylabel("us")
    every = max(1, len(t.points) // 8)
    ax.set_xticks(range(0, len(t.points), every))
    ax.set_xticklabels([p.label for p in t.points[::every]], rotation=45, fontsize=6)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="lower left")


def machine_section(name, ts, png):
    rows = []
    for t in ts:
        now = next((p for p in reversed(t.points) if not p.loaded and p.value == p.value), None)
        moved = "; ".join(f"`{t.points[i].label}` {t.points[i].subject[:50]} ({fmt_speed(sp)})" for i, sp in t.changes)
        rows.append([t.row, f"{now.value * 1e6:.3g} us" if now else "-", moved or "none",
                     "-" if t.noise != t.noise else f"{100 * t.noise:.1f}%",
                     sum(p.loaded for p in t.points), sum(p.verdict == "undecided" for p in t.points), len(t.points)])
    return [f"## {name}", "", f"![{name}]({png})", "",
            table(["row", "latest", "change points: commit, subject (speed: old time / new; above 1 is faster)",
                   "noise between commits", "loaded points (not used)", "undecided", "points"], rows, True), ""]


def cmd_page(a):
    ensure_venv("history", ("matplotlib", "ruptures"))
    try:
        machines = sorted(d for d in os.listdir(a.dir) if os.path.isdir(os.path.join(a.dir, d)) and not d.startswith("."))
    except OSError as e:
        raise BadInput(f"{a.dir}: cannot read ({e.strerror})")
    machines = [m for m in machines if any(n.endswith(".json") for n in os.listdir(os.path.join(a.dir, m)))]
    if not machines:
        raise BadInput(f"{a.dir}: no machine folders with per-commit JSON files")
    inputs = [os.path.join(a.dir, m, n) for m in machines for n in os.listdir(os.path.join(a.dir, m))]
    refuse_inputs_as_outputs([("--out", os.path.join(a.out, n)) for n in
                              ["README.md"] + [f"{slug(m)}.png" for m in machines]], inputs)
    make_folder(a.out, "--out")
    md = [f"# {a.title}", "",
          "Each point is one commit's gate run: the median of its processes taken without other load, with their "
          "range. Lines are the levels between change points, shaded +-2x the noise between commits; a red dashed "
          "line is a change point, named by the commit that moved the row. Grey crosses ran beside other load and "
          "are not used; orange rings are commits the gate could not tell about (undecided).", ""]
    for m in machines:
        ts = trends(load_history(os.path.join(a.dir, m)))
        png = f"{slug(m)}.png"
        plot_machine(m, ts, os.path.join(a.out, png))
        md += machine_section(m, ts, png)
    write_whole(os.path.join(a.out, "README.md"), "\n".join(md) + "\n")
    print(f"history: wrote {os.path.join(a.out, 'README.md')} ({len(machines)} machine(s))")
    return 0


def git(repo, *args, env=None, check=True):
    try:
        r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, timeout=GIT_SECONDS,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        raise ToolError(f"git {args[0]} ran past {GIT_SECONDS} s")
    if check and r.returncode:
        raise ToolError(f"git {' '.join(args[:2])} failed: {one_line(r.stderr) or r.returncode}")
    return r


def entries(folder):
    """{path in the branch: local file} of DIR/<machine>/<name>.json."""
    out = {}
    for m in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if os.path.isdir(os.path.join(folder, m)):
            for n in sorted(os.listdir(os.path.join(folder, m))):
                if n.endswith(".json"):
                    out[f"{m}/{n}"] = os.path.join(folder, m, n)
    if not out:
        raise BadInput(f"--entries {folder}: no <machine>/<name>.json files")
    return out


def attempt(a, files, work):
    """One try: the remote's tip, our entries added, the page remade, one
    commit pushed. Returns (pushed, added)."""
    ref = f"refs/heads/{a.branch}"
    parent = ""
    if git(a.repo, "ls-remote", "--exit-code", a.remote, ref, check=False).returncode != 2:  # 2: no such branch yet
        git(a.repo, "fetch", "-q", "--no-tags", a.remote, f"+{ref}:refs/cudabench/history-tip")
        parent = git(a.repo, "rev-parse", "--verify", "refs/cudabench/history-tip^{commit}").stdout.strip()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {"GIT_INDEX_FILE": work + ".index", "GIT_WORK_TREE": work}
    if os.path.exists(env["GIT_INDEX_FILE"]):
        os.remove(env["GIT_INDEX_FILE"])
    if parent:
        git(a.repo, "read-tree", parent, env=env)
        git(a.repo, "checkout-index", "-a", "-f", env=env)
    added = []
    for dest, src in files.items():
        path = os.path.join(work, dest)
        if not os.path.exists(path):  # the first run of a commit stays
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(src, path)
            added.append(dest)
    if not added:
        return True, []
    if a.page:
        rc = main(["page", work, "--out", work, "--title", a.title])
        if rc:
            raise ToolError(f"the page could not be made (exit {rc})")
    git(a.repo, "add", "-A", env=env)
    tree = git(a.repo, "write-tree", env=env).stdout.strip()
    who = ["-c", "user.name=cudabench", "-c", "user.email=cudabench@localhost"]
    commit = git(a.repo, *who, "commit-tree", tree, *(["-p", parent] if parent else []), "-m",
                 f"history: {', '.join(added)}").stdout.strip()
    pushed = git(a.repo, "push", "-q", a.remote, f"{commit}:{ref}", check=False)
    if pushed.returncode and not LOST_RACE.search(pushed.stderr):  # refused for another reason: no retry helps
        raise ToolError(f"git push to {a.remote} failed: {one_line(pushed.stderr) or pushed.returncode}")
    return pushed.returncode == 0, added


def cmd_record(a):
    doc = read_json(a.result)
    load_doc(doc, a.result)  # a Google Benchmark results file, or exit 2 naming it
    if not history_entries.RUN_ID.match(a.machine):
        raise BadInput(f"--machine {a.machine!r}: expected letters, digits, '.', '_' or '-'")
    path = history_entries.store_run(os.path.join(a.entries, a.machine), doc, a.run_id, a.commit)
    print(f"history: {path}")
    return 0


def check(tree, machines):
    """1 when a machine's newest entries are a slowdown (trend.recent_slowdown), each said; else 0."""
    found = 0
    for m in machines:
        for t in trends(load_history(os.path.join(tree, m))):
            hit = recent_slowdown(t)
            if hit:
                found += 1
                i, sp = hit
                print(f"history: {m}: {t.row.split('/real_time')[0]} slower from {t.points[i].label} on: "
                      f"speed {fmt_speed(sp)} (a change point among the newest {RECENT} entries)", file=sys.stderr)
    if not found:
        print(f"history: no slowdown among the newest {RECENT} entries of {', '.join(machines)}")
    return 1 if found else 0


def cmd_push(a):
    if a.page or a.check:
        ensure_venv("history", ("matplotlib", "ruptures"))
    files = entries(a.entries)
    git(a.repo, "rev-parse", "--git-dir")
    deadline, tries = time.monotonic() + a.seconds, 0
    with temporary_folder("cudabench-history.") as work:
        while True:
            tries += 1
            ok, added = attempt(a, files, os.path.join(work, "tree"))
            if ok:
                print(f"history: {len(added)} entr{'y' if len(added) == 1 else 'ies'} appended to {a.branch} on "
                      f"{a.remote}" + (f" ({', '.join(added)})" if added else ": the branch has them all already")
                      + (f" after {tries} tries" if tries > 1 else ""))
                return check(os.path.join(work, "tree"), sorted({d.split("/")[0] for d in files})) if a.check else 0
            if time.monotonic() + 2 > deadline:
                raise ToolError(f"every push to {a.branch} lost its race with another writer for {a.seconds:g} s "
                                f"({tries} tries)")
            print(f"history: {a.branch} moved while we wrote (try {tries}); again from its new tip", file=sys.stderr)
            time.sleep(random.uniform(0.2, 1.5))


def main(argv=None):
    ap = ArgParser(prog="history", description=__doc__.split("\n\n")[0],
                   formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("page", help="the page of a history folder")
    p.add_argument("dir")
    p.add_argument("--out", required=True, type=output_folder)
    p.add_argument("--title", default="cudabench history")
    p = sub.add_parser("push", help="append entries to the history branch")
    p.add_argument("--entries", required=True)
    p.add_argument("--repo", default=".")
    p.add_argument("--remote", default="origin")
    p.add_argument("--branch", default="bench-history")
    p.add_argument("--seconds", action=bounded(1, 3600, float), default=300)
    p.add_argument("--no-page", dest="page", action="store_false")
    p.add_argument("--check", action="store_true", help="exit 1 when the newest entries are a slowdown")
    p.add_argument("--title", default="cudabench history")
    p = sub.add_parser("record", help="keep a run's results as an entry, keyed by the run")
    p.add_argument("result")
    p.add_argument("--entries", required=True)
    p.add_argument("--machine", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--commit", default="", help="the revision of cudabench that measured (the action's ref)")
    a = ap.parse_args(argv)
    return run_tool("history", lambda: {"page": cmd_page, "push": cmd_push, "record": cmd_record}[a.cmd](a))


def entry():
    """The program, as scripts/history.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
