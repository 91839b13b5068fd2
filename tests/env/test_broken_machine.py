"""A broken machine never hangs or kills bench and train.

The fake libcuda (tests/fakes/fake_libcuda.cpp) and fake NVML hang, crash
or end the process where a stuck GPU or a broken driver does: in cuInit, in
cuDriverGetVersion, in cuGetProcAddress (the runtime's first call), in the
library's constructor (while it loads, also when preloaded), in nvmlInit. Each must leave `bench --env` answering within its deadline with
a finding that names the call, `--explain` naming the scenario, the CPU
benchmarks running, and `train --device cpu` training.

CUDABENCH_BUILD_DIR names the build to test (default: build/).
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import BENCH, FAKES, ROOT, TRAIN


DEADLINE = 3  # CUDABENCH_PROBE_SECONDS for these runs

pytestmark = pytest.mark.skipif(not (os.access(BENCH, os.X_OK) and os.path.exists(f"{FAKES}/cuda/libcuda.so.1")),
                                reason="bench and the fake libcuda are not built")

# (machine description, the finding's words)
FAULTS = [
    ({"driver": {"init_fault": "hang"}}, f"libcuda hung in cuInit for {DEADLINE} s"),
    ({"driver": {"version_fault": "hang"}}, f"libcuda hung in cuDriverGetVersion for {DEADLINE} s"),
    ({"driver": {"init_fault": "crash"}}, "libcuda crashed in cuInit (SIGSEGV)"),
    ({"driver": {"version_fault": "crash"}}, "libcuda crashed in cuDriverGetVersion (SIGSEGV)"),
    ({"driver": {"load_fault": "crash"}}, "libcuda crashed in dlopen libcuda.so.1 (SIGSEGV)"),
    ({"driver": {"load_fault": "hang"}}, f"libcuda hung in dlopen libcuda.so.1 for {DEADLINE} s"),
    ({"nvml": {"init_fault": "hang"}}, f"NVML hung in nvmlInit_v2 for {DEADLINE} s"),
    ({"driver": {"init_fault": "exit"}}, "libcuda ended the process in cuInit (exit 0)"),
    ({"driver": {"load_fault": "exit"}}, "libcuda ended the process in dlopen libcuda.so.1 (exit 0)"),
    ({"driver": {"proc_fault": "hang"}, "getproc": True}, f"libcuda hung in cuGetProcAddress for {DEADLINE} s"),
    ({"driver": {"proc_fault": "crash"}, "getproc": True}, "libcuda crashed in cuGetProcAddress (SIGSEGV)"),
]
IDS = ["cuInit-hang", "version-hang", "cuInit-crash", "version-crash", "load-crash", "load-hang", "nvml-hang",
       "cuInit-exit", "load-exit", "getproc-hang", "getproc-crash"]


def run(tmp_path, machine, *args, program=BENCH, timeout=120, env_more=None):
    """The program on the fake machine; `"getproc": True` takes the fake with cuGetProcAddress_v2."""
    machine = dict(machine)
    cuda = f"{FAKES}/cuda-getproc" if machine.pop("getproc", False) else f"{FAKES}/cuda"
    (tmp_path / "machine.json").write_text(json.dumps({"gpus": [{"name": "NVIDIA H200"}], **machine}))
    env = dict(os.environ, CUDABENCH_FAKE_GPU=str(tmp_path / "machine.json"), CUDABENCH_PROBE_SECONDS=str(DEADLINE),
               LD_LIBRARY_PATH=f"{cuda}:{FAKES}/nvml", HOME=str(tmp_path), CUDABENCH_CACHE=str(tmp_path / "c"),
               **(env_more or {}))
    t0 = time.monotonic()
    r = subprocess.run([program, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=tmp_path)
    return r, time.monotonic() - t0


@pytest.mark.parametrize("machine,finding", FAULTS, ids=IDS)
def test_env_answers_within_its_deadline_with_a_finding(tmp_path, machine, finding):
    r, took = run(tmp_path, machine, "--env=json")
    assert r.returncode == 0, r.stderr
    assert took < DEADLINE + 20, took
    report = json.loads(r.stdout)
    assert report["gpu_usable"] is False and finding in report["gpu_unusable_reason"], report["gpu_unusable_reason"]
    ids = {v["id"]: v for v in report["verdicts"]}
    v = ids.get("driver.hung") or ids.get("driver.crashed")
    assert v and v["level"] == "error" and finding in v["message"], report["verdicts"]
    assert "dmesg" in v["fix"] and "nvidia-smi" in v["fix"]
    assert "driver.missing" not in ids  # the driver is there, it is stuck
    r, _ = run(tmp_path, machine, "--env", "--check")
    assert r.returncode == 1 and finding in r.stdout  # an error verdict, as --check counts it


@pytest.mark.parametrize("machine,finding", FAULTS, ids=IDS)
def test_cpu_benchmarks_run_beside_a_broken_driver(tmp_path, machine, finding):
    out = tmp_path / "r.json"
    r, _ = run(tmp_path, machine, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
               f"--benchmark_out={out}")
    assert r.returncode == 0, r.stderr
    assert finding in r.stderr  # the note: why the GPU rows are absent
    doc = json.loads(out.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["VectorAdd/cpu_scalar/n:4096/real_time"]


@pytest.mark.parametrize("fault", ["crash", "hang"])
def test_a_preloaded_libcuda_that_breaks_in_its_constructor_is_withheld_too(tmp_path, fault):
    """LD_PRELOAD loads it into every process, the check's too; on the
    second start it is left out of LD_PRELOAD, or it would break bench again."""
    machine = {"driver": {"load_fault": fault}}
    preload = {"LD_PRELOAD": f"{FAKES}/cuda/libcuda.so.1"}
    r, took = run(tmp_path, machine, "--env=json", env_more=preload)
    assert r.returncode == 0 and took < DEADLINE + 20, (r.returncode, took, r.stderr)
    reason = json.loads(r.stdout)["gpu_unusable_reason"]
    assert ("crashed in" if fault == "crash" else "hung in") in reason, reason
    out = tmp_path / "r.json"
    r, _ = run(tmp_path, machine, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
               f"--benchmark_out={out}", env_more=preload)
    assert r.returncode == 0 and json.loads(out.read_text())["benchmarks"], r.stderr


def test_explain_names_a_stuck_gpu_and_finds_it_here(tmp_path):
    r, _ = run(tmp_path, {"driver": {"init_fault": "hang"}}, "--here", "--explain",
               "NVRM: Xid (PCI:0000:19:00): 79, pid=1234, GPU has fallen off the bus.")
    assert r.returncode == 0, r.stderr
    assert "[25]" in r.stdout and "FOUND HERE (error, driver.hung)" in r.stdout


@pytest.mark.skipif(not os.access(TRAIN, os.X_OK), reason="train is not built (it needs LibTorch)")
@pytest.mark.parametrize("machine,finding", [FAULTS[0], FAULTS[4]], ids=["cuInit-hang", "load-crash"])
def test_train_on_the_cpu_beside_a_broken_driver(tmp_path, machine, finding):
    r, took = run(tmp_path, machine, "--device", "cpu", "--epochs", "1", "--limit", "256", "--test-limit", "64",
                  "--quiet", "--json", str(tmp_path / "t.json"), program=TRAIN)
    assert r.returncode == 0, r.stderr
    env = json.loads((tmp_path / "t.json").read_text())["environment"]
    assert finding in env["gpu_unusable_reason"]
    r, _ = run(tmp_path, machine, "--device", "cuda", "--epochs", "1", program=TRAIN)
    assert r.returncode == 2 and finding in r.stderr


def test_a_probed_program_that_leaves_a_child_holding_its_pipe_does_not_hold_bench(tmp_path):
    """An nvcc on PATH that forks a child which keeps stdout open (a stuck
    tool's helper): the toolkit probe's deadline ends it, bench answers."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvcc").write_text("#!/bin/sh\n(sleep 300) &\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    (fake / "nvcc").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    t0 = time.monotonic()
    r = subprocess.run([BENCH, "--env"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 30


def checks_logged(log):
    """How many cudabench-driver-check processes called the fake cuInit
    (lines "PID NAME", the name cut by the kernel at 15 characters)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return len({line.split()[0] for line in lines if line.split()[1:2] == ["cudabench-drive"]})


@pytest.mark.parametrize("fault", [None, "hang"])
def test_a_run_of_several_processes_checks_the_driver_once(tmp_path, fault):
    """The default run's processes (samples.py, as run-bench.sh starts it)
    share one driver check; a bench started alone checks for itself. A
    check that fails passes nothing down: each process checks again and
    withholds the driver, and the run still ends with its CPU rows.
    --max-interference 1: no process runs again beside other load, so each
    is counted once."""
    log = tmp_path / "init.log"
    machine = {"driver": {"init_log": str(log), **({"init_fault": fault} if fault else {})}}
    cpu_row = "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/"
    r, _ = run(tmp_path, machine, cpu_row, "--benchmark_min_time=0.01")
    assert r.returncode == 0, r.stderr
    assert checks_logged(log) == 1
    log.unlink()
    out = tmp_path / "merged.json"
    r, _ = run(tmp_path, machine, os.path.join(ROOT, "scripts", "samples.py"), "run", "--bench", BENCH,
               "--processes", "3", "--most", "3", "--filter", "VectorAdd/cpu_scalar/n:4096/", "--min-time", "0.01",
               "--max-interference", "1", "--out", str(out), program=sys.executable, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 3
    assert checks_logged(log) == (1 if fault is None else 1 + 3)


def test_the_restart_after_a_broken_driver_keeps_an_environment_of_any_size(tmp_path):
    """Past about 4,000 variables the restart dropped the rest: the last
    ones (here OMP_NUM_THREADS=1, set after 6,000 others) must survive it."""
    flood = {f"CUDABENCH_TEST_FLOOD_{i}": "x" for i in range(6000)}
    flood["OMP_NUM_THREADS"] = "1"
    out = tmp_path / "r.json"
    r, _ = run(tmp_path, FAULTS[2][0], "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
               f"--benchmark_out={out}", env_more=flood)
    assert r.returncode == 0 and FAULTS[2][1] in r.stderr, r.stderr  # restarted with the driver withheld
    assert int(json.loads(out.read_text())["context"]["cpu_threads_used"]) == 1


@pytest.mark.parametrize("fault", [None, "crash"])
def test_a_stray_withheld_variable_is_not_the_drivers_state(tmp_path, fault):
    """CUDABENCH_LIBCUDA_WITHHELD is the guard's word only with its stub
    preloaded: set by hand, it neither skips the check nor is reported."""
    stray = {"CUDABENCH_LIBCUDA_WITHHELD": "libcuda hung in cuMadeUp for 99 s"}
    machine = {"driver": {"init_fault": fault}} if fault else {}
    r, _ = run(tmp_path, machine, "--env=json", env_more=stray)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "cuMadeUp" not in r.stdout
    if fault:  # checked all the same: the real finding
        assert "libcuda crashed in cuInit" in report["gpu_unusable_reason"]
    else:
        assert report["gpu_usable"] is True, report["gpu_unusable_reason"]


@pytest.mark.parametrize("program", ["bench", "train"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGALRM])
def test_a_signal_during_the_driver_check_ends_the_check_too(tmp_path, program, sig):
    """The check runs in a group of its own, stuck in cuInit here: Ctrl-C or
    TERM to bench or train must not leave it behind."""
    exe = BENCH if program == "bench" else TRAIN
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} is not built")
    (tmp_path / "machine.json").write_text(json.dumps({"gpus": [{"name": "NVIDIA H200"}],
                                                       "driver": {"init_fault": "hang"}}))
    env = dict(os.environ, CUDABENCH_FAKE_GPU=str(tmp_path / "machine.json"), CUDABENCH_PROBE_SECONDS="60",
               LD_LIBRARY_PATH=f"{FAKES}/cuda:{FAKES}/nvml", HOME=str(tmp_path))
    p = subprocess.Popen([exe, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    check = None
    for _ in range(200):  # the check: a child of p running cudabench-driver-check
        kids = subprocess.run(["pgrep", "-P", str(p.pid), "-f", "cudabench-driver-check"], capture_output=True,
                              text=True).stdout.split()
        if kids:
            check = int(kids[0])
            break
        time.sleep(0.05)
    assert check, "the driver check never started"
    time.sleep(0.3)
    p.send_signal(sig)
    p.wait(timeout=20)
    assert p.returncode == -sig
    time.sleep(0.2)
    try:
        os.kill(check, 0)
        state = open(f"/proc/{check}/stat").read().split(") ")[1][0]
    except (ProcessLookupError, FileNotFoundError):
        state = "gone"
    assert state in ("gone", "Z"), f"cudabench-driver-check is still running ({state})"
