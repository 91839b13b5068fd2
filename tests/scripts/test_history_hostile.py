"""The history writer (scripts/history.py push) against hostile input and a
hostile remote: a remote or branch that git would read as an option, commit
subjects that are Markdown or HTML, entries that are links or not entries,
a corrupt entry on the branch, a hook that refuses with a racing word, and
a hook that hangs (bounded by --seconds, stopped with all it started)."""
import json
import os
import signal
import subprocess
import sys
import time

from test_history import HISTORY, entry, git, rendered, run, table_rows, write_history


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
    git("add", "-A", cwd=clone)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by hand", cwd=clone)
    git("push", "-q", "origin", "bench-history", cwd=clone)
    write_history(tmp_path / "new" / "vm-a", n=5)
    r = run("push", "--repo", clone, "--entries", tmp_path / "new")
    assert r.returncode == 0, r.stderr
    assert "left out of the page: bench-history:vm-a/broken.json" in r.stderr and "/tmp" not in r.stderr, r.stderr
    page = git("show", "bench-history:README.md", cwd=remote)
    assert "broken.json" in page


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
