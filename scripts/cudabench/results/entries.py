"""History entries: one results file with a `cudabench_history` block, in
one folder per machine (results.trend reads them).

Two keys, for two things tracked over time (docs/regression-tracking.md):
a commit's gate run is kept once per commit (<sha>.json: the revision
gate, ab.py run --history), a machine's run once per run
(<UTC time>-<run id>.json: the machine mode, history.py record), so
nightly runs of an unchanged commit are all kept."""
import os
import re
import subprocess
import time

from ..base.errors import BadInput, one_line
from ..base.files import write_json
from ..base.paths import ROOT


def git_info(rev, flag="--rev", cwd=ROOT):
    """{commit, time, subject} of a revision of the checkout `cwd`; BadInput
    naming `flag` when it is no one commit (git never reads it as an option)."""
    try:
        r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                           capture_output=True, text=True, cwd=cwd, timeout=60)
        if r.returncode == 0:
            r = subprocess.run(["git", "log", "-1", "--no-walk", "--format=%H%x09%ct%x09%s", r.stdout.strip(), "--"],
                               capture_output=True, text=True, cwd=cwd, timeout=60)
        sha, ts, subject = r.stdout.strip().split("\t", 2)
        return {"commit": sha, "time": int(ts), "subject": subject}
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        why = one_line(getattr(r, "stderr", "") if isinstance(e, ValueError) else e) or "git knows no such commit"
        raise BadInput(f"{flag} {rev}: not a commit of {cwd} ({why})")


def verdicts_of(results):
    return {v.name: {"verdict": v.verdict, "change": v.change, "p": v.p, "floor": v.floor}
            for vs in results.values() for v in vs}


def store_commit(folder, revs, doc_a, doc_b, results):
    """The gate's entry: b's results as FOLDER/<b's commit>.json with its
    verdicts against its parent, and a's as FOLDER/<a's commit>.json when
    the history has none for it yet."""
    os.makedirs(folder, exist_ok=True)
    info_a, info_b = revs
    doc_b["cudabench_history"] = dict(info_b, parent=info_a.get("commit"), verdicts=verdicts_of(results))
    write_json(os.path.join(folder, f"{info_b['commit']}.json"), doc_b)
    path_a = os.path.join(folder, f"{info_a['commit']}.json")
    if not os.path.exists(path_a):
        doc_a["cudabench_history"] = dict(info_a, verdicts={})
        write_json(path_a, doc_a)


RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")  # match(): from the start, to the very end


def store_run(folder, doc, run_id, commit="", when=None):
    """The machine mode's entry: one run's results as
    FOLDER/<UTC time>-<run id>.json, keyed by the run, never replacing
    another. Returns its path."""
    if not RUN_ID.match(run_id):
        raise BadInput(f"--run-id {run_id!r}: expected letters, digits, '.', '_' or '-' (at most 100)")
    when = int(time.time() if when is None else when)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))
    path = os.path.join(folder, f"{stamp}-{run_id}.json")
    if os.path.exists(path):
        raise BadInput(f"{path}: this run's entry is there already")
    os.makedirs(folder, exist_ok=True)
    doc["cudabench_history"] = {"commit": commit or run_id, "run": run_id, "time": when,
                                "subject": f"run {run_id}" + (f" of cudabench {commit}" if commit else ""),
                                "verdicts": {}}
    write_json(path, doc)
    return path
