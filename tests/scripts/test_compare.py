"""The compare tool's verdicts and exit codes on fixed fixtures
(tests/fixtures/compare, written by make_fixtures.py)."""
import functools
import json
import os
import subprocess
import tempfile
import sys

import pytest

from cudabench.base.errors import BadInput
from cudabench.base import files
from cudabench.base.files import MAX_JSON_BYTES, check_writable, read_json, write_whole
from cudabench.base.text import fmt_speed, md_cell, speed_of, table
from cudabench.results.gbench import Run, load
from cudabench.results.stats import min_p_value
from cudabench.results.context import set_labels
from cudabench.results.verdicts import judge
from conftest import ROOT

from cudabench.results.verdicts import judge_all

FIX = os.path.join(ROOT, "tests", "fixtures", "compare")
A = "VectorAdd/cuda_v4/n:1000000/manual_time"
B = "VectorAdd/cpu_scalar/n:1000000/real_time"


def f(name):
    return os.path.join(FIX, name)


@functools.cache
def p(name):
    """The fixture `name` as a file of many processes (one per repetition, as
    scripts/samples.py writes them): the samples a verdict may rest on."""
    doc = read_json(f(name))
    for b in doc["benchmarks"]:
        b["process"] = b.get("repetition_index", 0)
    path = os.path.join(tempfile.mkdtemp(prefix="cudabench-processes."), name)
    write_whole(path, json.dumps(doc))
    return path


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), *args],
                          capture_output=True, text=True)


def verdicts(*names, **kw):
    files = [load(f(n), kw.get("metric", "time")) for n in names]
    for i, x in enumerate(files):
        x.label = f"f{i}"
    _, res = judge_all(files, **kw)
    return {v.name: v for v in res["f1"]}


def test_clear_regression_is_slower_and_fails_the_gate():
    v = verdicts("base.json", "regression.json")
    assert v[A].verdict == "slower"
    assert v[A].change == pytest.approx(0.2, abs=0.01)
    assert v[A].p < 0.05
    assert v[B].verdict == "same"
    r = run(p("base.json"), p("regression.json"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "slower" in r.stderr and A in r.stderr


def test_repetitions_of_one_process_get_the_ratio_and_no_verdict():
    """Two of Google Benchmark's own files (repetitions inside one process
    each) would call the regression slower; they get its ratio, no verdict
    (not even "same" for the rows that did not move),
    and one line saying why and which command takes samples from processes."""
    r = run(f("base.json"), f("regression.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(x for x in r.stdout.splitlines() if x.startswith(A))
    assert " 0.83x " in row and "undecided" in row and "slower" not in row, row
    why = [x for x in r.stdout.splitlines() if "repetitions inside one process" in x]
    assert len(why) == 1 and "scripts/samples.py run" in why[0], r.stdout
    assert "0 rows slower beyond the bar, 0 the same, 0 faster, 3 undecided" in r.stdout, r.stdout


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
    a, b = Run("x", [1.0, 1.01, 0.99]), Run("x", [2.0, 2.01, 1.99])
    # 3 vs 3 samples: the smallest two-sided p is 0.1, never below 0.05.
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert judge("x", a, b).verdict == "noisy"
    assert judge("x", a, b, alpha=0.2).verdict == "slower"


def test_threshold_is_the_users():
    v = verdicts("base.json", "regression.json", threshold=0.25)
    assert v[A].verdict == "same"


def test_throughput_metric_counts_higher_as_better():
    v = verdicts("base.json", "improvement.json", metric="bytes_per_second")
    assert v[A].verdict == "faster"
    assert v[A].change < 0
    # A rate's change is in time's terms, so that its speed is the rates' ratio.
    assert speed_of(v[A].change) == pytest.approx(v[A].new / v[A].base)


def test_every_comparison_shows_a_speed_as_the_machine_report_does():
    """One convention: the baseline's time over the new one's, 0.83x for
    20% more time, in compare's two-file table, its side by side and the
    machine report alike; never "+20.0%"."""
    two = next(l for l in run(p("base.json"), p("regression.json")).stdout.splitlines() if l.startswith(A))
    three = next(l for l in run(p("base.json"), p("improvement.json"), p("regression.json")).stdout.splitlines()
                 if l.startswith(A))
    assert " 0.83x " in two and "%" not in two, two
    assert "(0.83x, slower)" in three and "(1.2" in three and "%" not in three, three
    assert [fmt_speed(x) for x in (0.0016, 0.93, 1.0, 250, float("nan"))] == ["0.0016x", "0.93x", "1.00x", "250x", "-"]
    # a new time of 0 (the fuzzer's find: change -1 divided by zero) or a negative one
    assert speed_of(-1.0) == float("inf") and speed_of(-2.0) != speed_of(-2.0)
    assert fmt_speed(speed_of(-1.0)) == "-" and fmt_speed(speed_of(-2.0)) == "-"


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
    assert text.startswith("### What differs between the machines")  # the fixtures are of two CPUs
    assert "| cuda_toolkit | 13.0.88 | 13.2.86 |" in text
    assert "| benchmark |" in text


def test_side_by_side_for_three_files():
    r = run(p("base.json"), p("improvement.json"), p("regression.json"), "--labels", "old,fast,slow")
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
    assert run(p("base.json"), p("lower_clocks.json")).returncode == 1
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
    files = [load(p) for p in paths]
    set_labels(files, None)
    assert [x.label.split(" (")[-1] for x in files] == ["node1/cpu.json)", "node2/cpu.json)"]


def variant(tmp_path, name, mutate, source="base.json"):
    """A fixture with `mutate(doc)` applied, written to tmp_path/name."""
    import json
    with open(f(source)) as fh:
        doc = json.load(fh)
    mutate(doc)
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return str(p)


def drop(pattern):
    return lambda doc: doc.update(benchmarks=[b for b in doc["benchmarks"] if pattern not in b["name"]])


def test_a_benchmark_missing_from_the_new_file_is_named_and_fails_the_gate(tmp_path):
    new = variant(tmp_path, "new.json", drop("cpu_scalar"))
    md = tmp_path / "r.md"
    r = run(f("base.json"), new, "--markdown", str(md))
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "missing from the new run" in r.stderr and B in r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(B))
    assert "missing" in line
    assert any(x.startswith(f"| {B} |") and "missing" in x for x in md.read_text().splitlines())
    assert run(f("base.json"), new, "--report-only").returncode == 0
    # Only the benchmarks the filter matches count.
    r = run(f("base.json"), new, "--filter", "cuda_v4")
    assert r.returncode == 0 and B not in r.stdout, r.stdout + r.stderr


def test_a_benchmark_only_in_the_new_file_is_new_not_a_failure(tmp_path):
    r = run(variant(tmp_path, "old.json", drop("cpu_scalar")), f("base.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith(B))
    assert "new" in line and "not in the baseline" in line
    # Three files: missing in one, there in the other.
    r = run(f("base.json"), variant(tmp_path, "new.json", drop("cpu_scalar")), f("identical.json"))
    assert r.returncode == 1 and "missing" in r.stderr
    assert "missing" in next(x for x in r.stdout.splitlines() if x.startswith(B))


def test_the_filter_applies_before_the_metric_is_read(tmp_path):
    no_bps = variant(tmp_path, "nobps.json", lambda d: [b.pop("bytes_per_second", None) for b in d["benchmarks"]
                                                         if "cuda_v4" in b["name"]])
    r = run(f("base.json"), no_bps, "--metric", "bytes_per_second", "--filter", "cpu_scalar")
    assert r.returncode == 0, r.stderr
    assert B in r.stdout and A not in r.stdout
    assert load(no_bps, "bytes_per_second", "cpu_scalar").runs.keys() == {B}
    assert run(f("base.json"), no_bps, "--metric", "bytes_per_second").returncode == 2


def test_a_tables_text_renders_as_text_and_the_tools_own_markup_as_markup():
    from markdown_it import MarkdownIt
    from cudabench.base.text import Markup
    md = table(["run", "speed"], [["<b>x</b> *y* [l](javascript:z) cuda_toolkit _e_", Markup("**1.20 slower**")]], True)
    cells = [t for t in MarkdownIt("commonmark").enable("table").parse(md) if t.type == "inline"][2:]
    assert [c.type for c in cells[0].children] == ["text"], cells[0].children
    assert cells[0].children[0].content == "<b>x</b> *y* [l](javascript:z) cuda_toolkit _e_"
    assert [c.type for c in cells[1].children if c.content or c.type != "text"] == ["strong_open", "text", "strong_close"]


def test_markdown_cells_escape_pipes_and_newlines(tmp_path):
    assert md_cell("a|b\nc") == "a\\|b c"
    assert table(["x|y"], [["1|2"]], True).splitlines()[0] == "| x\\|y |"
    odd = "VectorAdd/a|b/n:1"
    piped = variant(tmp_path, "piped.json", lambda d: [b.update(name=odd, run_name=odd) for b in d["benchmarks"]
                                                        if "cpu_scalar" in b["name"]])
    md = tmp_path / "r.md"
    r = run(piped, piped, "--labels", "old|er,new", "--markdown", str(md), "--report-only")
    assert r.returncode == 0, r.stderr
    import re
    rows = [x for x in md.read_text().splitlines() if x.startswith("|")]
    assert any("old\\|er" in x for x in rows) and any("VectorAdd/a\\|b/n:1" in x for x in rows)
    head = next(x for x in rows if x.startswith("| benchmark |"))
    cols = len(re.findall(r"(?<!\\)\|", head))
    for x in rows[rows.index(head):]:
        assert len(re.findall(r"(?<!\\)\|", x)) == cols, x


def test_write_whole_writes_through_symlinks_and_keeps_them(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "report.md"
    target.write_text("old")
    (tmp_path / "link1").symlink_to(target)
    (tmp_path / "link2").symlink_to(tmp_path / "link1")  # a chain
    check_writable(str(tmp_path / "link2"), "--markdown")
    write_whole(str(tmp_path / "link2"), "new")
    assert (tmp_path / "link2").is_symlink() and (tmp_path / "link1").is_symlink()
    assert target.read_text() == "new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "real" / "later.md")
    write_whole(str(dangling), "made")
    assert dangling.is_symlink() and (tmp_path / "real" / "later.md").read_text() == "made"
    assert oct((tmp_path / "real" / "later.md").stat().st_mode & 0o777) == "0o644"
    assert not [p for _, _, ns in os.walk(tmp_path) for p in ns if ".tmp." in p]


def test_write_whole_takes_names_up_to_the_limit(tmp_path):
    long = tmp_path / ("r" * 252 + ".md")  # 255 bytes: the temp file's name must not grow from it
    check_writable(str(long), "--markdown")
    write_whole(str(long), "x")
    assert long.read_text() == "x" and os.listdir(tmp_path) == [long.name]


def test_an_output_named_dash_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), f("base.json"),
                        f("base.json"), "--markdown", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "compare: --markdown -: expected a file name (the report already goes to stdout)\n"
    assert os.listdir(tmp_path) == []
    with pytest.raises(BadInput):
        write_whole("-", "x")


def test_only_regular_files_are_read_and_only_up_to_the_limit(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), f("base.json"), path],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stderr
        assert r.stderr == f"compare: {path}: not a regular file: expected a JSON file\n"
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk, and never read
    with pytest.raises(BadInput, match="big.json: larger than the 256 MiB limit"):
        read_json(str(big))
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 10)
    (tmp_path / "small.json").write_text('{"a": [1, 2, 3]}')
    with pytest.raises(BadInput, match="limit"):
        read_json(str(tmp_path / "small.json"))


def test_a_row_google_benchmark_1_8_skipped_is_shown_with_its_message(tmp_path):
    """Skipped in the baseline: nothing to compare, never a failure. Measured
    in the baseline and skipping itself in the new file: it stopped running,
    which fails the gate as a missing row does."""
    def skip_a(doc):
        doc["benchmarks"] = [dict(b, skipped=True, skip_message="needs 2 GPUs", iterations=0, real_time=0)
                             if b["name"] == A else b for b in doc["benchmarks"] if b["name"] != A + "_median"]
    new = variant(tmp_path, "new.json", skip_a)
    md = tmp_path / "r.md"
    for args, rc in (((new, f("base.json")), 0), ((f("base.json"), new), 1),
                     ((f("base.json"), new, f("identical.json")), 1)):
        r = run(*args, "--markdown", str(md))
        assert r.returncode == rc, r.stdout + r.stderr
        if len(args) == 2:  # the wide table of three has no room for notes
            assert "needs 2 GPUs" in next(x for x in r.stdout.splitlines() if x.startswith(A))
            assert "needs 2 GPUs" in next(x for x in md.read_text().splitlines() if x.startswith(f"| {A} |"))
    v = verdicts(os.path.relpath(new, FIX), "base.json")
    assert v[A].verdict == "skipped" and v[A].note == "skipped in baseline: needs 2 GPUs (not a failure)"
    v = verdicts("base.json", os.path.relpath(new, FIX))
    assert v[A].verdict == "missing" and v[A].note == "measured in the baseline, skipped in the new file: needs 2 GPUs"
    assert v[B].verdict == "same"
    # In the baseline and gone from the new file: nothing was measured, nothing went missing.
    gone = variant(tmp_path, "gone.json", drop("cuda_v4"))
    r = run(new, gone)
    assert r.returncode == 0 and "skipped in the baseline: needs 2 GPUs" in r.stdout, r.stdout + r.stderr
    # Another machine's file: the machines report says it too.
    other = variant(tmp_path, "other.json", lambda d: (skip_a(d), d["context"].update(machine_label="node-b")))
    r = run(f("base.json"), other)
    assert r.returncode == 0 and "skipped (needs 2 GPUs)" in r.stdout, r.stdout + r.stderr  # another machine: not a failure
    # report.py leaves the row out of its plots and shows the verdict.
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "report.py"), f("base.json"), new, "--out",
                        str(tmp_path / "rep")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "skipped in the new file: needs 2 GPUs" in (tmp_path / "rep" / "report.md").read_text()


def test_an_output_that_is_an_input_is_refused_by_name_link_or_hard_link(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(open(f("base.json")).read())
    (tmp_path / "link.md").symlink_to(base)
    os.link(base, tmp_path / "hard.md")
    before = base.read_text()
    for out in (base, tmp_path / "link.md", tmp_path / "hard.md"):
        r = run(str(base), f("regression.json"), "--markdown", str(out))
        assert r.returncode == 2, r.stderr
        assert r.stderr == f"compare: --markdown {out}: is the input {base} (an output never replaces an input)\n"
    assert base.read_text() == before and (tmp_path / "link.md").is_symlink()


def test_add_machine_never_replaces_a_reference_it_is_made_from(tmp_path):
    refs = tmp_path / "refs"
    assert run(f("base_processes.json"), "--add-machine", "--reference", str(refs)).returncode == 0
    (ref,) = refs.glob("*/reference.json")
    before = ref.read_text()
    r = run(str(ref), "--add-machine", "--reference", str(refs))
    assert r.returncode == 2 and r.stderr == (f"compare: --add-machine {ref}: is the input {ref} "
                                              "(an output never replaces an input)\n"), r.stderr
    assert ref.read_text() == before
    # the machine report's bad input is compare.py's: exit 2, never an internal error
    r = run(f("base_processes.json"), f("not_gbench.json"), "--add-machine", "--reference", str(tmp_path / "other"))
    assert r.returncode == 2 and "not Google Benchmark JSON" in r.stderr, r.stderr
