"""What a hostile user's inputs must not do to the Python tools (issue 45),
beyond the bad-input table (test_tools_bad_input.py): count one sample
twice, make one run three machines' worth of processes, forge a line of a
report, or leave a temporary folder or a child behind when stopped."""
import json
import shutil
import os
import signal
import subprocess
import time

import pytest

from conftest import PY, SCRIPTS
from bad_input import FAKE, tmpfs


def gbench(path, times, twice=False, context=None):
    """A run of one row with these times (us), each from a process of its own, each row twice when asked."""
    rows = [{"name": "X/a/real_time", "run_name": "X/a/real_time", "run_type": "iteration", "repetitions": len(times),
             "repetition_index": i, "process": i, "threads": 1, "iterations": 10, "real_time": t, "cpu_time": t,
             "time_unit": "us"} for i, t in enumerate(times)]
    ctx = {"host_name": "h", "gpu_name": "none", "host_cpu_model": "Intel X", "num_cpus": 2, "date": "2026-01-01"}
    doc = {"context": dict(ctx, **(context or {})), "benchmarks": [b for b in rows for _ in range(2 if twice else 1)]}
    path.write_text(json.dumps(doc))
    return str(path)


def tool(name, *args, **kw):
    return subprocess.run([PY, os.path.join(SCRIPTS, name), *map(str, args)], capture_output=True, text=True,
                          timeout=120, **kw)


def test_rows_written_twice_are_the_same_three_samples_not_six(tmp_path):
    """3 against 3 is noisy (no p can reach 0.05); the same files with
    every row twice used to be 6 against 6, slower at p=0.0046, exit 1."""
    a, b = gbench(tmp_path / "a.json", [100, 101, 102]), gbench(tmp_path / "b.json", [108, 109, 110])
    a2, b2 = (gbench(tmp_path / "a2.json", [100, 101, 102], True), gbench(tmp_path / "b2.json", [108, 109, 110], True))
    plain, doubled = tool("compare.py", a, b), tool("compare.py", a2, b2)
    assert plain.returncode == doubled.returncode == 0, doubled.stdout + doubled.stderr
    row = next(x for x in doubled.stdout.splitlines() if x.startswith("X/a/real_time"))
    assert " 3/3 " in row and "noisy" in row, row
    assert f"Note: {a2}: 3 row(s) appear twice (the same benchmark, repetition and numbers): each counted once" \
        in doubled.stdout and f"Note: {b2}: 3 row(s)" in doubled.stdout
    assert "Note:" not in plain.stdout and doubled.stderr == ""


def test_one_run_under_three_names_is_one_run_of_the_reference(tmp_path):
    """The same run as a file, a copy, a link and with its rows twice: one
    run of 3 processes, each other name said to be counted once."""
    a = gbench(tmp_path / "a.json", [100, 101, 102])
    (tmp_path / "copy.json").write_text(open(a).read())
    os.symlink(a, tmp_path / "link.json")
    twice = gbench(tmp_path / "twice.json", [100, 101, 102], True)
    refs = tmp_path / "refs"
    r = tool("compare.py", "--add-machine", a, tmp_path / "copy.json", tmp_path / "link.json", twice, "--reference", refs)
    assert r.returncode == 0, r.stderr
    for other in ("copy.json", "link.json", "twice.json"):
        assert f"{tmp_path / other}: the same run as {a}: counted once" in r.stderr
    (ref,) = refs.glob("*/reference.json")
    rows = json.loads(ref.read_text())["benchmarks"]
    assert sorted(b["repetition_index"] for b in rows) == [0, 1, 2]


def test_add_machine_in_a_read_only_folder_is_one_line(tmp_path):
    a = gbench(tmp_path / "a.json", [100, 101, 102])
    with tmpfs(tmp_path / "fs", "1m", read_only=True) as fs:
        r = tool("compare.py", "--add-machine", a, "--reference", f"{fs}/refs")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"compare: --reference {fs}/refs/") and r.stderr.endswith(
        ": cannot write there: Read-only file system\n") and r.stderr.count("\n") == 1, r.stderr


def rendered_text(md):
    """Each line of text that Markdown `md` shows (CommonMark with tables: markdown-it-py)."""
    from markdown_it import MarkdownIt
    return "\n".join("".join(c.content for c in t.children or []) for t in
                     MarkdownIt("commonmark").enable("table").parse(md) if t.type == "inline")


FORGED = "\n\x1b[32mX/a/real_time  1 ns  1 ns  1000x  0.001  3/3  faster\x1b[0m\nERROR: fake"


@pytest.mark.parametrize("where", ["labels", "machine_label", "executable"])
def test_a_crafted_label_or_path_cannot_forge_a_line_of_the_report(where, tmp_path):
    """Newlines and escapes in --labels, in a run's machine label or in a
    path it records are shown escaped in the text report (and the Markdown
    one): the same number of lines as with plain names, and no escape."""
    ctx = {"machine_label": "m" + FORGED} if where == "machine_label" else {"executable": "/x" + FORGED}
    a = gbench(tmp_path / "a.json", [100, 101, 102])
    b = gbench(tmp_path / "b.json", [100, 101, 103], context=ctx)
    labels = ["--labels", "base,new" + FORGED] if where == "labels" else []
    r = tool("compare.py", a, b, *labels, "--markdown", tmp_path / "r.md")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "r.md").read_text()
    assert "\x1b" not in md
    for text in (r.stdout, rendered_text(md)):  # the Markdown as it is read: its escapes undone
        assert "\x1b" not in text and "\\x1b[32mX/a/real_time" in text, text
        assert not [x for x in text.splitlines() if x.startswith(("ERROR", "X/a/real_time  1 ns"))], text
    assert "\\nERROR: fake" in r.stdout  # the newline shown, where Markdown makes it a space
    assert len([x for x in r.stdout.splitlines() if x.startswith("X/a/real_time")]) == 1, r.stdout


def test_a_crafted_benchmark_name_or_error_stays_on_its_line(tmp_path):
    a = gbench(tmp_path / "a.json", [100, 101, 102])
    doc = json.loads(open(a).read())
    for b in doc["benchmarks"]:
        b.update(error_occurred=True, error_message="bad" + FORGED)
    (tmp_path / "b.json").write_text(json.dumps(doc))
    r = tool("compare.py", a, tmp_path / "b.json")
    assert r.returncode == 1
    assert "\x1b" not in r.stdout + r.stderr and "\nERROR: fake" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


def test_samples_refused_by_its_bench_leaves_no_work_folder(tmp_path):
    """Exit 2 (bench refused its flags; the filter matches nothing): its
    temporary folder is removed, as it is named nowhere."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for mode in ("refuse", "empty"):
        r = tool("samples.py", "run", "--bench", FAKE, "--out", tmp_path / "s.json", "--processes", "1",
                 env={**os.environ, "TMPDIR": str(tmp), "FAKE_GBENCH_MODE": mode})
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert os.listdir(tmp) == [], os.listdir(tmp)


def test_samples_that_fails_keeps_its_work_folder_and_names_it(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = tool("samples.py", "run", "--bench", FAKE, "--out", tmp_path / "s.json", "--processes", "1",
             env={**os.environ, "TMPDIR": str(tmp), "FAKE_GBENCH_MODE": "crash"})
    assert r.returncode == 3, r.stderr
    (kept,) = os.listdir(tmp)
    assert os.path.join(str(tmp), kept) in r.stderr.splitlines()[-1]


def wait_for(path, seconds=30):
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)
    return int(path.read_text())


def started_samples(tmp_path, wrap=(), processes=1, sleep_from=0, more=("--max-interference", "1"), env=None):
    """samples.py on a bench that sleeps in a child from its process
    `sleep_from` on (the ones before finish; none runs again for the load of
    this machine, by default): (its process, the sleeping bench's process
    group, $TMPDIR)."""
    tmp, pgid = tmp_path / "tmp", tmp_path / "pgid"
    tmp.mkdir()
    cmd = [*wrap, PY, os.path.join(SCRIPTS, "samples.py"), "run", "--bench", FAKE, "--out", str(tmp_path / "s.json"),
           "--processes", str(processes), *more]
    p = subprocess.Popen(cmd, env={**os.environ, "TMPDIR": str(tmp), "FAKE_GBENCH_SLEEP": "60",
                                   "FAKE_GBENCH_SLEEP_FROM": str(sleep_from), "FAKE_GBENCH_PGID": str(pgid),
                                   "FAKE_GBENCH_LOG": str(tmp_path / "log"), **(env or {})},
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return p, wait_for(pgid), tmp


def live_members(pgid):
    """The processes of group pgid that still run (a zombie has ended: only its parent's reaping is left)."""
    out = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/stat") as f:
                state, _, group = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            out.append(int(d))
    return out


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM], ids=["HUP", "INT", "TERM"])
def test_samples_stopped_by_a_signal_removes_its_folder_and_ends_its_bench(sig, tmp_path):
    p, pgid, tmp = started_samples(tmp_path)
    assert len(os.listdir(tmp)) == 1  # its work folder, while the bench runs
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert os.listdir(tmp) == [], os.listdir(tmp)
    assert live_members(pgid) == [], "the bench's process group outlived samples.py"
    assert not (tmp_path / "s.json").exists()


def readers_of(path, tmp_path):
    """What compare, report, expect_rows and gpu_summary print of a result file."""
    (tmp_path / "res").mkdir()
    shutil.copy(path, tmp_path / "res" / "vector_add_headline.json")
    out = {"compare": tool("compare.py", path, path),
           "report": tool("report.py", path, "--out", tmp_path / "rep"),
           "expect_rows": tool("expect_rows.py", path, "^Fake/steady"),
           "gpu_summary": tool("gpu_summary.py", tmp_path / "res")}
    if out["report"].returncode == 0:
        out["report"].stdout += (tmp_path / "rep" / "report.md").read_text()
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_samples_stopped_after_a_process_finished_keeps_it_marked_partial(sig, tmp_path):
    """A step's time limit (timeout's TERM) or Ctrl-C after the first of
    three processes: the file holds that process, written whole, marked
    partial; the exit is still 128+N; every reader says partial."""
    p, pgid, _ = started_samples(tmp_path, processes=3, sleep_from=1)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert live_members(pgid) == []
    doc = json.loads((tmp_path / "s.json").read_text())
    name = signal.Signals(sig).name
    assert doc["cudabench_samples"]["partial"] == {"processes": 1, "planned": 3, "stopped_by": name}
    assert {b["repetition_index"] for b in doc["benchmarks"]} == {0} and len(doc["benchmarks"]) == 2
    said = f"partial: 1 of 3 processes ran before {name} stopped the run"
    assert said in err
    for reader, r in readers_of(tmp_path / "s.json", tmp_path).items():
        assert r.returncode == 0 and said in r.stdout, (reader, r.stdout, r.stderr)


def test_samples_stopped_while_running_a_loaded_process_again_keeps_the_loaded_one(tmp_path):
    """The first process ran beside other load, so it runs again; stopped
    then, it is kept, flagged loaded: it finished."""
    p, _, _ = started_samples(tmp_path, processes=2, sleep_from=1, more=(), env={"FAKE_GBENCH_BURN_FIRST": "1"})
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["cudabench_samples"]["partial"]["processes"] == 1
    assert all(b.get("loaded") is True for b in doc["benchmarks"]) and doc["cudabench_samples"]["loaded"] == [0]


def test_samples_stopped_by_its_process_time_limit_keeps_what_finished(tmp_path):
    p, _, _ = started_samples(tmp_path, processes=2, sleep_from=1,
                              more=("--process-seconds", "3", "--max-interference", "1"))
    _, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "still running after 3 s (--process-seconds)" in err.splitlines()[-1]
    partial = json.loads((tmp_path / "s.json").read_text())["cudabench_samples"]["partial"]
    assert partial == {"processes": 1, "planned": 2, "stopped_by": "the --process-seconds limit (3 s)"}


def test_samples_run_as_a_job_of_a_script_is_stopped_whole(tmp_path):
    """As run-bench.sh runs it (lib.sh's run_job, stop_jobs_on_signal):
    TERM to the script ends samples.py, its bench and its folder."""
    script = tmp_path / "s.sh"
    script.write_text(f'. {SCRIPTS}/lib.sh\nstop_jobs_on_signal\nrun_job "$@"\n')
    p, pgid, tmp = started_samples(tmp_path, wrap=("bash", str(script)))
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    assert p.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM)
    assert os.listdir(tmp) == [] and live_members(pgid) == []


def test_a_bench_that_leaves_a_child_behind_on_a_normal_exit_leaves_nothing_running(tmp_path):
    """The rule: every child ends when its program ends, for any reason. A
    bench (or a wrapper) that leaves a process in its group and exits 0:
    samples.py kills the group before it reaps the bench."""
    bench = tmp_path / "bench"
    bench.write_text(f"#!/bin/sh\nsleep 60 &\necho $$ > {tmp_path}/pgid\nexec {PY} {FAKE} \"$@\"\n")
    bench.chmod(0o755)
    r = tool("samples.py", "run", "--bench", bench, "--out", tmp_path / "s.json", "--processes", "1")
    assert r.returncode in (0, 5), r.stderr
    pgid = int((tmp_path / "pgid").read_text())
    assert live_members(pgid) == [], "a child of the bench outlived samples.py"
