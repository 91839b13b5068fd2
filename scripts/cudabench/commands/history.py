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
writer moved the tip: a refusal while the tip stayed is a refusal, a
hook's say) starts again from the new tip, after a random pause, until
--seconds, which bounds the whole push: each git call, with what it
started (receive-pack, a hook), ends by then. An entry the branch already
has is left as it is (the first run of a commit stays); each entry given
is a plain file (no link) that is an entry, and one on the branch that is
not is left off the page, named. Every text from a commit is escaped on
the page (it shows as text, never as Markdown or HTML), and git never
reads --remote or --branch as an option. Runs in --repo (default .), whose credentials
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
import stat
import subprocess
import sys
import time

from ..base.errors import BadInput, ToolError, one_line
from ..base.cli import ArgParser, bounded, ensure_venv, output_folder, run_tool
from ..base.files import make_folder, read_json, refuse_inputs_as_outputs, temporary_folder, write_whole
from ..base.text import CONTROL, fmt_speed, md_cell, slug, table
from ..results import entries as history_entries
from ..results.gbench import load_doc
from ..results.trend import RECENT, check_entry, load_history, recent_slowdown, trends
from ..sampling.driver import run_bounded

GIT_SECONDS = 120  # every git call has this deadline
# git push's words when another writer moved the branch first (the ref's old value no longer matches)
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
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
        moved = "; ".join(f"{t.points[i].label}: {t.points[i].subject[:50]} ({fmt_speed(sp)})" for i, sp in t.changes)
        rows.append([t.row, f"{now.value * 1e6:.3g} us" if now else "-", moved or "none",
                     "-" if t.noise != t.noise else f"{100 * t.noise:.1f}%",
                     sum(p.loaded for p in t.points), sum(p.verdict == "undecided" for p in t.points), len(t.points)])
    return [f"## {md_cell(name)}", "", f"![{md_cell(name)}]({png})", "",
            table(["row", "latest", "change points: commit, subject (speed: old time / new; above 1 is faster)",
                   "noise between commits", "loaded points (not used)", "undecided", "points"], rows, True), ""]


def cmd_page(a):
    ensure_venv("history", ("matplotlib", "ruptures"))
    n = write_page(a.dir, a.out, a.title)
    print(f"history: wrote {os.path.join(a.out, 'README.md')} ({n} machine(s))")
    return 0


def write_page(folder, out, title, skipped=None, shown=None):
    """OUT/README.md and a plot per machine of the history in `folder`; how
    many machines it shows. An entry that is not one is BadInput naming it,
    or with a list `skipped`, left out (a machine with none left too), its
    message appended there, with `folder` named as shown(path) says, and
    listed on the page."""
    try:
        machines = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)) and not d.startswith("."))
    except OSError as e:
        raise BadInput(f"{folder}: cannot read ({e.strerror})")
    machines = [m for m in machines if any(n.endswith(".json") for n in os.listdir(os.path.join(folder, m)))]
    if not machines:
        raise BadInput(f"{folder}: no machine folders with per-commit JSON files")
    inputs = [os.path.join(folder, m, n) for m in machines for n in os.listdir(os.path.join(folder, m))]
    refuse_inputs_as_outputs([("--out", os.path.join(out, n)) for n in
                              ["README.md"] + [f"{slug(m)}.png" for m in machines]], inputs)
    make_folder(out, "--out")
    md = [f"# {md_cell(title)}", "",
          "Each point is one commit's gate run: the median of its processes taken without other load, with their "
          "range. Lines are the levels between change points, shaded +-2x the noise between commits; a red dashed "
          "line is a change point, named by the commit that moved the row. Grey crosses ran beside other load and "
          "are not used; orange rings are commits the gate could not tell about (undecided).", ""]
    shown_machines = 0
    for m in machines:
        try:
            ts = trends(load_history(os.path.join(folder, m), skipped))
        except BadInput as e:
            if skipped is None:
                raise
            skipped.append(str(e))
            continue
        png = f"{slug(m)}.png"
        plot_machine(m, ts, os.path.join(out, png))
        md += machine_section(m, ts, png)
        shown_machines += 1
    if skipped:
        skipped[:] = [(shown or (lambda x: x))(why) for why in skipped]
        md += ["## Left out: not history entries", ""] + [f"- {md_cell(why)}" for why in skipped] + [""]
    write_whole(os.path.join(out, "README.md"), "\n".join(md) + "\n")
    return shown_machines


def git(repo, *args, env=None, check=True, deadline=None):
    """git in `repo`, bounded (driver.run_bounded): at GIT_SECONDS, at the
    push's deadline (--seconds) or when this tool is stopped, its group
    (git, receive-pack, a hook and its children) ends with it."""
    seconds = GIT_SECONDS if deadline is None else min(GIT_SECONDS, max(0.1, deadline - time.monotonic()))
    cmd = ["git", "-C", repo, *args]
    rc, out, err = run_bounded(cmd, seconds, {**os.environ, **(env or {})}, with_us=True)
    if rc is None:
        raise ToolError(f"git {args[0]} still ran after {seconds:.0f} s"
                        + (" (the end of --seconds)" if seconds < GIT_SECONDS else "") + ": stopped, with what it started")
    if check and rc:
        raise ToolError(f"git {' '.join(args[:2])} failed: {one_line(err) or rc}")
    return subprocess.CompletedProcess(cmd, rc, out, err)


def check_target(a):
    """BadInput unless --remote and --branch are what they say: git must
    never read them as options (--upload-pack=... runs a command)."""
    if not a.remote or a.remote.startswith("-") or CONTROL.search(a.remote):
        raise BadInput(f"--remote {a.remote!r}: expected a remote's name or URL")
    if not BRANCH.fullmatch(a.branch) or git(".", "check-ref-format", f"refs/heads/{a.branch}", check=False).returncode:
        raise BadInput(f"--branch {a.branch!r}: expected a branch name (letters, digits, '.', '_', '-', '/')")


def entries(folder):
    """{path in the branch: local file} of DIR/<machine>/<name>.json: plain
    files in plain folders, each a history entry (a link, a file of
    another kind or one that is not an entry: BadInput naming it)."""
    out = {}
    try:
        machines = sorted(os.listdir(folder)) if not os.path.islink(folder) else None
    except OSError as e:
        raise BadInput(f"--entries {folder}: cannot read ({e.strerror})")
    if machines is None:
        raise BadInput(f"--entries {folder}: a link: give the folder itself")
    for m in machines:
        mdir = os.path.join(folder, m)
        if not history_entries.RUN_ID.match(m) or not stat.S_ISDIR(os.lstat(mdir).st_mode):
            raise BadInput(f"--entries {mdir}: expected a machine's folder (a plain folder named by letters, digits, "
                           f"'.', '_' or '-')")
        for n in sorted(os.listdir(mdir)):
            path = os.path.join(mdir, n)
            if not n.endswith(".json") or not history_entries.RUN_ID.match(n) or not stat.S_ISREG(os.lstat(path).st_mode):
                raise BadInput(f"--entries {path}: expected a plain <name>.json history entry")
            check_entry(path)
            out[f"{m}/{n}"] = path
    if not out:
        raise BadInput(f"--entries {folder}: no <machine>/<name>.json files")
    return out


def tip(a, deadline):
    """The remote branch's commit, or "" when it has none yet."""
    r = git(a.repo, "ls-remote", "--exit-code", "--", a.remote, f"refs/heads/{a.branch}", check=False, deadline=deadline)
    if r.returncode not in (0, 2):  # 2: no such branch yet
        raise ToolError(f"git ls-remote {a.remote} failed: {one_line(r.stderr) or r.returncode}")
    return r.stdout.split()[0] if r.returncode == 0 and r.stdout.split() else ""


def attempt(a, files, work, deadline):
    """One try: the remote's tip, our entries added, the page remade, one
    commit pushed. Returns (pushed, added)."""
    ref = f"refs/heads/{a.branch}"
    parent = ""
    if tip(a, deadline):
        git(a.repo, "fetch", "-q", "--no-tags", "--", a.remote, f"+{ref}:refs/cudabench/history-tip", deadline=deadline)
        parent = git(a.repo, "rev-parse", "--verify", "refs/cudabench/history-tip^{commit}").stdout.strip()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = {"GIT_INDEX_FILE": work + ".index", "GIT_WORK_TREE": work}
    if os.path.exists(env["GIT_INDEX_FILE"]):
        os.remove(env["GIT_INDEX_FILE"])
    if parent:
        git(a.repo, "read-tree", parent, env=env)
        git(a.repo, "-c", "core.symlinks=false", "checkout-index", "-a", "-f", env=env)  # a link: a plain file
    added = []
    for dest, src in files.items():
        path = os.path.join(work, dest)
        if not os.path.lexists(path):  # the first run of a commit stays
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(src, path)
            added.append(dest)
    if not added:
        return True, []
    if a.page:
        make_page(a, work)
    git(a.repo, "add", "-A", env=env)
    tree = git(a.repo, "write-tree", env=env).stdout.strip()
    who = ["-c", "user.name=cudabench", "-c", "user.email=cudabench@localhost"]
    commit = git(a.repo, *who, "commit-tree", tree, *(["-p", parent] if parent else []), "-m",
                 f"history: {', '.join(added)}").stdout.strip()
    pushed = git(a.repo, "push", "-q", "--", a.remote, f"{commit}:{ref}", check=False, deadline=deadline)
    if pushed.returncode and (not LOST_RACE.search(pushed.stderr) or tip(a, deadline) == parent):
        # refused for another reason (a hook, a protected branch; the tip did not move): no retry helps
        raise ToolError(f"git push to {a.remote} failed: {one_line(pushed.stderr) or pushed.returncode}")
    return pushed.returncode == 0, added


def make_page(a, work):
    """The page of the branch's tree `work`. An entry there that is not one
    is left out and named by its path on the branch, so that it stops no push."""
    skipped = []
    write_page(work, work, a.title, skipped, lambda why: why.replace(work + os.sep, a.branch + ":", 1))
    for why in skipped:
        print(f"history: left out of the page: {why}", file=sys.stderr)


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
        for t in trends(load_history(os.path.join(tree, m), [])):  # an entry that is not one: named by the page
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
    check_target(a)
    if a.page or a.check:
        ensure_venv("history", ("matplotlib", "ruptures"))
    files = entries(a.entries)
    git(a.repo, "rev-parse", "--git-dir")
    deadline, tries = time.monotonic() + a.seconds, 0  # bounds the whole push: every git call ends by it
    with temporary_folder("cudabench-history.") as work:
        while True:
            tries += 1
            ok, added = attempt(a, files, os.path.join(work, "tree"), deadline)
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
