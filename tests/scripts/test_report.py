"""report.py: plots and a Markdown report from benchmark JSON."""
import os
import subprocess
import sys

from conftest import ROOT


FIX = os.path.join(ROOT, "tests", "fixtures", "compare")


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "report.py"), *args],
                          capture_output=True, text=True)


def test_report_writes_plots_and_markdown(tmp_path):
    r = run(os.path.join(FIX, "base.json"), os.path.join(FIX, "regression.json"), "--out", str(tmp_path),
            "--labels", "13.0,13.2")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "report.md").read_text()
    assert "![Vector add throughput](vector_add.png)" in md
    assert "![Copies](transfer.png)" in md
    assert "mnist.png" not in md  # no training data in these files: no empty plot
    assert "## Compared with the first run" in md
    assert "slower" in md
    png = (tmp_path / "vector_add.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert not [p for p in os.listdir(tmp_path) if ".tmp." in p]


def test_report_refuses_bad_input(tmp_path):
    r = run(os.path.join(FIX, "truncated.json"), "--out", str(tmp_path))
    assert r.returncode == 2
    assert "not valid JSON" in r.stderr
    assert not (tmp_path / "report.md").exists()


def test_runs_on_several_gpus_are_one_line_per_device(tmp_path):
    import json
    from cudabench.models import report
    doc = {"context": {}, "benchmarks": [
        {"name": f"VectorAdd/cuda_v4/n:1048576/dev:{d}/manual_time", "run_type": "iteration",
         "real_time": 10.0 + d, "time_unit": "us", "bytes_per_second": 1e12 * (d + 1)} for d in (0, 1)]}
    path = tmp_path / "two_gpus.json"
    path.write_text(json.dumps(doc))
    _, rows = report.rows(str(path))
    assert rows[("VectorAdd", "cuda_v4 dev:0", 1048576)][0] == 1000.0
    assert rows[("VectorAdd", "cuda_v4 dev:1", 1048576)][0] == 2000.0


def test_report_tables_escape_pipes_and_list_a_missing_benchmark(tmp_path):
    import json
    import re
    with open(os.path.join(FIX, "regression.json")) as f:
        doc = json.load(f)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if "cpu_scalar" not in b["name"]]
    doc["context"]["host_name"] = "rack|7"
    new = tmp_path / "new.json"
    new.write_text(json.dumps(doc))
    out = tmp_path / "r"
    r = run(os.path.join(FIX, "base.json"), str(new), "--out", str(out), "--labels", "old|er,new")
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "old\\|er" in md and "rack\\|7" in md
    assert any(x.startswith("| VectorAdd/cpu_scalar/n:1000000/real_time |") and "missing" in x
               for x in md.splitlines())
    cells = lambda x: len(re.findall(r"(?<!\\)\|", x))
    table = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(line)
            continue
        assert len({cells(x) for x in table}) <= 1, table  # every row of a table has its header's columns
        table = []
