"""The gate's history (scripts/history.py): the page made from a history of
22 commits with one step injected (its change point named by the commit
that moved the row, loaded and undecided points marked), and the writer
appending to a real bare repository standing in for the remote, with two
writers racing: nothing is lost, nothing is force-pushed. And the writer
against hostile input and a hostile remote: a remote or branch that git
would read as an option, commit subjects that are Markdown or HTML,
entries that are links or not entries, a corrupt entry on the branch, a
hook that refuses with a racing word, and a hook that hangs (bounded by
--seconds, stopped with all it started)."""
import json
import os
import signal
import subprocess
import sys
import time

from conftest import ROOT

HISTORY = os.path.join(ROOT, "scripts", "history.py")
STEP, FLAT = "VectorAdd/cpu_scalar/n:1048576/real_time", "VectorAdd/cpu_omp_simd/n:1048576/real_time"


def entry(i, step_at=12, loaded=(), undecided=()):
    """One commit's gate result: 6 processes a row; STEP's time is 15% up from commit step_at on."""
    benches = []
    for row, base in ((STEP, 400e-6), (FLAT, 200e-6)):
        level = base * (1.15 if row == STEP and i >= step_at else 1.0)
        for p in range(6):
            x = level * (1 + 0.004 * ((p * 5 + i * 3) % 7 - 3)) * (3 if i in loaded else 1)
            e = {"name": row, "run_name": row, "run_type": "iteration", "real_time": x * 1e6, "time_unit": "us",
                 "repetition_index": p}
            if i in loaded:
                e.update(load=0.5, loaded=True)
            benches.append(e)
    verdicts = {STEP: {"verdict": "undecided" if i in undecided else "slower" if i == step_at else "same"},
                FLAT: {"verdict": "same"}}
    return {"context": {}, "benchmarks": benches,
            "cudabench_history": {"commit": f"{i:02d}" + "c0ffee" * 6, "time": 1_700_000_000 + 3600 * i,
                                  "subject": f"commit number {i}", "verdicts": verdicts}}


def write_history(folder, n=22, **kw):
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        doc = entry(i, **kw)
        with open(os.path.join(folder, doc["cudabench_history"]["commit"] + ".json"), "w") as f:
            json.dump(doc, f)


def rendered(md):
    """The page as GitHub shows it, near enough: CommonMark with tables (markdown-it-py)."""
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable("table").parse(md)


def table_rows(md):
    """{first cell: [cells]} of the page's tables, each cell as rendered text
    (every cell of the page must render to text alone: asserted here)."""
    rows, cells = {}, None
    for t in rendered(md):
        if t.type == "tr_open":
            cells = []
        elif t.type == "inline" and cells is not None:
            assert all(c.type == "text" for c in t.children or []), (t.content, [c.type for c in t.children])
            cells.append("".join(c.content for c in t.children or []))
        elif t.type == "tr_close":
            rows[cells[0]] = cells
            cells = None
    return rows


def run(*args, timeout=300):
    return subprocess.run([sys.executable, HISTORY, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_the_page_marks_the_change_point_with_its_commit_and_the_loaded_and_undecided_points(tmp_path):
    write_history(tmp_path / "h" / "vm-a", loaded=(5, 17), undecided=(9,))
    r = run("page", tmp_path / "h", "--out", tmp_path / "page")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "page" / "README.md").read_text()
    rows = table_rows(md)
    # The step is found at commit 12, named with its subject, as a speed (1/1.15 = 0.87x).
    assert "12c0ffe: commit number 12 (0.87x)" in rows[STEP][2], rows[STEP]
    assert rows[FLAT][2] == "none", rows[FLAT]
    # The loaded commits (5 and 17: three times as slow) are counted as such and moved nothing.
    assert rows[STEP][4] == "2" and rows[FLAT][4] == "2" and rows[STEP][5] == "1", rows[STEP]
    png = (tmp_path / "page" / "vm-a.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout


def test_two_writers_racing_for_the_history_branch_keep_every_entry(tmp_path):
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote))
    # The remote takes a moment over each push, as a real one does: the
    # writers' fetch-commit-push windows overlap.
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nsleep 0.3\n")
    hook.chmod(0o755)
    writers = []
    for w in ("a", "b"):
        git("clone", "-q", str(remote), str(tmp_path / w))
        for i in range(4):
            doc = entry(i)
            doc["cudabench_history"]["commit"] = f"{w}{i}"
            os.makedirs(tmp_path / f"e-{w}{i}" / f"vm-{w}")
            (tmp_path / f"e-{w}{i}" / f"vm-{w}" / f"{w}{i}.json").write_text(json.dumps(doc))
        script = "; ".join(f"{sys.executable} {HISTORY} push --no-page --repo {tmp_path / w} "
                           f"--entries {tmp_path / f'e-{w}{i}'} || exit $?" for i in range(4))
        writers.append(subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True))
    outs = [p.communicate(timeout=300) for p in writers]
    assert [p.returncode for p in writers] == [0, 0], outs
    files = git("ls-tree", "-r", "--name-only", "bench-history", cwd=remote).split()
    assert sorted(files) == sorted(f"vm-{w}/{w}{i}.json" for w in "ab" for i in range(4)), files
    # Appended: eight commits in one line, none replaced (each adds one file).
    log = git("log", "--format=%H %P", "bench-history", cwd=remote).splitlines()
    assert len(log) == 8 and all(len(x.split()) == 2 for x in log[:-1]) and len(log[-1].split()) == 1, log
    # Pushing an entry the branch has already leaves it as it is.
    r = run("push", "--no-page", "--repo", tmp_path / "a", "--entries", tmp_path / "e-a0")
    assert r.returncode == 0 and "has them all already" in r.stdout, r.stdout + r.stderr


def test_the_writer_remakes_the_page_on_the_branch(tmp_path):
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote))
    git("clone", "-q", str(remote), str(tmp_path / "c"))
    write_history(tmp_path / "e" / "vm-a", n=6)
    r = run("push", "--repo", tmp_path / "c", "--entries", tmp_path / "e")
    assert r.returncode == 0, r.stdout + r.stderr
    files = git("ls-tree", "-r", "--name-only", "bench-history", cwd=remote).split()
    assert "README.md" in files and "vm-a.png" in files and len([f for f in files if f.endswith(".json")]) == 6


def seed_branch(tmp_path, n, step_at):
    """A bare remote whose bench-history holds n entries of machine vm-a; a clone of it."""
    remote, clone = tmp_path / "remote.git", tmp_path / "c"
    git("init", "-q", "--bare", str(remote))
    git("clone", "-q", str(remote), str(clone))
    write_history(tmp_path / "seed" / "vm-a", n=n, step_at=step_at)
    assert run("push", "--no-page", "--repo", clone, "--entries", tmp_path / "seed").returncode == 0
    return remote, clone


def record_and_check(tmp_path, clone, i, step_at, run_id):
    """A machine run's entry recorded by run id, pushed and checked."""
    doc = entry(i, step_at=step_at)
    del doc["cudabench_history"]
    (tmp_path / "latest.json").write_text(json.dumps(doc))
    r = run("record", tmp_path / "latest.json", "--entries", tmp_path / run_id, "--machine", "vm-a",
            "--run-id", run_id, "--commit", "v1.4")
    assert r.returncode == 0, r.stderr
    return run("push", "--no-page", "--check", "--repo", clone, "--entries", tmp_path / run_id)


def test_a_machine_fails_its_check_when_its_newest_runs_step_up_and_passes_when_flat(tmp_path):
    remote, clone = seed_branch(tmp_path / "flat", 10, step_at=99)
    r = record_and_check(tmp_path / "flat", clone, 10, 99, "4001")
    assert r.returncode == 0 and "no slowdown among the newest 3 entries of vm-a" in r.stdout, r.stdout + r.stderr
    # Keyed by run: a second run of the same commit is kept beside the first.
    r = record_and_check(tmp_path / "flat", clone, 10, 99, "4002")
    assert r.returncode == 0, r.stdout + r.stderr
    names = [f for f in git("ls-tree", "-r", "--name-only", "bench-history", cwd=remote).split() if "-400" in f]
    assert len(names) == 2 and all(n.startswith("vm-a/20") for n in names), names
    info = json.loads(git("show", f"bench-history:{names[0]}", cwd=remote))["cudabench_history"]
    assert info["run"] in ("4001", "4002") and info["commit"] == "v1.4" and "of cudabench v1.4" in info["subject"]
    # A 15% step in the newest two entries (the seed's last, then this run): failed, named by the entry that began it.
    remote, clone = seed_branch(tmp_path / "step", 10, step_at=9)
    r = record_and_check(tmp_path / "step", clone, 10, 9, "4003")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"history: vm-a: {STEP.split('/real_time')[0]} slower from 09c0ffe on: speed 0.87x" in r.stderr, r.stderr
    assert FLAT.split("/real_time")[0] not in r.stderr
    # Once the step is older than the newest 3 entries, it is the machine's level.
    remote, clone = seed_branch(tmp_path / "old", 10, step_at=5)
    assert record_and_check(tmp_path / "old", clone, 10, 5, "4004").returncode == 0


def bare_with_hook(tmp_path, hook):
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote))
    if hook:
        (remote / "hooks" / "pre-receive").write_text("#!/bin/sh\n" + hook)
        (remote / "hooks" / "pre-receive").chmod(0o755)
    git("clone", "-q", str(remote), str(tmp_path / "c"))
    return remote, tmp_path / "c"


def test_git_never_reads_the_remote_or_the_branch_as_an_option(tmp_path):
    _, clone = bare_with_hook(tmp_path, "")
    write_history(tmp_path / "e" / "vm-a", n=2)
    mark = tmp_path / "ran"
    for flag, value in (("--remote", f"--upload-pack=touch {mark}"), ("--remote", f"--receive-pack=touch {mark}"),
                        ("--branch", f"--upload-pack=touch {mark}"), ("--branch", "a..b"), ("--remote", "")):
        r = run("push", "--no-page", "--repo", clone, "--entries", tmp_path / "e", flag, value)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and flag in r.stderr, (value, r.stderr)
    assert not mark.exists()


def test_every_text_from_a_commit_shows_as_text_on_the_page(tmp_path):
    hostile = ["# heading", "<details><summary>x</summary>", "![img](https://evil.example/p.png)",
               "[click](javascript:alert(1))", "<script>alert(1)</script> & *bold* _em_ `code`",
               "a | b | c", "~~gone~~ \\*x\\*", "<https://evil.example>", "one\n[click](javascript:alert(1)) <b>*x*</b>"]
    folder = tmp_path / "h" / "vm-a"
    write_history(folder, n=len(hostile) + 3, step_at=len(hostile) - 1)
    for i, subject in enumerate(hostile):  # each a commit's subject, the step's commit included
        path = folder / f"{i:02d}{'c0ffee' * 6}.json"
        doc = json.loads(path.read_text())
        doc["cudabench_history"]["subject"] = subject
        path.write_text(json.dumps(doc))
    r = run("page", tmp_path / "h", "--out", tmp_path / "page", "--title", "<b>title</b> [x](y)")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "page" / "README.md").read_text()
    tokens = rendered(md)
    assert not [t for t in tokens if t.type == "html_block"]
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert {c.type for c in inline} <= {"text", "image", "softbreak"}, {c.type for c in inline}
    assert [c.attrs["src"] for c in inline if c.type == "image"] == ["vm-a.png"]
    assert tokens[1].type == "inline" and tokens[1].content and "".join(
        c.content for c in tokens[1].children) == "<b>title</b> [x](y)"
    moved = table_rows(md)["VectorAdd/cpu_scalar/n:1048576/real_time"][2]  # text only, asserted by table_rows
    assert moved == f"{len(hostile) - 1:02d}c0ffe: one [click](javascript:alert(1)) <b>*x*</b> (0.87x)", moved


def test_entries_must_be_plain_entry_files(tmp_path):
    _, clone = bare_with_hook(tmp_path, "")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(entry(1)))
    cases = {"link": lambda d: os.symlink(secret, d / "vm-a" / "x.json"),
             "not an entry": lambda d: (d / "vm-a" / "x.json").write_text(json.dumps({"benchmarks": []})),
             "a folder link": lambda d: (os.rmdir(d / "vm-a"), os.symlink(tmp_path, d / "vm-a")),
             "a bad machine name": lambda d: (d / "vm-a").rename(d / "-vm")}
    for what, make in cases.items():
        d = tmp_path / what.replace(" ", "-")
        os.makedirs(d / "vm-a")
        make(d)
        r = run("push", "--no-page", "--repo", clone, "--entries", d)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(d) in r.stderr, (what, r.stderr)
    assert "bench-history" not in git("branch", "-a", cwd=clone)


def test_a_corrupt_entry_on_the_branch_is_named_there_and_stops_no_push(tmp_path):
    remote, clone = bare_with_hook(tmp_path, "")
    write_history(tmp_path / "seed" / "vm-a", n=3)
    assert run("push", "--no-page", "--repo", clone, "--entries", tmp_path / "seed").returncode == 0
    git("fetch", "-q", "origin", "bench-history:bench-history", cwd=clone)
    git("checkout", "-q", "bench-history", cwd=clone)
    (clone / "vm-a" / "broken.json").write_text("{not json")
    (clone / "vm-b").mkdir()
    (clone / "vm-b" / "only.json").write_text("[1, 2]")  # JSON, not an entry: the machine's only file
    os.symlink(tmp_path / "seed" / "vm-a" / os.listdir(tmp_path / "seed" / "vm-a")[0], clone / "vm-a" / "link.json")
    git("add", "-A", cwd=clone)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by hand", cwd=clone)
    git("push", "-q", "origin", "bench-history", cwd=clone)
    write_history(tmp_path / "new" / "vm-a", n=5)
    r = run("push", "--repo", clone, "--entries", tmp_path / "new")
    assert r.returncode == 0, r.stderr
    for name in ("vm-a/broken.json", "vm-b/only.json", "vm-a/link.json"):  # a link is never read through
        assert f"left out of the page: bench-history:{name}" in r.stderr, r.stderr
    page = git("show", "bench-history:README.md", cwd=remote)
    assert "bench-history:vm-a/broken.json" in page and "vm-b/only.json" in page
    assert "/tmp" not in r.stdout + r.stderr + page and str(tmp_path) not in page


def test_a_hook_refusing_with_a_racing_word_is_one_failure_not_a_lost_race(tmp_path):
    _, clone = bare_with_hook(tmp_path, "echo 'refused: non-fast-forward pushes are not allowed here' >&2\nexit 1\n")
    write_history(tmp_path / "e" / "vm-a", n=2)
    start = time.monotonic()
    r = run("push", "--no-page", "--repo", clone, "--entries", tmp_path / "e", "--seconds", "60")
    assert r.returncode == 3 and "not allowed here" in r.stderr and "race" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and time.monotonic() - start < 30


def alive(marker):
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def test_seconds_bounds_the_whole_push_and_ends_the_hook_it_started(tmp_path):
    _, clone = bare_with_hook(tmp_path, "sleep 617 &\nsleep 618\n")
    write_history(tmp_path / "e" / "vm-a", n=2)
    start = time.monotonic()
    r = run("push", "--no-page", "--repo", clone, "--entries", tmp_path / "e", "--seconds", "5")
    took = time.monotonic() - start
    assert r.returncode == 3 and "--seconds" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert took < 20, took
    time.sleep(0.5)
    assert not alive("sleep 61[78]")
    # Stopped by a signal while the hook hangs: the hook and its children end too.
    p = subprocess.Popen([sys.executable, HISTORY, "push", "--no-page", "--repo", str(clone), "--entries",
                          str(tmp_path / "e"), "--seconds", "300"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not alive("sleep 618") and time.monotonic() < deadline:
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    time.sleep(0.5)
    assert not alive("sleep 61[78]")
