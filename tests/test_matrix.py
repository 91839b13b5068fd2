"""The toolkit matrix's discovery and build-folder logic (matrix_toolkits.py)."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "scripts", "matrix_toolkits.py")

ENV = {"toolkits": [
    {"root": "/usr/local/cuda-13.0", "kind": "system", "version": "13.0.88", "has_nvcc": True},
    {"root": "/venv/site-packages/nvidia/cu13", "kind": "pip", "version": "13.0.96", "has_nvcc": False},
    {"root": "/work/.toolkits/cuda-13.2.2/site-packages/nvidia/cu13", "kind": "pip", "version": "13.2.86",
     "has_nvcc": True},
    {"root": "/opt/conda/envs/a", "kind": "conda", "version": "12.9.86", "has_nvcc": True},
    {"root": "/opt/conda/envs/b", "kind": "conda", "version": "12.9.86", "has_nvcc": True},
    {"root": "/opt/odd", "kind": "system", "version": "unknown", "has_nvcc": True},
]}


def plan(env=ENV, *args):
    r = subprocess.run([sys.executable, TOOL, "--plan", *args], input=json.dumps(env),
                       capture_output=True, text=True)
    return r.returncode, [tuple(l.split("\t")) for l in r.stdout.splitlines()], r.stderr


def test_only_installs_with_a_compiler_are_built():
    rc, rows, _ = plan()
    assert rc == 0
    roots = [r[0] for r in rows]
    assert "/venv/site-packages/nvidia/cu13" not in roots  # runtime only
    assert roots[0] == "/usr/local/cuda-13.0"


def test_build_folders_are_named_by_version_and_never_collide():
    _, rows, _ = plan()
    names = dict(rows)
    assert names["/usr/local/cuda-13.0"] == "cuda-13.0.88"
    assert names["/work/.toolkits/cuda-13.2.2/site-packages/nvidia/cu13"] == "cuda-13.2.86-pip"
    assert names["/opt/conda/envs/a"] == "cuda-12.9.86-conda"
    assert names["/opt/conda/envs/b"] == "cuda-12.9.86-conda-2"
    assert names["/opt/odd"] == "cuda-unknown"
    assert len(set(names.values())) == len(names)


def test_named_roots_keep_their_order_and_unknown_ones_fail():
    rc, rows, _ = plan(ENV, "/opt/conda/envs/a", "/usr/local/cuda-13.0")
    assert rc == 0
    assert [r[0] for r in rows] == ["/opt/conda/envs/a", "/usr/local/cuda-13.0"]
    rc, rows, err = plan(ENV, "/nowhere")
    assert rc != 0
    assert "/nowhere" in err and "not a toolkit" in err


def test_no_toolkit_with_nvcc_is_an_error():
    rc, rows, err = plan({"toolkits": [ENV["toolkits"][1]]})
    assert rc != 0
    assert "no CUDA toolkit with nvcc" in err


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
    r = subprocess.run([sys.executable, TOOL, "--merge", str(out), *rounds], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = json.loads(out.read_text())
    assert m["context"] == {"round": 0}
    assert [b["real_time"] for b in m["benchmarks"]] == [10.0, 11.0, 12.0]
    assert [b["repetition_index"] for b in m["benchmarks"]] == [0, 1, 2]
    assert all(b["repetitions"] == 3 for b in m["benchmarks"])
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import compare
    import pytest
    assert compare.load(str(out)).runs["X/n:1"].samples == pytest.approx([10e-6, 11e-6, 12e-6])
