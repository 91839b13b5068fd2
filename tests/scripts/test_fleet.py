"""The fleet report's logic on synthetic fleets of 16 machines (no Slurm
needed): one machine with a lowered clock, an older driver, an x8 PCIe link
or a throttling GPU is named with that cause; a bimodal group is found with
what separates its sides; a healthy or uniformly noisy fleet names nobody;
verdicts are grouped across nodes; wrong results, missing nodes and failed
processes give their exit codes. Also the merge step of an array task.

The fleets are written as a real run folder (run.json, <node>/<unit>.json,
.env.json, .status.json), in the shapes bench and fleet.py merge write, and
read back by `fleet.py report` in a child process, as the collect job does.
"""
import json
import os
import random
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import ROOT


FLEET = os.path.join(ROOT, "scripts", "fleet.py")
from cudabench.commands.fleet import analysis, causes
from cudabench.models.families import bears_on

# name -> base time in us. Transfer is bound by PCIe; the rest by the GPU.
GPU_ROWS = {
    "VectorAdd/cuda_v4/n:134217728/real_time": 340.0,
    "VectorAdd/cuda_v1/n:10000000/real_time": 27.0,
    "VectorAdd/cublas_geam/n:134217728/real_time": 355.0,
    "Transfer/h2d_pinned/bytes:40000000/real_time": 780.0,
    "MnistTrain/cuda/batch:64/real_time": 1450.0,
}
CPU_ROWS = {
    "VectorAdd/cpu_scalar/n:1048576/real_time": 520.0,
    "VectorAdd/cpu_omp_simd/n:4194304/real_time": 1900.0,
}


def gpu_env(node):
    return {
        "driver": {"nvml_driver_version": "580.95.05", "cuda_version": "13.0"},
        "runtime": {"loaded_version": "13.0", "loaded_path": "/usr/local/cuda-13.0/lib/libcudart.so.13"},
        "libraries": {"cublas_loaded": "13.1.0"},
        "loaded_libraries": [{"name": "libcublas.so.13", "path": "/usr/local/cuda-13.0/lib/libcublas.so.13"},
                             {"name": "libcudnn.so.9", "path": "/opt/venv/torch/lib/libcudnn.so.9"}],
        "host": {"cpu_model": "AMD EPYC 9654", "threads": 192},
        "gpus": [{"index": 0, "name": "NVIDIA H200", "pci_bus_id": "0000:19:00.0", "nvml": {
            "power_limit_w": 700.0, "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16,
            "ecc_current": 1, "ecc_pending": 1, "ecc_volatile_uncorrected": 0, "compute_mode": 0}}],
        "verdicts": [{"id": "driver.ok", "level": "ok", "message": "driver 580.95.05 supports CUDA 13.0", "fix": ""}],
    }


def context(node, unit):
    c = {"host_name": node, "cuda_toolkit": "13.0.88", "cuda_runtime_loaded": "13.0", "cublas": "13.1.0",
         "cudnn": "9.19.0", "libtorch": "2.11.0", "libtorch_cuda": "13.0", "cxx_compiler": "GNU 12.2.0",
         "host_cpu_model": "AMD EPYC 9654", "host_threads": "192", "num_cpus": 192, "mhz_per_cpu": 3700,
         "load_avg": [0.4, 0.5, 0.5], "host_kernel": "6.8.0", "host_os": "Ubuntu 24.04", "host_thp": "madvise",
         "host_cpu_governor": "performance", "cudabench_git": "abc1234"}
    if unit.startswith("gpu"):
        c.update(gpu_name="NVIDIA H200", cuda_driver_version="580.95.05", gpu_app_clocks_mhz="1980/3201",
                 gpu_max_clocks_mhz="1980/3201", gpu_persistence_mode="on", gpu_mig="off", gpu_compute_mode="Default")
    return c


class Node:
    """One machine of a synthetic fleet: its rows, context, env and how it deviates."""

    def __init__(self, name, unit="gpu0", rows=None):
        self.name, self.unit = name, unit
        self.rows = dict(rows or (GPU_ROWS if unit.startswith("gpu") else CPU_ROWS))
        self.ctx = context(name, unit)
        self.env = gpu_env(name)
        self.sm_clock, self.mem_clock = 1980, 3201
        self.label = ""
        self.errors = {}

    def scale(self, factor, only=None):
        for n in self.rows:
            if only is None or only(n):
                self.rows[n] *= factor
        return self


def write_fleet(tmp, nodes, noise=0.01, processes=3, seed=1, meta=None):
    rng = random.Random(seed)
    run = os.path.join(tmp, "run")
    os.makedirs(run, exist_ok=True)
    expected = sorted({n.name for n in nodes})
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump(dict({"run_id": "test", "mode": "node", "tasks": len(expected), "expected_nodes": expected,
                        "processes": processes, "repetitions": 3}, **(meta or {})), f)
    for i, n in enumerate(nodes):
        d = os.path.join(run, n.name)
        os.makedirs(d, exist_ok=True)
        entries = []
        for p in range(processes):
            for name, us in n.rows.items():
                e = {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": p,
                     "real_time": us * (1 + rng.gauss(0, noise)), "time_unit": "us", "iterations": 100}
                if n.unit.startswith("gpu"):
                    e.update(sm_clock_mhz=n.sm_clock, mem_clock_mhz=n.mem_clock, temp_c=45.0)
                if n.label:
                    e["label"] = n.label
                if name in n.errors:
                    e = {"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
                         "error_message": n.errors[name]}
                entries.append(e)
        ctx = dict(n.ctx, cudabench_env=n.env)
        with open(os.path.join(d, f"{n.unit}.json"), "w") as f:
            json.dump({"context": ctx, "benchmarks": entries}, f)
        with open(os.path.join(d, f"{n.unit}.env.json"), "w") as f:
            json.dump(n.env, f)
        status = {"host": n.name, "unit": n.unit, "device": 0 if n.unit.startswith("gpu") else -1,
                  "task": str(expected.index(n.name)),
                  "fingerprint": "f00dfeed0001", "build": "/shared/build-fleet/f00dfeed0001",
                  "processes": [{"exit_code": 0, "error": ""}] * processes,
                  "results": f"{n.unit}.json", "env": f"{n.unit}.env.json", "error": ""}
        with open(os.path.join(d, f"{n.unit}.status.json"), "w") as f:
            json.dump(status, f)
    return run


def report(run, *args):
    r = subprocess.run([sys.executable, FLEET, "report", run, "--no-plots", *args], capture_output=True, text=True,
                       timeout=120)
    with open(os.path.join(run, "fleet.json")) as f:
        doc = json.load(f)
    with open(os.path.join(run, "fleet.md")) as f:
        md = f.read()
    return r, doc, md


def fleet16(**kw):
    return [Node(f"node{i:02d}", **kw) for i in range(1, 17)]


def off_of(doc, machine):
    found = [o for o in doc["off"] if o["machine"] == machine]
    assert found, f"{machine} not named off: {json.dumps(doc['off'], indent=1)[:2000]}"
    return found[0]


# ---- healthy and noisy fleets name nobody ----

def test_a_healthy_fleet_names_nobody(tmp_path):
    r, doc, md = report(write_fleet(str(tmp_path), fleet16()))
    assert r.returncode == 0, r.stderr
    assert doc["off"] == [] and doc["bimodal"] == [] and doc["wrong"] == [] and doc["incomplete"] == []
    assert "No machine is off" in md
    g = doc["groups"][0]
    assert g["name"] == "GPU: NVIDIA H200" and len(g["machines"]) == 16
    for b in g["benchmarks"]:
        assert all(0.95 < r < 1.05 for r in b["ratios"].values())


def test_a_fleet_noisy_everywhere_names_nobody(tmp_path):
    # Shared VMs: 12% spread between processes, in 20 fleets of 16 with two
    # CPU rows each. The scale is the machines' own noise and the bar rises
    # with the number of tests, so noise alone names nobody.
    for seed in range(1, 21):
        r, doc, _ = report(write_fleet(str(tmp_path / str(seed)), fleet16(unit="cpu"), noise=0.12, seed=seed))
        assert r.returncode == 0, (seed, r.stderr, doc["off"])
        assert doc["off"] == [] and doc["bimodal"] == []


def test_a_machine_slower_only_within_the_noise_is_not_named(tmp_path):
    nodes = fleet16(unit="cpu")
    nodes[4].scale(1.12)  # 12% slower, but each process varies by 12%
    r, doc, _ = report(write_fleet(str(tmp_path), nodes, noise=0.12, seed=3))
    assert doc["off"] == [], doc["off"]


# ---- one machine off, each with its cause ----

def test_a_lowered_clock_is_named_with_the_clock(tmp_path):
    nodes = fleet16()
    n = nodes[6]
    n.sm_clock = 1410
    n.ctx["gpu_app_clocks_mhz"] = "1410/3201"
    n.scale(1.30, only=lambda name: not name.startswith("Transfer/"))
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 1, r.stderr
    assert [o["machine"] for o in doc["off"]] == ["node07/gpu0"]
    o = off_of(doc, "node07/gpu0")
    assert "Transfer/h2d_pinned/bytes:40000000/real_time" not in o["benchmarks"]
    assert len(o["benchmarks"]) == 4
    assert o["likely"][0] == "SM clock during the runs 1410 MHz (-29%; fleet median 1980 MHz)", o["likely"]
    assert any(c == "application clocks (SM/memory MHz) 1410/3201 (fleet: 1980/3201 on 15 of 16)"
               for c in o["likely"]), o["likely"]
    assert not any("driver" in c or "PCIe" in c for c in o["likely"])
    assert "**node07/gpu0 is off**" in md and "Likely cause: SM clock during the runs 1410 MHz" in md


def test_an_older_driver_is_named_with_the_driver(tmp_path):
    nodes = fleet16()
    n = nodes[10]
    n.ctx["cuda_driver_version"] = "570.86.15"
    n.env["driver"]["nvml_driver_version"] = "570.86.15"
    n.scale(1.18)
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 1
    o = off_of(doc, "node11/gpu0")
    assert len(o["benchmarks"]) == 5
    assert o["likely"] == ["driver 570.86.15 (fleet: 580.95.05 on 15 of 16)"], o["likely"]
    assert [x["machine"] for x in doc["off"]] == ["node11/gpu0"]


def x8_fleet(tmp_path, factor, prefix):
    """node03's GPU on an x8 link, its `prefix` rows `factor` slower."""
    nodes = fleet16()
    nodes[2].env["gpus"][0]["nvml"]["pcie_width"] = 8
    nodes[2].scale(factor, only=lambda name: name.startswith(prefix))
    return report(write_fleet(str(tmp_path), nodes))


def test_an_x8_pcie_link_explains_a_slow_transfer_and_nothing_else(tmp_path):
    r, doc, md = x8_fleet(tmp_path, 2.0, "Transfer/")
    assert r.returncode == 1
    o = off_of(doc, "node03/gpu0")
    assert o["benchmarks"] == ["Transfer/h2d_pinned/bytes:40000000/real_time"]
    assert o["ratios"]["Transfer/h2d_pinned/bytes:40000000/real_time"] == pytest.approx(2.0, rel=0.05)
    assert o["likely"] == ["PCIe link gen5 x8 of x16 (fleet: gen5 x16 of x16 on 15 of 16)"]
    assert "What differs within the group:" in md and "PCIe link: gen5 x16 of x16 on" in md


def test_a_pcie_difference_is_not_blamed_for_a_slow_kernel(tmp_path):
    # The x8 machine is slow in its kernels, not its copies: the link is
    # reported as a difference, never as the likely cause.
    r, doc, _ = x8_fleet(tmp_path, 1.4, "VectorAdd/")
    o = off_of(doc, "node03/gpu0")
    assert o["likely"] == []
    assert o["also"] == ["PCIe link gen5 x8 of x16 (fleet: gen5 x16 of x16 on 15 of 16)"]


def test_a_throttling_gpu_is_named_with_its_reasons(tmp_path):
    nodes = fleet16()
    n = nodes[4]
    n.label = "throttled: sw_thermal_slowdown"
    n.scale(1.25, only=lambda name: not name.startswith("Transfer/"))
    r, doc, _ = report(write_fleet(str(tmp_path), nodes))
    o = off_of(doc, "node05/gpu0")
    assert o["likely"][0] == "the GPU throttled (sw_thermal_slowdown) in 4 of the 4 slow benchmarks"


def test_uncorrectable_ecc_errors_are_named(tmp_path):
    nodes = fleet16()
    n = nodes[8]
    n.env["gpus"][0]["nvml"]["ecc_volatile_uncorrected"] = 3
    n.scale(1.2)
    r, doc, _ = report(write_fleet(str(tmp_path), nodes))
    o = off_of(doc, "node09/gpu0")
    assert "ECC errors: 3 uncorrectable ECC errors since the driver loaded" in o["likely"]


def test_nothing_recorded_explains_it_says_so(tmp_path):
    nodes = fleet16()
    nodes[13].scale(1.3)
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    o = off_of(doc, "node14/gpu0")
    assert o["likely"] == [] and o["also"] == []
    assert "look at the node itself" in md


# ---- groups ----

def test_a_bimodal_group_and_what_separates_it(tmp_path):
    nodes = fleet16()
    for n in nodes[:8]:
        n.ctx["cublas"] = "13.0.0"
        n.env["loaded_libraries"][0]["path"] = "/opt/conda/lib/libcublas.so.13"
        n.scale(1.3, only=lambda name: "cublas" in name)
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 1
    assert len(doc["bimodal"]) == 1
    sp = doc["bimodal"][0]
    assert sp["benchmarks"] == ["VectorAdd/cublas_geam/n:134217728/real_time"]
    assert sp["slow"] == [f"node{i:02d}/gpu0" for i in range(1, 9)]
    assert sp["slow_ratio"] / sp["fast_ratio"] == pytest.approx(1.3, rel=0.05)
    assert any(s.startswith("cuBLAS loaded: 13.0.0 from /opt/conda/lib/libcublas.so.13 (8) on the slow side; "
                            "13.1.0 from /usr/local/cuda-13.0/lib/libcublas.so.13 (8) on the fast side")
               for s in sp["separating"]), sp["separating"]
    assert "**bimodal GPU: NVIDIA H200**" in md


def test_a_machine_far_beyond_a_bimodal_groups_slow_side_is_named(tmp_path):
    # 8 at 1.0, 7 at 1.3 (another cuBLAS), and one at 2.0: the split is
    # found, and the 2.0 machine is named against its own side.
    nodes = fleet16()
    for n in nodes[8:]:
        n.ctx["cublas"] = "13.0.0"
        n.scale(1.3, only=lambda name: "cublas" in name)
    nodes[15].scale(2.0 / 1.3, only=lambda name: "cublas" in name)
    r, doc, _ = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 1
    assert [sp["slow"] for sp in doc["bimodal"]] == [[f"node{i:02d}/gpu0" for i in range(9, 17)]]
    assert [o["machine"] for o in doc["off"]] == ["node16/gpu0"]


def test_a_machine_missing_a_benchmark_is_incomplete(tmp_path):
    nodes = fleet16()
    del nodes[3].rows["MnistTrain/cuda/batch:64/real_time"]
    r, doc, _ = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 3
    assert doc["incomplete"] == [{"machine": "node04/gpu0", "error": "no result for MnistTrain/cuda/batch:64, "
                                  "which others in its group have"}]


def test_three_nodes_off_for_one_reason_are_named_one_by_one(tmp_path):
    # 3 of 16 is not a second mode of the group: each is named, each with the driver.
    nodes = fleet16()
    for n in (nodes[1], nodes[5], nodes[12]):
        n.ctx["cuda_driver_version"] = "570.86.15"
        n.scale(1.2)
    r, doc, _ = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 1
    assert doc["bimodal"] == []
    assert [o["machine"] for o in doc["off"]] == ["node02/gpu0", "node06/gpu0", "node13/gpu0"]
    for o in doc["off"]:
        assert o["likely"] == ["driver 570.86.15 (fleet: 580.95.05 on 13 of 16)"], o


def test_cpu_nodes_and_gpus_are_compared_within_their_own_groups(tmp_path):
    gpus = fleet16()
    cpus = [Node(f"node{i:02d}", unit="cpu") for i in range(1, 17)]
    plain = [Node(f"cpu{i:02d}", unit="cpu") for i in range(1, 5)]
    for n in plain:  # CPU-only nodes of another model: their own group, never "slower than the GPUs"
        n.ctx["host_cpu_model"] = "Intel Xeon 8480+"
        n.env["host"]["cpu_model"] = "Intel Xeon 8480+"
        n.env["gpus"] = []
        n.scale(1.7)
    r, doc, md = report(write_fleet(str(tmp_path), gpus + cpus + plain))
    assert r.returncode == 0, (r.stderr, doc["off"])
    names = {g["name"]: len(g["machines"]) for g in doc["groups"]}
    assert names == {"GPU: NVIDIA H200": 16, "CPU: AMD EPYC 9654 x192": 16, "CPU: Intel Xeon 8480+ x192": 4}


def test_two_machines_are_shown_but_nobody_is_named(tmp_path):
    nodes = [Node("a"), Node("b").scale(1.5)]
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    assert r.returncode == 0 and doc["off"] == []
    assert "at least 3 are needed to name an outlier" in md
    assert doc["groups"][0]["benchmarks"][0]["ratios"]["b/gpu0"] > 1.15


# ---- verdicts across nodes ----

def test_verdicts_are_grouped_across_nodes(tmp_path):
    nodes = fleet16()
    conda = {"id": "runtime.conda", "level": "warning",
             "message": "libcudart.so.12 is loaded from /opt/conda/lib (CUDA 12.4), not the build's 13.0",
             "fix": "remove /opt/conda/lib from LD_LIBRARY_PATH"}
    for n in (nodes[2], nodes[6], nodes[8]):
        n.env["verdicts"].append(dict(conda))
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    assert ("- 3 of 16 nodes: warning: libcudart.so.12 is loaded from /opt/conda/lib (CUDA 12.4), not the build's "
            "13.0. Fix: remove /opt/conda/lib from LD_LIBRARY_PATH. (node03, node07, node09)") in md
    v = [x for x in doc["verdicts"] if x["level"] == "warning"]
    assert v[0]["hosts"] == ["node03", "node07", "node09"] and v[0]["id"] == "runtime.conda"


def test_one_kind_of_verdict_in_several_forms_is_one_entry(tmp_path):
    nodes = fleet16()
    for i, n in enumerate(nodes[:3]):
        n.env["verdicts"].append({"id": "gpu.ecc_errors", "level": "error", "fix": "drain the node and reset the GPU",
                                  "message": f"GPU 0 has {i + 1} uncorrectable ECC errors"})
    r, doc, md = report(write_fleet(str(tmp_path), nodes))
    (v,) = [x for x in doc["verdicts"] if x["level"] == "error"]
    assert v["hosts"] == ["node01", "node02", "node03"] and len(v["messages"]) == 3
    assert "- 3 of 16 nodes: error: gpu.ecc_errors, in 3 forms (node01, node02, node03):" in md
    assert "  - 1 of 16 nodes: GPU 0 has 2 uncorrectable ECC errors. Fix: drain the node and reset the GPU. (node02)" in md


# ---- results that are not timings ----

def fleet_with_error(tmp_path, name, message):
    """A healthy fleet but for node01's `name`, which failed with `message`."""
    nodes = fleet16()
    nodes[0].errors[name] = message
    return report(write_fleet(str(tmp_path), nodes))


def test_a_wrong_result_is_exit_1_and_named(tmp_path):
    r, doc, md = fleet_with_error(tmp_path, "VectorAdd/cuda_v4/n:134217728/real_time",
                                  "check failed: c[17] = 0 (expected 1.5)")
    assert r.returncode == 1
    assert doc["wrong"] == [{"machine": "node01/gpu0", "benchmark": "VectorAdd/cuda_v4/n:134217728/real_time",
                             "error": "check failed: c[17] = 0 (expected 1.5)"}]
    assert "**wrong result on node01/gpu0**: VectorAdd/cuda_v4/n:134217728: check failed" in md


def test_a_benchmark_that_could_not_run_makes_the_run_incomplete(tmp_path):
    r, doc, _ = fleet_with_error(tmp_path, "MnistTrain/cuda/batch:64/real_time", "could not run: CUDA out of memory")
    assert r.returncode == 3
    assert doc["incomplete"][0]["machine"] == "node01/gpu0"
    assert subprocess.run([sys.executable, FLEET, "report", os.path.join(str(tmp_path), "run"), "--no-plots",
                           "--report-only"], capture_output=True).returncode == 0


def test_a_node_with_no_task_is_named(tmp_path):
    nodes = fleet16()
    run = write_fleet(str(tmp_path), nodes[:15], meta={"expected_nodes": [n.name for n in nodes], "tasks": 16})
    r, doc, md = report(run)
    assert r.returncode == 3
    assert any(i["machine"] == "node16" and "no task ran on this node" in i["error"] for i in doc["incomplete"])
    assert "15 of 16 array tasks recorded a result" in md


def test_a_node_with_a_gpu_short_of_its_gres_is_named(tmp_path):
    gres = {f"node{i:02d}": 1 for i in range(1, 17)}
    gres["node05"] = 2  # Slurm knows two GPUs there; one was measured
    r, doc, _ = report(write_fleet(str(tmp_path), fleet16(), meta={"expected_gpus": gres}))
    assert r.returncode == 3
    assert doc["incomplete"] == [{"machine": "node05", "error": "1 of its 2 GPUs (its gres) measured"}]


def test_a_task_whose_build_failed_is_named(tmp_path):
    run = write_fleet(str(tmp_path), fleet16()[:4])
    os.makedirs(os.path.join(run, "node99"))
    with open(os.path.join(run, "node99", "cpu.status.json"), "w") as f:
        json.dump({"host": "node99", "unit": "cpu", "task": "5", "processes": [], "results": None,
                   "error": "the build for environment 0123abcd failed on node99: ninja: build stopped"}, f)
    r, doc, md = report(run)
    assert r.returncode == 3
    assert "incomplete: node99/cpu: the build for environment 0123abcd failed on node99" in md


def damaged_fleet(tmp_path, name, damage):
    """Six nodes, node03's file `name` damaged: "half" cuts it in half,
    "gone" removes it; the report of it, its stderr's lines."""
    run = write_fleet(str(tmp_path), fleet16()[:6])
    path = os.path.join(run, "node03", name)
    if damage == "half":
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
    else:
        os.remove(path)
    r, doc, md = report(run)
    return r, doc, md, r.stderr.strip().splitlines()


@pytest.mark.parametrize("name,damage,why", [
    ("gpu0.json", "half", "not valid JSON"),
    ("gpu0.json", "gone", "cannot read (No such file or directory)"),
    ("gpu0.env.json", "half", "not valid JSON"),
    ("gpu0.env.json", "gone", "cannot read (No such file or directory)"),
    ("gpu0.status.json", "half", "not valid JSON"),
    ("gpu0.status.json", "gone", "missing, though the node's results are there (node03/gpu0.env.json, "
                                 "node03/gpu0.json)"),
])
def test_a_nodes_unreadable_file_is_named_and_the_rest_reported(tmp_path, name, damage, why):
    # The run is incomplete (3), not bad usage: the report is written for the
    # readable nodes, and names the file and why, in it and in one line.
    r, doc, md, lines = damaged_fleet(tmp_path, name, damage)
    assert r.returncode == 3, r.stderr
    assert len(lines) == 1 and lines[0].startswith(f"fleet: the run is incomplete: node03/{name}: {why}"), lines
    assert [(u["machine"], u["file"]) for u in doc["unreadable"]] == [("node03/gpu0", f"node03/{name}")]
    assert f"- incomplete: node03/gpu0: node03/{name}: {why}" in md
    assert not any("no task ran" in i["error"] or i["error"] == "no results" for i in doc["incomplete"]), \
        doc["incomplete"]
    measured = {m["machine"] for m in doc["machines"] if m["medians_s"]}
    assert measured >= {f"node{i:02d}/gpu0" for i in (1, 2, 4, 5, 6)}
    assert "fleet: report in" in r.stdout


def test_a_run_folder_with_nothing_in_it_is_bad_usage(tmp_path):
    r = subprocess.run([sys.executable, FLEET, "report", str(tmp_path), "--no-plots"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"fleet: {tmp_path}: no fleet results (no <host>/<unit>.status.json and no run.json)"]
    assert not os.path.exists(tmp_path / "fleet.md")


def test_two_tasks_on_one_node_are_merged_as_more_processes(tmp_path):
    nodes = fleet16()[:4]
    run = write_fleet(str(tmp_path), nodes)
    d = os.path.join(run, "node01")
    with open(os.path.join(d, "gpu0.json")) as f:
        doc = json.load(f)
    with open(os.path.join(d, "gpu0.task7.json"), "w") as f:
        json.dump(doc, f)
    with open(os.path.join(d, "gpu0.status.json")) as f:
        st = json.load(f)
    st.update(results="gpu0.task7.json", task="7")
    with open(os.path.join(d, "gpu0.task7.status.json"), "w") as f:
        json.dump(st, f)
    r, out, _ = report(run)
    m = [x for x in out["machines"] if x["machine"] == "node01/gpu0"][0]
    assert all(len(s) == 6 for s in m["samples_s"].values())
    assert len(out["machines"]) == 4


def test_one_name_for_two_gpus_is_not_merged(tmp_path):
    # Two tasks both called their GPU gpu0 (a renumbering), but the bus ids differ.
    run = write_fleet(str(tmp_path), fleet16()[:4])
    d = os.path.join(run, "node01")
    for name, bus, task in (("gpu0", "0000:19:00.0", "0"), ("gpu0.task7", "0000:3b:00.0", "7")):
        if name != "gpu0":
            for ext in (".json", ".env.json"):
                with open(os.path.join(d, "gpu0" + ext)) as f, open(os.path.join(d, name + ext), "w") as g:
                    g.write(f.read())
        with open(os.path.join(d, "gpu0.status.json")) as f:
            st = json.load(f)
        st.update(results=f"{name}.json", env=f"{name}.env.json", task=task, pci_bus_id=bus)
        with open(os.path.join(d, f"{name}.status.json"), "w") as f:
            json.dump(st, f)
    r, out, _ = report(run)
    keys = sorted(m["machine"] for m in out["machines"] if m["host"] == "node01")
    assert keys == ["node01/gpu0", "node01/gpu0@0000:3b:00.0"]


def test_two_units_that_measured_one_gpu_are_named(tmp_path):
    run = write_fleet(str(tmp_path), fleet16()[:4])
    d = os.path.join(run, "node02")
    for name in ("gpu0", "gpu1"):
        if name == "gpu1":
            for ext in (".json", ".env.json"):
                with open(os.path.join(d, "gpu0" + ext)) as f, open(os.path.join(d, name + ext), "w") as g:
                    g.write(f.read())
        with open(os.path.join(d, "gpu0.status.json")) as f:
            st = json.load(f)
        st.update(unit=name, results=f"{name}.json", env=f"{name}.env.json", pci_bus_id="0000:19:00.0")
        with open(os.path.join(d, f"{name}.status.json"), "w") as f:
            json.dump(st, f)
    r, doc, _ = report(run)
    assert {"machine": "node02", "error": "node02/gpu0 and node02/gpu1 measured one GPU (PCI bus 0000:19:00.0)"} \
        in doc["incomplete"]


# ---- the files and the command line ----

def test_report_writes_whole_files_and_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    nodes = fleet16()
    nodes[6].scale(1.3)
    run = write_fleet(str(tmp_path), nodes)
    r = subprocess.run([sys.executable, FLEET, "report", run], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    files = sorted(os.listdir(run))
    assert "fleet-gpu-nvidia-h200.png" in files and "fleet.md" in files and "fleet.json" in files
    assert not [f for f in files if ".tmp." in f]
    with open(os.path.join(run, "fleet-gpu-nvidia-h200.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(os.path.join(run, "fleet.md")) as f:
        assert "![GPU: NVIDIA H200](fleet-gpu-nvidia-h200.png)" in f.read()
    assert r.stderr.strip().splitlines()[-1] == "fleet: 1 machine(s) off, 0 bimodal split(s), 0 wrong result(s)"


def test_merge_makes_one_sample_per_process_and_records_failures(tmp_path):
    t = str(tmp_path)
    lst = os.path.join(t, "cpu.list")
    with open(lst, "w") as f:
        for p, rc in ((1, 0), (2, 0), (3, 3)):
            js, err = os.path.join(t, f"cpu.p{p}.json"), os.path.join(t, f"cpu.p{p}.err")
            if rc == 0:
                with open(js, "w") as g:
                    json.dump({"context": {"host_name": "n1"}, "benchmarks": [
                        {"name": "A/real_time", "run_name": "A/real_time", "run_type": "iteration",
                         "real_time": x, "time_unit": "us", "repetition_index": i}
                        for i, x in enumerate((10.0 * p, 11.0 * p, 12.0 * p))]}, g)
            with open(err, "w") as g:
                g.write("" if rc == 0 else "cudabench: a note\nbench: could not run: out of memory\n")
            f.write(f"{rc}\t{js}\t{err}\n")
    r = subprocess.run([sys.executable, FLEET, "merge", "--host", "n1", "--unit", "cpu", "--processes", lst,
                        "--out", os.path.join(t, "cpu.json"), "--status-out", os.path.join(t, "cpu.status.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(t, "cpu.json")) as f:
        merged = json.load(f)
    assert [b["real_time"] for b in merged["benchmarks"]] == [11.0, 22.0]
    assert merged["cudabench_samples"]["processes"] == 2
    with open(os.path.join(t, "cpu.status.json")) as f:
        st = json.load(f)
    assert [p["exit_code"] for p in st["processes"]] == [0, 0, 3]
    assert st["processes"][2]["error"] == "bench: could not run: out of memory"
    assert st["results"] == "cpu.json"


def test_merge_records_the_gpus_pci_bus_id(tmp_path):
    t = str(tmp_path)
    env = os.path.join(t, "gpu3.env.json")
    with open(env, "w") as f:
        json.dump({"gpus": [{"index": 0, "pci_bus_id": "0000:19:00.0"}, {"index": 1, "pci_bus_id": "0000:3b:00.0"}]}, f)
    r = subprocess.run([sys.executable, FLEET, "merge", "--host", "n1", "--unit", "gpu3", "--device", "1", "--env", env,
                        "--status-out", os.path.join(t, "gpu3.status.json"), "--error", "bench failed"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(t, "gpu3.status.json")) as f:
        st = json.load(f)
    assert st["pci_bus_id"] == "0000:3b:00.0" and st["env"] == "gpu3.env.json" and st["error"] == "bench failed"


def test_the_features_cover_what_the_issue_names():
    labels = " ".join(f.label for f in causes.features())
    for what in ("driver", "CUDA toolkit", "SM clock", "power limit", "PCIe", "ECC", "cuBLAS"):
        assert what in labels, what


def test_a_fact_explains_the_rows_the_machine_reports_family_table_gives_it():
    # One fact-to-rows model: the fleet's PCIe link, memory clock and CPU
    # clock can slow exactly the rows whose family lists them.
    gpu, cpu = SimpleNamespace(unit="gpu0"), SimpleNamespace(unit="cpu")
    rows = ["Transfer/h2d_pinned/bytes:4096/real_time", "VectorAddFlow/cuda_grid_stride/n:4096/real_time",
            "VectorAdd/cuda_grid_stride/n:4096/real_time", "VectorAdd/cublas_geam/n:4096/real_time",
            "VectorAdd/cpu_scalar/n:4096"]
    by_label = {f.label: f for f in causes.features()}
    for label, key, machine in (("PCIe link", "gpu_pcie_max", gpu), ("memory clock during the runs", "mem_clock_mhz", gpu),
                                ("CPU clock (Google Benchmark's MHz per CPU)", "mhz_per_cpu", cpu)):
        assert [by_label[label].scope(machine, n) for n in rows] == [bears_on(key, n) for n in rows], label
    assert [by_label["PCIe link"].scope(gpu, n) for n in rows] == [True, True, False, False, False]


def test_without_matplotlib_the_report_is_written_without_plots(tmp_path):
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK) or subprocess.run([py, "-c", "import matplotlib"]).returncode == 0:
        pytest.skip(f"needs a python without matplotlib ({py})")
    nodes = fleet16()
    nodes[6].scale(1.3)
    run = write_fleet(str(tmp_path), nodes)
    r = subprocess.run([py, FLEET, "report", run], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CUDABENCH_VENV=str(tmp_path / "no-venv")))
    assert r.returncode == 1, r.stderr  # the finding, not the missing library
    with open(os.path.join(run, "fleet.md")) as f:
        md = f.read()
    assert "**node07/gpu0 is off**" in md and "No plots: needs matplotlib" in md
    assert not [p for p in os.listdir(run) if p.endswith(".png")]


# ---- one build per distinct environment (scripts/fleet/common.sh) ----

BUILD_SH = r"""
set -u
export CUDABENCH_ROOT="$1" CUDABENCH_FLEET_BUILDS="$2"
. "$CUDABENCH_ROOT/scripts/lib.sh"
. "$CUDABENCH_ROOT/scripts/fleet/common.sh"
# The build itself is a stand-in that takes a second and counts its calls;
# what is tested is which folder, how many builds, and the lock.
configure_and_build() {
  echo "$1" >>"$CUDABENCH_FLEET_BUILDS/calls"
  sleep 1
  [ "${FAIL_BUILD:-0}" = 1 ] && return 3
  mkdir -p "$1" && printf '#!/bin/sh\n' >"$1/bench" && chmod +x "$1/bench"
}
fleet_build
"""


def fleet_build(builds, n=1, **env):
    procs = [subprocess.Popen(["bash", "-c", BUILD_SH, "sh", ROOT, builds], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env)) for _ in range(n)]
    return [(p.wait(timeout=60), p.stdout.read().strip()) for p in procs]


def calls(builds):
    try:
        with open(os.path.join(builds, "calls")) as f:
            return f.read().split()
    except OSError:
        return []


def test_tasks_of_one_environment_build_once_and_share_it(tmp_path):
    builds = str(tmp_path / "builds")
    out = fleet_build(builds, n=3)  # three tasks at once, as on three nodes
    assert len(calls(builds)) == 1, calls(builds)
    assert [rc for rc, _ in out] == [0, 0, 0] and len({d for _, d in out}) == 1
    d = out[0][1]
    assert os.path.dirname(d) == builds and os.path.exists(d + ".done")
    with open(d + ".done") as f:
        facts = f.read()
    assert facts.startswith("source ") and "\nnvcc " in facts and "\nlibtorch " in facts
    assert fleet_build(builds) == [(0, d)] and len(calls(builds)) == 1  # found, not rebuilt


def test_another_environment_gets_its_own_build(tmp_path):
    builds = str(tmp_path / "builds")
    (first,) = fleet_build(builds)
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Build cuda_12.9.r12.9/compiler.0'\n")
    nvcc.chmod(0o755)
    (other,) = fleet_build(builds, CUDACXX=str(nvcc))  # a node with another toolkit
    assert other[0] == 0 and other[1] != first[1]
    assert len(calls(builds)) == 2


def test_a_failed_build_is_exit_3_and_is_not_taken_for_done(tmp_path):
    builds = str(tmp_path / "builds")
    (r,) = fleet_build(builds, FAIL_BUILD="1")
    assert r[0] == 3
    assert not [f for f in os.listdir(builds) if f.endswith(".done")]
    (r,) = fleet_build(builds)  # the next task tries again
    assert r[0] == 0 and len(calls(builds)) == 2


# ---- the bar's false alarms and power, on simulated fleets (in-process, seeded) ----

def simulated_fleet(rng, noise, slow=None, factor=1.0, n=16, rows=7, procs=3, slow_noise=None, half=False):
    """(machines named slower, whether a split was found) in one simulated
    fleet: n machines x rows benchmarks, procs process samples each with
    `noise` (relative sd); machine `slow` (or with half=True the first half)
    `factor` slower, machine `slow` with its own `slow_noise`."""
    zc = analysis.z_bar(n * rows)
    named, split = set(), False
    for r in range(rows):
        samples = {k: [(factor if k == slow or (half and k < n // 2) else 1.0)
                       * (1 + rng.gauss(0, slow_noise if k == slow and slow_noise else noise))
                       for _ in range(procs)] for k in range(n)}
        s = analysis.bench_stats(str(r), samples, 0.10, zc)
        named |= set(s.slower)
        split = split or bool(s.split)
    return named, split


def count(trials, what):
    return sum(bool(what(t)) for t in trials)


@pytest.mark.parametrize("n,noise,most", [(16, 0.02, 0), (16, 0.08, 3), (16, 0.12, 3), (8, 0.12, 6), (4, 0.12, 6),
                                          (3, 0.12, 10)])
def test_simulated_fleets_with_nothing_off_rarely_name_anybody(n, noise, most):
    rng = random.Random(20261130)
    trials = [simulated_fleet(rng, noise, n=n) for _ in range(200)]
    assert count(trials, lambda t: t[0] or t[1]) <= most


@pytest.mark.parametrize("factor,noise,least", [(1.15, 0.05, 180), (1.18, 0.02, 200), (1.3, 0.08, 195)])
def test_simulated_fleets_name_the_slow_machine(factor, noise, least):
    rng = random.Random(7)
    assert count([simulated_fleet(rng, noise, slow=5, factor=factor) for _ in range(200)],
                 lambda t: 5 in t[0]) >= least


@pytest.mark.parametrize("n", [4, 16])
def test_an_erratic_slow_machine_cannot_hide_in_its_own_noise(n):
    # 30% slower with 25% noise between its processes, among machines at 2%.
    rng = random.Random(2)
    assert count([simulated_fleet(rng, 0.02, n=n, slow=1, factor=1.3, slow_noise=0.25) for _ in range(200)],
                 lambda t: 1 in t[0]) >= 195


@pytest.mark.parametrize("n,least", [(4, 60), (8, 90), (16, 90)])
def test_simulated_half_and_half_fleets_are_found_bimodal(n, least):
    rng = random.Random(3)
    assert count([simulated_fleet(rng, 0.12, n=n, factor=1.3, half=True) for _ in range(100)],
                 lambda t: t[1]) >= least
