"""Could not tell: runs beside a busy loop that takes one of the CPUs end
"Inconclusive", naming the loop's process, with exit 5 (the default run's
sampler and the A/B gate, real processes); a row whose samples all ran
loaded is never same, slower or faster (compare, the machine report, the
gate); long runs show progress with an estimate. Run alone (CTest
RUN_SERIAL): the load beside them is the test's own."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from cudabench.base.errors import EXIT_INCONCLUSIVE
from cudabench.models import kind
from cudabench.models.references import Machine
from cudabench.results.gbench import ResultFile, Run
from cudabench.results.sequential import look, settle
from cudabench.results.verdicts import judge, judge_all
from conftest import BENCH, ROOT

FAKE = os.path.join(ROOT, "tests", "fakes", "fake_gbench.py")
LOOP = "cudabench-busy"  # the busy loop's process name (comm), which the line must name
needs_bench = pytest.mark.skipif(not os.access(BENCH, os.X_OK), reason=f"no bench at {BENCH}: build first")


@pytest.fixture
def busy_loop():
    """One process that keeps one CPU busy, named LOOP."""
    code = (f"import ctypes\nctypes.CDLL(None).prctl(15, b'{LOOP}', 0, 0, 0)\n"
            "while True: pass")
    p = subprocess.Popen([sys.executable, "-c", code])
    yield p
    p.kill()
    p.wait(timeout=10)


def tool(name, *args, env=None, timeout=600):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def assert_inconclusive(r, pid):
    lines = [x for x in r.stdout.splitlines() if x.startswith("Inconclusive: ")]
    assert r.returncode == EXIT_INCONCLUSIVE, r.stdout + r.stderr
    # One line, at the top and at the bottom, naming the loop and its pid.
    assert len(lines) == 2 and lines[0] == lines[1], r.stdout
    assert r.stdout.lstrip().startswith("Inconclusive: ") and r.stdout.rstrip().endswith(lines[0]), r.stdout
    assert f"`{LOOP}`, pid {pid}" in lines[0] and "rerun on an idle machine" in lines[0], lines[0]
    return lines[0]


@needs_bench
def test_the_default_run_beside_a_busy_loop_is_inconclusive_and_names_it(tmp_path, busy_loop):
    out = tmp_path / "run.json"
    r = tool("samples.py", "run", "--bench", BENCH, "--filter", "^VectorAdd/cpu_scalar/n:(4096|65536)/",
             "--processes", "4", "--most", "6", "--min-time", "0.05", "--out", out)
    line = assert_inconclusive(r, busy_loop.pid)
    assert line.startswith("Inconclusive: 2 of 2 rows ran beside other load (up to "), line
    # The file is written whole, its loaded medians shown as loaded, with no speed.
    doc = json.loads(out.read_text())
    assert doc["cudabench_samples"]["busiest"][0]["name"] == LOOP
    table = [x for x in r.stdout.splitlines() if x.startswith("VectorAdd/")]
    assert len(table) == 2 and all("(loaded)" in x and "could not tell" in x for x in table), table


@needs_bench
def test_run_bench_beside_a_busy_loop_writes_its_result_compares_and_exits_5(busy_loop):
    """The README's default command, end to end on one row: the result is
    written, the comparison with the reference still runs, and the exit is
    5 with the line naming the loop (the reference's rows this run's filter
    left out are not counted as judged)."""
    label = f"cudabench-test-inconclusive-{os.getpid()}"
    env = {"CUDABENCH_FILTER": "^VectorAdd/cpu_scalar/n:4096/", "CUDABENCH_PROCESSES": "2",
           "CUDABENCH_MIN_TIME": "0.01"}
    try:
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "run-bench.sh"), "--label", label],
                           capture_output=True, text=True, timeout=600, env={**os.environ, **env})
        assert r.returncode == EXIT_INCONCLUSIVE, r.stdout + r.stderr
        lines = [x for x in r.stdout.splitlines() if x.startswith("Inconclusive: ")]
        assert all(x.startswith("Inconclusive: 1 of 1 rows") and f"`{LOOP}`, pid {busy_loop.pid}" in x
                   for x in lines), r.stdout
        # Once at the top, once at the very end, with one count: not once per tool.
        out = [x for x in r.stdout.splitlines() if x.strip()]
        assert len(lines) == 2 and out[0] == lines[0] and out[-1] == lines[1], r.stdout
        written = glob.glob(os.path.join(ROOT, "results", label, "*", "latest.json"))
        assert len(written) == 1 and json.load(open(written[0]))["benchmarks"], r.stderr
    finally:
        shutil.rmtree(os.path.join(ROOT, "results", label), ignore_errors=True)


def test_the_gate_beside_a_busy_loop_is_inconclusive_and_names_it(tmp_path, busy_loop):
    r = tool("ab.py", "run", "--a", FAKE, "--b", FAKE, "--processes", "12", "--out", tmp_path / "out",
             "--alpha", "0.01")
    line = assert_inconclusive(r, busy_loop.pid)
    assert line.startswith("Inconclusive: 2 of 2 rows"), line
    rows = [x for x in r.stdout.splitlines() if x.startswith("Fake/")]
    assert all(" loaded " in x and "could not tell" in x for x in rows), rows
    # Its medians are marked loaded, with no speed, and no floor column: none was measured.
    assert all(x.count("(loaded)") == 2 and "%" not in x.split("could not tell")[0] for x in rows), rows
    assert len([x for x in r.stdout.splitlines() if x.startswith("Inconclusive: ")]) == 2, r.stdout
    # It stopped at the first look: the machine stayed busy.
    assert "the machine stays busy" in r.stdout and "look at 9 vs 9" not in r.stderr, r.stdout + r.stderr


def loaded(run, indexes):
    run.loaded, run.loads = list(indexes), [0.6] * len(run.samples)
    return run


def test_a_row_whose_samples_all_ran_loaded_gets_no_verdict_anywhere():
    base = Run("x", [1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    for new in ([1.0] * 6, [2.0] * 6, [0.5] * 6):  # the same, twice as slow, twice as fast
        v = judge("x", base, loaded(Run("x", list(new)), range(6)))
        assert v.verdict == "loaded" and v.change != v.change, vars(v)
        # Against machines of the kind (compare.py --reference).
        ms = [Machine(f"m{i}", "2026-01-01", {}, ResultFile(f"m{i}", {}, {"x": Run("x", [s * (1 + i / 50)
                                                                                         for s in base.samples])}))
              for i in range(3)]
        f = ResultFile("run", {}, {"x": loaded(Run("x", list(new)), range(6))}, label="run")
        whole = ResultFile("ref", {}, {"x": Run("x", base.samples * 3)}, label="ref")
        _, res = kind.judge_kind(whole, ms, f)
        assert res["run"][0].verdict == "loaded" and "(loaded)" in kind.row_cells(res["run"][0], "time")[2]
        # The gate: an open row with every sample loaded ends loaded.
        a = ResultFile("a", {}, {"x": Run("x", list(base.samples))}, label="a")
        b = ResultFile("b", {}, {"x": loaded(Run("x", list(new)), range(6))}, label="b")
        names, results = judge_all([a, b])
        decided = {}
        left = look([a, b], results["b"], {"x": 0.05}, 0.99, 6, decided)
        settle(results["b"][0], decided, 6, "budget", 0.05)
        assert left == ["x"] and results["b"][0].verdict == "loaded", vars(results["b"][0])


def test_loaded_samples_are_left_out_and_the_rest_decide():
    # Two of six loaded (the 3x ones): the four clean ones say "same".
    new = loaded(Run("x", [1.0, 1.01, 3.0, 0.99, 3.1, 1.0]), [2, 4])
    v = judge("x", Run("x", [1.0, 1.0, 1.01, 0.99, 1.0, 1.0]), new)
    assert v.verdict == "same", vars(v)


@pytest.mark.parametrize("tool_args,unit,total", [
    (("samples.py", "run", "--processes", "8", "--most", "8"), "processes", 8),
    (("ab.py", "run", "--a", FAKE, "--processes", "4", "--max-interference", "1"), "processes", 8),
])
def test_long_runs_print_progress_with_an_estimate(tmp_path, tool_args, unit, total):
    name, *rest = tool_args
    args = rest + (["--bench", FAKE, "--out", tmp_path / "r.json"] if name == "samples.py" else
                   ["--b", FAKE, "--out", tmp_path / "out"])
    r = tool(name, *args, "--max-interference", "1", env={"CUDABENCH_PROGRESS_SECONDS": "0"})
    assert r.returncode == 0, r.stderr
    steps = [x for x in r.stderr.splitlines() if f" {unit} done, " in x]
    prog = name.split(".")[0]
    assert [x.split(": ", 1)[1].split(" ")[0] for x in steps] == [f"{i}/{total}" for i in range(1, total + 1)], steps
    assert all(x.startswith(f"{prog}: ") and " so far, about " in x and " left" in x for x in steps), steps


def test_budgets_hold_beside_a_busy_loop_and_never_say_0_s_left_while_work_remains(tmp_path, busy_loop):
    """Beside a busy loop every process is loaded and would run again: the
    default run's sampler and the gate stop starting processes at their
    budget (the one under way ends), and the estimate never says "0 s left"
    while processes remain."""
    import time
    env = {"FAKE_GBENCH_SLEEP": "1", "CUDABENCH_PROGRESS_SECONDS": "0"}
    started = time.monotonic()
    r = tool("samples.py", "run", "--bench", FAKE, "--processes", "20", "--seconds", "4", "--out",
             tmp_path / "run.json", env=env)
    took = time.monotonic() - started
    assert r.returncode == EXIT_INCONCLUSIVE, r.stdout + r.stderr
    meta = json.load(open(tmp_path / "run.json"))["cudabench_samples"]
    assert 2 <= meta["processes"] < 20 and meta["budget_ended"]["planned"] == 20, meta
    assert took < 4 + 8, took  # the budget, and the process under way (20 processes and re-runs: over 30 s)
    assert "ended after" in r.stderr and "about 0 s left" not in r.stderr, r.stderr
    started = time.monotonic()
    r = tool("ab.py", "run", "--a", FAKE, "--b", FAKE, "--processes", "40", "--seconds", "5",
             "--out", tmp_path / "gate", env=env)
    took = time.monotonic() - started
    assert r.returncode == EXIT_INCONCLUSIVE, r.stdout + r.stderr
    assert took < 5 + 10, took
    assert "about 0 s left" not in r.stderr and "the budget of 5 s ended after" in r.stdout, r.stdout + r.stderr


def test_a_row_too_noisy_for_the_budget_stops_early_and_says_its_noise(tmp_path):
    """A row whose processes spread by 40% would need dozens more to know
    its median to +-5%: the default run's sampler stops it at once (no
    process beyond the first four), names it with the noise it measured
    and what +-5% would take; a steady row beside it is not named."""
    env = {"FAKE_GBENCH_LOG": str(tmp_path / "log"), "FAKE_GBENCH_STATES": "1.0,1.4,0.7,1.3,0.8,1.35"}
    r = tool("samples.py", "run", "--bench", FAKE, "--processes", "4", "--out", tmp_path / "run.json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    meta = json.load(open(tmp_path / "run.json"))["cudabench_samples"]
    assert meta["processes_run"] == 4 and list(meta["too_noisy"]) == ["Fake/steady/n:1/real_time"], meta
    noisy = meta["too_noisy"]["Fake/steady/n:1/real_time"]
    assert noisy["processes"] == 4 and noisy["halfwidth"] > 0.15 and noisy["needs"] > 12, noisy
    assert "1 row(s) too noisy between processes for +-5% within the budget" in r.stderr, r.stderr
    assert f"Fake/steady/n:1 +-{100 * noisy['halfwidth']:.0f}% (about {noisy['needs']} processes" in r.stderr
    row = next(x for x in r.stdout.splitlines() if x.startswith("Fake/steady"))
    assert "would take about" in row and not any("would take" in x for x in r.stdout.splitlines()
                                                  if x.startswith("Fake/other")), r.stdout
    # A row that more processes can narrow (one wild process in four) still gets them.
    env["FAKE_GBENCH_LOG"], env["FAKE_GBENCH_STATES"] = str(tmp_path / "log2"), "1.0,1.0,1.6,1.0"
    r = tool("samples.py", "run", "--bench", FAKE, "--processes", "4", "--out", tmp_path / "run2.json", env=env)
    meta = json.load(open(tmp_path / "run2.json"))["cudabench_samples"]
    assert r.returncode == 0 and meta["processes_run"] >= 7 and not meta["too_noisy"], meta
