"""The A/B runner (scripts/ab.py): its interleaving, its merging of processes,
its statistics with the process as the unit, its exit codes, and the history
it keeps. Real processes run: a stand-in Google Benchmark program,
tests/fakes/fake_gbench.py."""
import json
import re
import os
import random
import subprocess
import sys
import time

import pytest

from cudabench.commands import ab
from cudabench.sampling import sampler as samples
from cudabench.results import merged
from cudabench.base.errors import EXIT_TOOL, ToolError
from cudabench.base import processes
from cudabench.results.sequential import looks
from cudabench.results.gbench import load, load_doc
from cudabench.results.stats import load_floors, median, noise_floor
from conftest import ROOT

from cudabench.base.cli import run_tool
from cudabench.results.verdicts import judge_all

FAKE = os.path.join(ROOT, "tests", "fakes", "fake_gbench.py")
STEADY = "Fake/steady/n:1/real_time"
OTHER = "Fake/other/n:1/real_time"


def run_ab(tmp_path, *extra, a_env=(), b_env=(), processes=4, sub="run"):
    log = tmp_path / "order.log"
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "ab.py"), sub, "--a", FAKE, "--b", FAKE,
           "--processes", str(processes), "--reps", "3", "--out", str(tmp_path / "out"),
           "--a-env", f"FAKE_GBENCH_LOG={log}", "--a-env", "FAKE_GBENCH_SIDE=A",
           "--b-env", f"FAKE_GBENCH_LOG={log}", "--b-env", "FAKE_GBENCH_SIDE=B",
           # CTest runs other tests beside this one: no re-runs for their load,
           # except where a test asks for them.
           "--max-interference", "1"]
    for e in a_env:
        cmd += ["--a-env", e]
    for e in b_env:
        cmd += ["--b-env", e]
    r = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    order = log.read_text().split() if log.exists() else []
    return r, order


def test_schedule_is_abba_and_balanced():
    assert "".join(ab.schedule(1)) == "AB"
    assert "".join(ab.schedule(2)) == "ABBA"
    assert "".join(ab.schedule(3)) == "ABBAAB"
    for k in range(1, 12):
        s = ab.schedule(k)
        assert s.count("A") == s.count("B") == k
        # Every pair of neighbours in time holds one process of each side.
        assert all(sorted(s[i:i + 2]) == ["A", "B"] for i in range(0, 2 * k, 2))


def test_runner_interleaves_processes_and_merges_one_sample_per_process(tmp_path):
    r, order = run_ab(tmp_path, b_env=["FAKE_GBENCH_TIME=130"])
    assert "".join(order) == "ABBAABBA", r.stderr
    a = json.loads((tmp_path / "out" / "a.json").read_text())
    steady = [b for b in a["benchmarks"] if b["run_name"] == STEADY]
    assert [b["repetition_index"] for b in steady] == [0, 1, 2, 3]
    assert all(b["repetitions_in_process"] == 3 and b["repetitions"] == 4 for b in steady)
    # One sample per process: the median of its three repetitions, counters too.
    assert all(b["real_time"] == pytest.approx(100, rel=0.003) for b in steady)
    assert all(b["bytes_per_second"] == pytest.approx(12e4, rel=0.003) for b in steady)
    assert a["cudabench_samples"]["order"] == "ABBAABBA"
    assert load(str(tmp_path / "out" / "a.json")).runs[STEADY].samples.__len__() == 4
    # 30% slower with 4 vs 4 fully separated samples: a regression, exit 1.
    assert r.returncode == 1, r.stdout + r.stderr
    assert "slower" in r.stderr and STEADY in r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(OTHER))
    assert "same" in line
    assert (tmp_path / "out" / "report.md").exists()


def test_a_process_that_ran_beside_other_load_runs_again(tmp_path):
    r, order = run_ab(tmp_path, "--max-interference", "0.05", a_env=["FAKE_GBENCH_BURN_FIRST=1"], processes=2)
    # Beside CTest's other tests, 5% of other load can last every process:
    # then "could not tell" (5), said as such, is the one right answer.
    assert r.returncode == 0 or (r.returncode == 5 and "Inconclusive: " in r.stdout + r.stderr), r.stderr
    # The first A ran beside busy processes and was run again, in its place
    # (other tests' load may add re-runs, never remove that one).
    assert "".join(order).startswith("AA"), r.stderr
    assert "process A0 ran beside" in r.stderr and "running it again" in r.stderr
    a = json.loads((tmp_path / "out" / "a.json").read_text())["cudabench_samples"]
    assert a["reruns"] >= 1 and len(a["loads"]) == 2
    # --max-interference 1 never runs a process again.
    (tmp_path / "order.log").unlink()
    r, order = run_ab(tmp_path, "--max-interference", "1", a_env=["FAKE_GBENCH_BURN_FIRST=1"], processes=2)
    assert "".join(order) == "ABBA" and r.returncode == 0


def test_confirm_runs_what_came_out_slower_again_and_counts_it_only_twice(tmp_path):
    # B is slow in its first four processes only (a burst): the first run says
    # slower, the confirming run of that benchmark alone does not.
    burst = ",".join(["1.0", "1.3", "1.3", "1.0", "1.0", "1.3", "1.3"] + ["1.0"] * 9)
    r, order = run_ab(tmp_path, "--confirm", b_env=[f"FAKE_GBENCH_STATES={burst}"])
    assert "".join(order) == "ABBAABBA" * 2, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert "confirming 1 slower benchmark(s)" in r.stderr and "no slowdown confirmed" in r.stderr
    confirm = json.loads((tmp_path / "out" / "confirm" / "b.json").read_text())
    assert {b["run_name"] for b in confirm["benchmarks"]} == {STEADY}
    # A slowdown that holds is confirmed: exit 1.
    (tmp_path / "order.log").unlink()
    r, order = run_ab(tmp_path, "--confirm", b_env=["FAKE_GBENCH_TIME=130"])
    assert r.returncode == 1 and len(order) == 16, r.stdout + r.stderr
    assert ab.name_prefix(STEADY) == "^Fake/steady/n:1/"


def test_same_build_on_both_sides_passes(tmp_path):
    r, order = run_ab(tmp_path, processes=3)
    assert "".join(order) == "ABBAAB"
    assert r.returncode == 0, r.stdout + r.stderr
    assert not [x for x in r.stdout.splitlines() if x.startswith("Fake/") and " slower " in x], r.stdout


@pytest.mark.parametrize("mode,code,words", [
    ("crash", 3, "failed without a result (signal 11)"),
    ("refuse", 2, "refused its arguments: fake_gbench: unknown flag"),
    ("wrong", 1, "failed their check"),
    ("empty", 2, "matches no benchmark"),
])
def test_exit_codes_when_a_side_fails(tmp_path, mode, code, words):
    r, _ = run_ab(tmp_path, b_env=[f"FAKE_GBENCH_MODE={mode}"], processes=2)
    assert r.returncode == code, r.stdout + r.stderr
    assert words in r.stderr
    assert "Traceback" not in r.stderr


def test_a_failed_check_in_the_baseline_alone_is_reported_not_failed_on(tmp_path):
    r, _ = run_ab(tmp_path, a_env=["FAKE_GBENCH_MODE=wrong"], processes=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "benchmark(s) of A (A) failed their check" in r.stderr


def test_bad_input_is_exit_2_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ab.py"), "run", "--a", "/no/such/bench",
                        "--b", FAKE], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == "ab: --a /no/such/bench: no such executable (build it first)"
    (tmp_path / "floors.json").write_text('{"benchmarks": {"x": {"process_medians": [1, -2]}}}')
    r, _ = run_ab(tmp_path, "--floors", str(tmp_path / "floors.json"))
    assert r.returncode == 2 and "process_medians" in r.stderr


def test_process_entries_take_medians_keep_throttling_and_errors():
    doc = {"benchmarks": [
        {"name": "X/real_time", "run_type": "iteration", "real_time": t, "time_unit": "us", "iterations": 10,
         "sm_clock_mhz": c, "label": lab}
        for t, c, lab in ((10, 1980, "ok"), (30, 1700, "throttled: hw_slowdown"), (20, 1900, "ok"))] + [
        {"name": "X/real_time_median", "run_name": "X/real_time", "run_type": "aggregate", "real_time": 99},
        {"name": "Y", "run_type": "iteration", "error_occurred": True, "error_message": "wrong"}]}
    e = {x["run_name"]: x for x in merged.process_entries(doc, 5)}
    assert e["X/real_time"]["real_time"] == 20 and e["X/real_time"]["sm_clock_mhz"] == 1900
    assert e["X/real_time"]["repetition_index"] == 5 and e["X/real_time"]["iterations"] == 10
    assert e["X/real_time"]["label"].startswith("throttled: ")
    assert e["Y"]["error_occurred"] and e["Y"]["error_message"] == "wrong"


def bimodal_processes(states, reps, jitter, seed):
    """One Google Benchmark document per process: each process draws a state
    (1.0 or 1.2) that holds for all its repetitions, as memory placement or
    frequency do."""
    rng = random.Random(seed)
    docs = []
    for s in states:
        docs.append({"context": {}, "benchmarks": [
            {"name": "B/real_time", "run_type": "iteration", "time_unit": "us", "iterations": 100,
             "real_time": 100 * s * (1 + rng.uniform(-jitter, jitter))} for _ in range(reps)]})
    return docs


def test_bimodal_processes_fool_the_within_process_test_but_not_the_per_process_one(tmp_path):
    def write(name, doc):
        p = tmp_path / name
        p.write_text(json.dumps(doc))
        f = load(str(p))
        f.label = name
        return f

    # The old way: one process per side, its repetitions as samples. A drew
    # the fast state, B the slow one: 15 tight repetitions each.
    old_a = bimodal_processes([1.0], 15, 0.002, 1)[0]
    old_b = bimodal_processes([1.2], 15, 0.002, 2)[0]
    _, res = judge_all([write("old_a", old_a), write("old_b", old_b)])
    old = res["old_b"][0]
    assert old.verdict == "slower" and old.p < 1e-4

    # The new way. An A/A calibration on this machine: 40 processes, half in
    # each state, their medians stored as the floors.
    cal = merged.merge(bimodal_processes([1.0, 1.2] * 20, 3, 0.01, 3), "A", {})
    pool = [b["real_time"] for b in cal["benchmarks"]]
    floors = {"B/real_time": ab.relative(pool)}
    # A run of 10 + 10 processes of the same code: 4 slow ones on A, 6 on B,
    # so the medians differ by 20%, as in the old run.
    a = write("new_a", merged.merge(bimodal_processes([1.0] * 6 + [1.2] * 4, 3, 0.002, 4), "A", {}))
    b = write("new_b", merged.merge(bimodal_processes([1.0] * 4 + [1.2] * 6, 3, 0.002, 5), "B", {}))
    _, res = judge_all([a, b], floors=floors)
    new = res["new_b"][0]
    assert new.change == pytest.approx(0.2, abs=0.01)
    assert new.floor > new.change
    assert new.verdict == "same" and new.note == "within the noise floor"
    # Without the floor the same processes are not called slower either: the
    # process medians overlap, so Mann-Whitney finds nothing.
    _, res = judge_all([a, b])
    assert res["new_b"][0].verdict == "noisy"


def test_noise_floor_follows_spread_and_sample_count():
    rng = random.Random(7)
    narrow = [1 + rng.gauss(0, 0.02) for _ in range(40)]
    wide = [1 + rng.gauss(0, 0.08) for _ in range(40)]
    assert noise_floor(narrow, 10, 10) == noise_floor(narrow, 10, 10)  # deterministic
    assert noise_floor(wide, 10, 10) > 2 * noise_floor(narrow, 10, 10)
    assert noise_floor(wide, 20, 20) < noise_floor(wide, 5, 5)
    assert noise_floor([1.0, 1.1, 0.9], 3, 3) != noise_floor([1.0, 1.1, 0.9], 3, 3)  # nan: too few


def test_a_change_beyond_threshold_but_within_floor_is_same_and_beyond_both_is_slower(tmp_path):
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"benchmarks": {STEADY: {"process_medians": [0.9, 1.1] * 10}}}))
    r, _ = run_ab(tmp_path, "--floors", str(floors), b_env=["FAKE_GBENCH_TIME=110"])
    line = next(x for x in r.stdout.splitlines() if x.startswith(STEADY))
    assert r.returncode == 0 and " same " in line and "cannot gate a change under 22% here" in line, r.stdout
    r, _ = run_ab(tmp_path, "--floors", str(floors), b_env=["FAKE_GBENCH_TIME=160"])
    assert r.returncode == 1, r.stdout + r.stderr


def test_calibrate_stores_relative_process_medians(tmp_path):
    out = tmp_path / "floors.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ab.py"), "calibrate", "--bench", FAKE,
                        "--processes", "3", "--reps", "2", "--floors-out", str(out), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=dict(os.environ, FAKE_GBENCH_STATES="1.0,1.1,0.9",
                                                  FAKE_GBENCH_LOG=str(tmp_path / "log")))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    pool = doc["benchmarks"][STEADY]["process_medians"]
    assert len(pool) == 6 and median(pool) == pytest.approx(1.0)
    assert max(pool) / min(pool) == pytest.approx(1.1 / 0.9, rel=0.01)
    assert load_floors(str(out))[OTHER]


def test_history_keeps_one_file_per_commit_and_makes_its_page(tmp_path):
    hist = tmp_path / "h" / "hist"
    c = subprocess.run(["git", "rev-list", "--reverse", "-4", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                       check=True).stdout.split()  # four commits of this checkout, oldest first
    # c0 and c1 take 100 us, c2 and c3 140: c2 is the slow-down.
    for t_a, t_b, rev_a, rev_b in ((100, 100, c[0], c[1]), (100, 140, c[1], c[2]), (140, 140, c[2], c[3])):
        r, _ = run_ab(tmp_path, "--history", str(hist), "--rev-a", rev_a, "--rev-b", rev_b,
                      a_env=[f"FAKE_GBENCH_TIME={t_a}"], b_env=[f"FAKE_GBENCH_TIME={t_b}"], processes=4)
        assert r.returncode == (1 if rev_b == c[2] else 0), r.stdout + r.stderr
    assert sorted(os.listdir(hist)) == sorted(f"{x}.json" for x in c)
    c2 = json.loads((hist / f"{c[2]}.json").read_text())["cudabench_history"]
    assert c2["parent"] == c[1] and c2["verdicts"][STEADY]["verdict"] == "slower"
    # A revision that is no commit is bad input, and nothing is written.
    r, _ = run_ab(tmp_path, "--history", str(tmp_path / "none"), "--rev-a", "nosuch", "--rev-b", c[3])
    assert r.returncode == 2 and r.stderr.startswith("ab: --rev-a nosuch: not a commit") and r.stderr.count("\n") == 1
    assert not (tmp_path / "none").exists()
    out = tmp_path / "page"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "history.py"), "page", str(tmp_path / "h"),
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (out / "hist.png").stat().st_size > 10000
    md = (out / "README.md").read_text()
    assert "## hist" in md and STEADY in md
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "history.py"), "page",
                        str(tmp_path / "none"), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_compare_without_scipy_says_how_in_one_line_and_exits_3():
    fix = os.path.join(ROOT, "tests", "fixtures", "compare")
    args = [sys.executable, "-S", os.path.join(ROOT, "scripts", "compare.py"),
            os.path.join(fix, "base.json"), os.path.join(fix, "regression.json")]
    r = subprocess.run(args, capture_output=True, text=True,
                       env=dict(os.environ, CUDABENCH_VENV="/nonexistent", PYTHONPATH=""))
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "needs scipy" in r.stderr and "scripts/setup.sh" in r.stderr
    # With the project's venv there, it re-runs itself with it: a real comparison (of files of one process
    # each: the ratio, no verdict).
    if sys.prefix == sys.base_prefix:
        return  # these tests run outside a venv (the GPU machine's python3): nothing to re-run with
    venv = sys.prefix
    r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, CUDABENCH_VENV=venv,
                                                                      PYTHONPATH=""))
    assert r.returncode == 0 and "0.83x" in r.stdout and "undecided" in r.stdout, r.stdout + r.stderr


def test_an_internal_error_is_never_exit_1(capsys):
    assert run_tool("compare", lambda: {}["missing"]) == EXIT_TOOL
    assert "compare: internal error: KeyError" in capsys.readouterr().err


def fake_b(tmp_path, body):
    """A bench for side B: a python script whose `body` runs with `out` (the
    --benchmark_out path), `n` (this script's run count, from 0) and `fake()`
    (hand over to fake_gbench.py with these arguments)."""
    path = tmp_path / "fake_b.py"
    path.write_text(f"#!{sys.executable}\n" + "\n".join([
        "import json, os, sys",
        f"count = {str(tmp_path / 'b.count')!r}",
        "n = os.path.getsize(count) if os.path.exists(count) else 0",
        "open(count, 'a').write('x')",
        "out = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark_out='))",
        f"fake = lambda args=sys.argv[1:]: os.execv(sys.executable, [sys.executable, {FAKE!r}, *args])",
        body]) + "\n")
    path.chmod(0o755)
    return str(path)


def test_a_benchmark_that_b_no_longer_runs_fails_the_gate(tmp_path):
    b = fake_b(tmp_path, "fake([a if not a.startswith('--benchmark_filter=') else '--benchmark_filter=steady'"
                         " for a in sys.argv[1:]])")
    r, _ = run_ab(tmp_path, "--b", b, processes=2)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"missing from the new run: {OTHER}" in r.stderr and "Traceback" not in r.stderr
    assert "missing" in next(x for x in r.stdout.splitlines() if x.startswith(OTHER))
    assert OTHER in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("body,words", [
    ("json.dump([1, 2], open(out, 'w'))", "no 'benchmarks' list"),
    ("json.dump({'benchmarks': [{'real_time': 1}]}, open(out, 'w'))", "benchmarks[0] has no name"),
    ("open(out, 'w').write('{\"benchmarks\": [')", "not valid JSON"),
])
def test_a_malformed_result_names_the_process_and_its_log(tmp_path, body, words):
    r, _ = run_ab(tmp_path, "--b", fake_b(tmp_path, body), processes=2)
    assert r.returncode == 3, r.stdout + r.stderr
    log = tmp_path / "out" / "processes" / "look1" / "B00.stderr"
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "ab: process 0 of B (" in r.stderr and words in r.stderr and f"log: {log}" in r.stderr


def test_a_b_that_exits_2_after_good_processes_failed_it_did_not_refuse(tmp_path):
    b = fake_b(tmp_path, "sys.exit(2) if n == 2 else fake()")
    r, order = run_ab(tmp_path, "--b", b, processes=3)  # ABBAAB: the third B exits 2
    assert r.returncode == 3, r.stdout + r.stderr
    assert "process 2 of B" in r.stderr and "failed (exit 2) after 2 good one(s)" in r.stderr
    assert str(tmp_path / "out" / "processes" / "look1" / "B02.stderr") in r.stderr and "refused" not in r.stderr
    # Its first process exiting 2: it refuses these flags.
    (tmp_path / "b.count").unlink()
    r, _ = run_ab(tmp_path, "--b", fake_b(tmp_path, "print('no such flag', file=sys.stderr); sys.exit(2)"))
    assert r.returncode == 2 and "refused its arguments: no such flag" in r.stderr, r.stderr


def test_the_load_share_stays_within_0_and_1(monkeypatch):
    # /proc/stat counts whole ticks: a short process can see two ticks of
    # busy CPUs in less wall time than that.
    stats = iter([(100.0, 5.0, 1000.0), (100.02, 5.0, 1000.02), (100.0, 5.0, 1000.0), (100.0, 5.3, 1000.2)])
    monkeypatch.setattr(processes, "proc_stat", lambda: next(stats))
    for _ in range(2):
        share = processes.LoadMeter().share()
        assert 0.0 <= share <= 1.0


def hold(folder, text):
    """Hold folder/.lock as another run would (flock), saying `text`; the open file."""
    import fcntl
    folder.mkdir(parents=True, exist_ok=True)
    f = open(folder / ".lock", "a+")
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    f.truncate(0)
    f.write(text)
    f.flush()
    return f


def test_a_second_run_into_one_out_exits_2_at_once_naming_the_first(tmp_path):
    """Two real runs into one --out: the second used to replace the first's files and exit 0."""
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "ab.py"), "run", "--a", FAKE, "--b", FAKE,
           "--max-interference", "1", "--out", str(out)]
    first = subprocess.Popen(cmd + ["--processes", "40"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while f"pid {first.pid}," not in ((out / ".lock").read_text() if (out / ".lock").exists() else ""):
            assert time.monotonic() < deadline and first.poll() is None, "the first run never took its lock"
            time.sleep(0.05)
        second = subprocess.run(cmd + ["--processes", "2"], capture_output=True, text=True, timeout=60)
        _, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 2, second.stderr
    assert second.stderr.strip().startswith(f"ab: another run holds {out} (pid {first.pid}, started "), second.stderr
    assert first.returncode == 0, err
    assert json.loads((out / "a.json").read_text())["cudabench_samples"]["processes"] >= 6  # the first run's


@pytest.mark.parametrize("cmd", [["run", "--a", FAKE, "--b", FAKE], ["calibrate", "--bench", FAKE, "--floors-out", "F"],
                                 ["trials", "2", "--a", FAKE, "--b", FAKE]])
def test_every_subcommand_that_writes_into_out_holds_it(tmp_path, cmd):
    out = tmp_path / "out"
    held = hold(out, "pid 4242, started today")
    (out / "a.json").write_text("the first run's\n")
    cmd = [str(tmp_path / "floors.json") if x == "F" else x for x in cmd]
    try:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ab.py"), *cmd, "--processes", "2",
                            "--out", str(out)], capture_output=True, text=True, timeout=60)
    finally:
        held.close()
    assert r.returncode == 2 and r.stderr.strip() == \
        f"ab: another run holds {out} (pid 4242, started today): wait for it, or stop it", r.stderr
    assert (out / "a.json").read_text() == "the first run's\n" and not (tmp_path / "floors.json").exists()


def test_a_lock_its_parent_holds_is_the_runs_own(tmp_path):
    """regress.sh holds build/regress/.lock and runs ab.py --out build/regress (its child, fd 9 closed)."""
    held = hold(tmp_path / "out", f"pid {os.getpid()}, started today")
    try:
        r, order = run_ab(tmp_path, processes=2)
    finally:
        held.close()
    assert r.returncode == 0 and "".join(order) == "ABBA", r.stderr


def test_samples_run_holds_its_out_file(tmp_path):
    out = tmp_path / "latest.json"
    held = hold(tmp_path, "pid 4242, started today")
    os.rename(tmp_path / ".lock", tmp_path / "latest.json.lock")
    try:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "samples.py"), "run", "--bench", FAKE,
                            "--out", str(out)], capture_output=True, text=True, timeout=60)
    finally:
        held.close()
    assert r.returncode == 2 and r.stderr.strip().startswith(f"samples: another run holds {out} (pid 4242"), r.stderr
    assert not out.exists()


def test_with_confirm_a_row_missing_from_b_still_fails_the_gate(tmp_path):
    """--confirm ran only the slower rows again: a slowdown it did not find
    again let a row missing from B pass."""
    burst = ",".join(["1.0", "1.3", "1.3", "1.0", "1.0", "1.3", "1.3"] + ["1.0"] * 9)
    b = fake_b(tmp_path, "fake([a if not a.startswith('--benchmark_filter=') else '--benchmark_filter=steady'"
                         " for a in sys.argv[1:]])")
    r, _ = run_ab(tmp_path, "--b", b, "--confirm", b_env=[f"FAKE_GBENCH_STATES={burst}"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"missing from the new run: {OTHER}" in r.stderr


def test_a_process_that_fails_without_a_word_on_a_full_disk_says_so(tmp_path, monkeypatch):
    bench = tmp_path / "bench.sh"
    bench.write_text("#!/bin/sh\nexit 3\n")  # bench on a full disk: its one line is lost with its log
    bench.chmod(0o755)
    full = os.statvfs_result((4096, 4096, 100, 0, 0, 100, 0, 0, 0, 255))
    monkeypatch.setattr(samples.os, "statvfs", lambda path: full)
    with pytest.raises(ToolError, match=f"failed without a result \\(exit 3\\): no space left on device "
                                                f"in {tmp_path} \\(0 KiB free\\), so its log is empty"):
        samples.run_process(samples.Arm("B", str(bench)), 0, samples.Sampling(), str(tmp_path))
    with pytest.raises(ToolError, match=f"^no space left on device in {tmp_path}"):
        samples.run_schedule({"B": samples.Arm("B", str(bench))}, ["B"], samples.Sampling(), str(tmp_path))


def test_skipped_repetitions_give_no_sample_and_a_skipped_entry():
    skipped = {"name": "S", "run_type": "iteration", "skipped": True, "skip_message": "needs 2 GPUs",
               "real_time": 0, "time_unit": "us", "iterations": 0}
    doc = {"benchmarks": [skipped, skipped, dict(skipped, name="P"), {"name": "P", "run_type": "iteration",
                                                                      "real_time": 7, "time_unit": "us"}]}
    e = {x["run_name"]: x for x in merged.process_entries(doc, 0)}
    assert e["S"]["skipped"] is True and e["S"]["skip_message"] == "needs 2 GPUs"
    assert "skipped" not in e["P"] and e["P"]["real_time"] == 7 and e["P"]["repetitions_in_process"] == 1
    runs = load_doc({"benchmarks": list(e.values())}, "merged").runs
    assert runs["S"].skipped == "needs 2 GPUs" and not runs["S"].samples and runs["P"].samples == [7e-6]


def test_the_gate_looks_as_its_processes_grow_by_a_third():
    assert looks(40) == [6, 9, 13, 18, 25, 34, 40]
    assert looks(3) == [3] and looks(7) == [6, 7]


def test_the_gate_catches_a_ten_percent_slowdown_at_its_first_look(tmp_path):
    r, order = run_ab(tmp_path, b_env=["FAKE_GBENCH_TIME=110"], processes=40)
    assert r.returncode == 1, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(STEADY))
    assert " slower " in line and "after 6 vs 6 processes" in line, line
    assert len(order) == 12  # both rows decided at the first look: no more processes


def test_the_gate_stops_sampling_a_decided_row_and_calls_an_unresolved_one_undecided(tmp_path):
    # B's steady row is bimodal, half its processes 20% faster and half 25%
    # slower: no number of processes settles it; the control row is the same.
    r, order = run_ab(tmp_path, b_env=["FAKE_GBENCH_STATES=0.8,1.25"], processes=13)
    assert r.returncode == 0, r.stdout + r.stderr
    steady = next(x for x in r.stdout.splitlines() if x.startswith(STEADY))
    # What the runner could tell, and what 5% would need, at the spread it measured (~20% between processes).
    size = re.search(r"could tell a change of (\d+)% or more within the budget \(150 s, at most 13 processes a "
                     r"side; 80% of the time\); 5% would need about (\d+) processes a side, (\d+) s", steady)
    assert size and int(size.group(1)) > 5 and int(size.group(2)) > 13, steady
    assert "a longer budget cannot buy it; a quieter runner can" in r.stdout.splitlines()[0], r.stdout[:400]
    assert r.stdout.startswith("Could not tell 1 row(s) within the budget: at the noise measured, the smallest "
                               f"change this runner could tell is {size.group(1)}% (Fake/steady/n:1)"), r.stdout[:300]
    other = next(x for x in r.stdout.splitlines() if x.startswith("Fake/other"))
    assert " undecided " in steady and "could not tell" in steady and "after 13 vs 13 processes" in steady, steady
    assert "(13 processes a side)" in steady
    assert " same " in other and "after 6 vs 6 processes" in other, other
    # Decided at the first look, the control row left the later processes.
    later = json.loads((tmp_path / "out" / "processes" / "look2" / "B00.json").read_text())
    assert {b["run_name"] for b in later["benchmarks"]} == {STEADY}
    assert len(order) == 26
    assert "ab: look at 6 vs 6 processes" in r.stderr and "1 row(s) decided, 1 open" in r.stderr


def test_a_row_that_stays_undecided_fails_only_when_asked(tmp_path):
    r, _ = run_ab(tmp_path, "--fail-undecided", b_env=["FAKE_GBENCH_STATES=0.8,1.25"], processes=6)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "ab: could not tell 1 row(s) within the budget (--fail-undecided)" in r.stderr
    r, _ = run_ab(tmp_path, "--fail-undecided", processes=6)  # every row decided: nothing to fail
    assert r.returncode == 0, r.stdout + r.stderr
