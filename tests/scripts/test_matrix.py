"""The stack matrix's helpers (scripts/matrix.py): the merge of its rounds,
and the summary that names every CUDA of every stack and the rows a stack
did not run."""
import json
import os
import subprocess
import sys

from cudabench.results.gbench import load
from conftest import ROOT

TOOL = os.path.join(ROOT, "scripts", "matrix.py")


def test_merge_makes_rounds_into_repetitions(tmp_path):
    rounds = []
    for i, t in enumerate([10.0, 11.0, 12.0]):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps({"context": {"round": i}, "benchmarks": [
            {"name": "X/n:1", "run_name": "X/n:1", "run_type": "iteration", "family_index": 0,
             "per_family_instance_index": 0, "repetitions": 1, "repetition_index": 0,
             "real_time": t, "time_unit": "us"}]}))
        rounds.append(str(p))
    out = tmp_path / "merged.json"
    r = subprocess.run([sys.executable, TOOL, "merge", str(out), *rounds], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = json.loads(out.read_text())
    assert m["context"] == {"round": 0}
    assert [b["real_time"] for b in m["benchmarks"]] == [10.0, 11.0, 12.0]
    assert [b["repetition_index"] for b in m["benchmarks"]] == [0, 1, 2]
    assert all(b["repetitions"] == 3 for b in m["benchmarks"])
    import pytest
    assert load(str(out)).runs["X/n:1"].samples == pytest.approx([10e-6, 11e-6, 12e-6])


def stack_file(tmp_path, name, context, rows):
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({"context": context, "benchmarks": [
        {"name": r, "run_name": r, "run_type": "iteration", "real_time": 1.0, "time_unit": "us"} for r in rows]}))
    return str(p)


def test_the_summary_names_every_cuda_and_the_rows_a_stack_could_not_run(tmp_path):
    # A 570 driver (CUDA 12.8). a: CUDA 12.8 kernels and LibTorch 2.10 run all;
    # b: LibTorch 2.11 (CUDA 13.0) cannot; c: CUDA 13.0 kernels cannot, and
    # bench times LibTorch's rows with the kernels' runtime.
    driver = {"cuda_driver": "570.133.20 (CUDA 12.8)"}
    no13 = "no: the driver supports only CUDA 12.8, this binary needs CUDA 13.0"
    rows = ["VectorAdd/torch_cpu/n:1/real_time", "VectorAdd/torch_cuda/n:1/real_time",
            "VectorAdd/cuda_v4/n:1/manual_time"]
    a = stack_file(tmp_path, "a", dict(driver, cudabench_stack="cuda12.8-torch2.10.0", cuda_toolkit="12.8.93",
                                       cuda_toolkit_root="/usr/local/cuda-12.8", libtorch="2.10.0",
                                       libtorch_cuda="12.8", gpu_usable="yes", libtorch_gpu_usable="yes"), rows)
    b = stack_file(tmp_path, "b", dict(driver, cudabench_stack="cuda12.8-torch2.11.0", cuda_toolkit="12.8.93",
                                       cuda_toolkit_root="/usr/local/cuda-12.8", libtorch="2.11.0",
                                       libtorch_cuda="13.0", gpu_usable="yes",
                                       libtorch_gpu_usable="no: the driver supports only CUDA 12.8, LibTorch needs "
                                                           "CUDA 13.0"), [rows[0], rows[2]])
    c = stack_file(tmp_path, "c", dict(driver, cudabench_stack="cuda13.0-torch2.10.0", cuda_toolkit="13.0.88",
                                       cuda_toolkit_root="/usr/local/cuda-13.0", libtorch="2.10.0",
                                       libtorch_cuda="12.8", gpu_usable=no13, libtorch_gpu_usable="yes"), rows[:1])
    md = tmp_path / "stacks.md"
    r = subprocess.run([sys.executable, TOOL, "summary", a, b, c, "--markdown", str(md)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    row = next(line for line in lines if line.startswith("| cuda13.0-torch2.10.0 "))
    assert "570.133.20 (CUDA 12.8)" in row and "13.0.88 (/usr/local/cuda-13.0)" in row and "2.10.0+cu128" in row
    assert [line for line in lines if line.startswith("- ")] == [
        "- `VectorAdd/torch_cuda/n:1/real_time`: not run by cuda12.8-torch2.11.0: "
        "the driver supports only CUDA 12.8, LibTorch needs CUDA 13.0",
        "- `VectorAdd/torch_cuda/n:1/real_time`: not run by cuda13.0-torch2.10.0: " + no13[4:],
        "- `VectorAdd/cuda_v4/n:1/manual_time`: not run by cuda13.0-torch2.10.0: " + no13[4:]]
    assert md.read_text().splitlines()[1:] == lines
    r = subprocess.run([sys.executable, TOOL, "labels", a, c], capture_output=True, text=True)
    assert r.stdout.strip() == "CUDA 12.8.93 + torch 2.10.0+cu128,CUDA 13.0.88 + torch 2.10.0+cu128"


def test_a_file_that_is_not_a_benchmark_file_is_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    r = subprocess.run([sys.executable, TOOL, "summary", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad.json" in r.stderr
