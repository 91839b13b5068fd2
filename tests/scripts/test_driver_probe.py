"""scripts/driver_probe.py, the driver probe the GPU check's preflight runs
before anything is built, against the tests' fake libcuda (tests/fakes): a
healthy driver; cuInit's failures named in the doctor's words, taken from
doctor/scenarios.json; no GPU that CUDA sees; a driver too old for the
toolkit; a libcuda that hangs or crashes in cuInit, probed in a child with a
deadline. And scripts/stacks.py, which reads the driver through it, going
on past a libcuda that hangs."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import FAKES, ROOT, SCRIPTS


PROBE = os.path.join(ROOT, "scripts", "driver_probe.py")
with open(os.path.join(ROOT, "doctor", "scenarios.json"), encoding="utf-8") as f:
    SCENARIOS = {s["number"]: s for s in json.load(f)["scenarios"]}

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(FAKES, "cuda", "libcuda.so.1")),
                                reason=f"the fake libcuda is not built in {FAKES}")


def probe(tmp_path, driver, *args, gpus=1, **env):
    """driver_probe.py on a fake machine whose libcuda answers `driver`."""
    gpu = {"name": "NVIDIA H200", "pci_bus_id": "0000:19:00.0", "cc_major": 9, "cc_minor": 0}
    (tmp_path / "machine.json").write_text(json.dumps({"driver": driver, "nvml": {"driver_version": "580.95.05"},
                                                       "gpus": [gpu] * gpus}))
    full = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDABENCH_PROBE_SECONDS")}
    full.update({"CUDABENCH_FAKE_GPU": str(tmp_path / "machine.json"), "LD_LIBRARY_PATH": f"{FAKES}/cuda:{FAKES}/nvml",
                 **env})
    start = time.monotonic()
    r = subprocess.run([sys.executable, PROBE, *args], capture_output=True, text=True, timeout=60, env=full)
    return r, time.monotonic() - start


def doctors_words(number):
    s = SCENARIOS[number]
    return f"the doctor's scenario {number}: {s['title']}. Fix: {s['fix']}"


def test_a_working_driver_is_ok(tmp_path):
    r, _ = probe(tmp_path, {"cuda_version": 13000}, "--toolkit", "13.0", gpus=2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok       driver 580.95.05 (CUDA 13.0), 2 GPU(s), ")
    assert r.stdout.rstrip().endswith("fakes/cuda/libcuda.so.1")
    # A 12.x driver runs what a 12.x toolkit builds (minor-version compatibility).
    r, _ = probe(tmp_path, {"cuda_version": 12020}, "--toolkit", "12.8")
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("code,number", [(802, 5), (803, 3), (804, 2), (34, 10)])
def test_cuinits_failure_is_named_in_the_doctors_words(tmp_path, code, number):
    r, _ = probe(tmp_path, {"cuda_version": 13000, "init_result": code}, "--toolkit", "13.0")
    assert r.returncode == 3
    line, = r.stdout.splitlines()
    assert line.startswith("MISSING  a working driver: cuInit failed: ") and f"({code}): " in line
    assert line.endswith(doctors_words(number))


def test_an_unknown_cuinit_failure_names_its_likeliest_causes(tmp_path):
    # 999: nvidia_uvm, a driver in a bad state (Xid lines), a container's missing node (scenario 27)
    r, _ = probe(tmp_path, {"init_result": 999})
    assert r.returncode == 3
    assert "cuInit failed: CUDA_ERROR_UNKNOWN (999): unknown error; " in r.stdout and "Xid" in r.stdout
    assert r.stdout.rstrip().endswith(doctors_words(27))


def test_no_gpu_that_cuda_sees_names_the_likely_cause(tmp_path):
    r, _ = probe(tmp_path, {"device_count": 0})
    assert r.returncode == 3 and "CUDA sees no device" in r.stdout and r.stdout.rstrip().endswith(doctors_words(8))
    r, _ = probe(tmp_path, {"device_count": 0}, CUDA_VISIBLE_DEVICES="")
    assert "CUDA_VISIBLE_DEVICES=''" in r.stdout and r.stdout.rstrip().endswith(doctors_words(9))
    csv = tmp_path / "smi.csv"
    csv.write_text("index, name, mig.mode.current\n0, NVIDIA H200, Enabled\n")
    r, _ = probe(tmp_path, {"device_count": 0}, "--nvidia-smi-csv", str(csv))
    assert "MIG is on" in r.stdout and r.stdout.rstrip().endswith(doctors_words(16))


def test_a_driver_older_than_the_toolkits_major(tmp_path):
    r, _ = probe(tmp_path, {"cuda_version": 12020}, "--toolkit", "13.0")
    assert r.returncode == 3
    assert "the driver runs CUDA 12.2 (cuDriverGetVersion 12020), the toolkit builds for CUDA 13.0" in r.stdout
    assert r.stdout.rstrip().endswith(doctors_words(1))


@pytest.mark.parametrize("fault,said", [("hang", "libcuda hung in cuInit for 2 s"),
                                        ("crash", "libcuda crashed in cuInit (SIGSEGV)")])
def test_a_libcuda_that_hangs_or_crashes_is_a_finding_within_the_deadline(tmp_path, fault, said):
    r, took = probe(tmp_path, {"init_fault": fault}, CUDABENCH_PROBE_SECONDS="2")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith(f"MISSING  a working driver: {said}: a stuck GPU") and "Traceback" not in r.stderr
    assert took < 15


def test_no_libcuda_at_all(tmp_path):
    r, _ = probe(tmp_path, {}, LD_LIBRARY_PATH=str(tmp_path))
    if r.returncode == 0:
        pytest.skip("this machine has a libcuda.so.1 of its own")
    assert r.returncode == 3 and r.stdout.startswith("MISSING  a working driver: no libcuda.so.1 (")


def test_stacks_goes_on_past_a_libcuda_that_hangs(tmp_path):
    (tmp_path / "machine.json").write_text(json.dumps({"driver": {"init_fault": "hang"}}))
    env = dict(os.environ, CUDABENCH_FAKE_GPU=str(tmp_path / "machine.json"), LD_LIBRARY_PATH=f"{FAKES}/cuda",
               CUDABENCH_PROBE_SECONDS="2")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", "from cudabench.commands import stacks; print(stacks.read_driver())"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=SCRIPTS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("(None, '', 'libcuda hung in cuInit for 2 s: a stuck GPU"), r.stdout  # no driver, and why
    assert time.monotonic() - start < 15
