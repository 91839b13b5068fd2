"""The compare tool's verdicts and exit codes on fixed fixtures
(tests/fixtures/compare, written by make_fixtures.py)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import compare  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "compare")
A = "VectorAdd/cuda_v4/n:1000000/manual_time"
B = "VectorAdd/cpu_scalar/n:1000000/real_time"


def f(name):
    return os.path.join(FIX, name)


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), *args],
                          capture_output=True, text=True)


def verdicts(*names, **kw):
    files = [compare.load(f(n), kw.get("metric", "time")) for n in names]
    for i, x in enumerate(files):
        x.label = f"f{i}"
    _, res = compare.compare(files, **kw)
    return {v.name: v for v in res["f1"]}


def test_clear_regression_is_slower_and_fails_the_gate():
    v = verdicts("base.json", "regression.json")
    assert v[A].verdict == "slower"
    assert v[A].change == pytest.approx(0.2, abs=0.01)
    assert v[A].p < 0.05
    assert v[B].verdict == "same"
    r = run(f("base.json"), f("regression.json"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "slower" in r.stderr and A in r.stderr


def test_report_only_never_fails_on_a_regression():
    r = run(f("base.json"), f("regression.json"), "--report-only")
    assert r.returncode == 0
    assert "slower" in r.stdout


def test_clear_improvement_is_faster_and_passes():
    v = verdicts("base.json", "improvement.json")
    assert v[A].verdict == "faster"
    assert v[A].change == pytest.approx(-0.2, abs=0.01)
    assert run(f("base.json"), f("improvement.json")).returncode == 0


def test_identical_runs_are_the_same():
    v = verdicts("base.json", "identical.json")
    assert all(x.verdict == "same" for x in v.values())
    assert all(x.change == 0 for x in v.values())


def test_overlapping_samples_are_noisy_not_a_regression():
    v = verdicts("base.json", "noisy.json")
    assert abs(v[A].change) > 0.05
    assert v[A].verdict == "noisy"
    assert run(f("base.json"), f("noisy.json")).returncode == 0


def test_single_repetition_cannot_be_judged():
    v = verdicts("single_base.json", "single_new.json")
    assert v[A].verdict == "noisy"
    assert "single repetition" in v[A].note
    assert run(f("single_base.json"), f("single_new.json")).returncode == 0


def test_too_few_repetitions_for_the_test_are_noisy():
    a, b = compare.Run("x", [1.0, 1.01, 0.99]), compare.Run("x", [2.0, 2.01, 1.99])
    # 3 vs 3 samples: the smallest two-sided p is 0.1, never below 0.05.
    assert compare.min_p_value(3, 3) == pytest.approx(0.1)
    assert compare.judge("x", a, b).verdict == "noisy"
    assert compare.judge("x", a, b, alpha=0.2).verdict == "slower"


def test_threshold_is_the_users():
    v = verdicts("base.json", "regression.json", threshold=0.25)
    assert v[A].verdict == "same"


def test_throughput_metric_counts_higher_as_better():
    v = verdicts("base.json", "improvement.json", metric="bytes_per_second")
    assert v[A].verdict == "faster"
    assert v[A].change < 0


def test_units_are_converted():
    v = verdicts("base.json", "base_in_ms.json")
    assert all(x.verdict == "same" for x in v.values())
    assert all(abs(x.change) < 1e-9 for x in v.values())


def test_failed_run_is_an_error_verdict():
    v = verdicts("base.json", "with_error.json")
    assert v[A].verdict == "error"
    assert "wrong result" in v[A].note


def test_another_google_benchmark_program():
    r = run(f("other_program_a.json"), f("other_program_b.json"))
    assert r.returncode == 0, r.stderr
    v = verdicts("other_program_a.json", "other_program_b.json")
    assert v["BM_StringCopy/64"].verdict == "faster"
    assert v["BM_StringCopy/4096"].verdict == "same"
    assert "host_name" in r.stdout  # the context difference is shown


@pytest.mark.parametrize("bad,message", [
    ("truncated.json", "not valid JSON"),
    ("not_gbench.json", "not Google Benchmark JSON"),
    ("unknown_unit.json", "unknown time unit"),
    ("missing.json", "cannot read"),
])
def test_bad_input_exits_2_with_a_message(bad, message):
    r = run(f("base.json"), f(bad))
    assert r.returncode == 2
    assert message in r.stderr
    assert r.stdout == ""


def test_no_benchmarks_in_common_exits_2():
    r = run(f("base.json"), f("other_program_a.json"))
    assert r.returncode == 2
    assert "no benchmarks in common" in r.stderr


def test_missing_counter_exits_2():
    r = run(f("other_program_a.json"), f("other_program_b.json"), "--metric", "bytes_per_second")
    assert r.returncode == 2
    assert "bytes_per_second" in r.stderr


def test_context_differences_head_the_report(tmp_path):
    md = tmp_path / "summary.md"
    r = run(f("base.json"), f("regression.json"), "--report-only", "--markdown", str(md))
    assert r.returncode == 0
    assert "cuda_toolkit" in r.stdout
    text = md.read_text()
    assert text.startswith("### What differs between the runs")
    assert "| cuda_toolkit | 13.0.88 | 13.2.86 |" in text
    assert "| benchmark |" in text


def test_side_by_side_for_three_files():
    r = run(f("base.json"), f("improvement.json"), f("regression.json"), "--labels", "old,fast,slow")
    assert r.returncode == 1  # the third is a regression
    line = next(l for l in r.stdout.splitlines() if l.startswith(A))
    assert "faster" in line and "slower" in line
    assert "old (baseline)" in r.stdout


def test_a_throttled_gpu_makes_a_slowdown_noisy_not_slower():
    v = verdicts("base.json", "throttled.json")
    assert v[A].change == pytest.approx(0.2, abs=0.01)
    assert v[A].verdict == "noisy"
    assert "throttled" in v[A].note and "sw_power_cap" in v[A].note and "new" in v[A].note
    assert v[B].verdict == "same"
    r = run(f("base.json"), f("throttled.json"))
    assert r.returncode == 0, r.stdout + r.stderr  # no regression is claimed
    # Either side: a throttled baseline cannot show an improvement either.
    assert verdicts("throttled.json", "base.json")[A].verdict == "noisy"


def test_measured_clocks_are_a_context_difference():
    r = run(f("base.json"), f("lower_clocks.json"), "--report-only")
    assert r.returncode == 0
    head = r.stdout.split("Benchmarks:")[0]
    assert "sm_clock_mhz (measured, median)" in head
    assert "1980" in head and "1650" in head
    assert "mem_clock_mhz" not in head  # the same in both
    assert "gpu_app_clocks_mhz" in head
    # Lower clocks without a throttle reason: still slower, and the gate fails.
    assert verdicts("base.json", "lower_clocks.json")[A].verdict == "slower"
    assert run(f("base.json"), f("lower_clocks.json")).returncode == 1
    # Same clocks: no row.
    assert "sm_clock_mhz" not in run(f("base.json"), f("identical.json")).stdout


def test_the_host_is_a_context_difference():
    r = run(f("base.json"), f("regression.json"), "--report-only")
    head = r.stdout.split("Benchmarks:")[0]
    assert "host_cpu_model" in head
    assert "AMD EPYC 7B13" in head and "Xeon(R) Platinum 8481C" in head


def test_files_of_one_name_in_different_folders_are_labelled_by_folder(tmp_path):
    # A fleet run's node1/cpu.json and node2/cpu.json: same setup, same file name.
    paths = []
    for node in ("node1", "node2"):
        (tmp_path / node).mkdir()
        p = tmp_path / node / "cpu.json"
        p.write_bytes(open(f("base.json"), "rb").read())
        paths.append(str(p))
    files = [compare.load(p) for p in paths]
    compare.set_labels(files, None)
    assert [x.label.split(" (")[-1] for x in files] == ["node1/cpu.json)", "node2/cpu.json)"]
