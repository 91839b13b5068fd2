"""`bench --explain` reads the numbers in a message and checks this machine
for each cause: JAX's "Found <library> version N, but JAX was built against
version M" (the versions decoded, the library named), "CUDA unknown error"
(nvidia_uvm, /dev/nvidia-uvm, a driver in a bad state, then
CUDA_VISIBLE_DEVICES, each checked on the fake machine), the driver's
"found version 11040", and "sm_120 is not compatible" (the builds that carry
it). The messages have the shapes the libraries print, written for these
tests. --check makes a cause found here exit 1."""
import json

import pytest

from fake_machine import Machine


def explain(m, text, *extra):
    m.env.update(HOME=str(m.tmp / "home"), CUDABENCH_CACHE=str(m.tmp / "cache"))
    return m.run("--here", "--explain", text, *extra)


JAX = [
    ("CUDA", "12010", "12020", "the CUDA runtime (libcudart) 12.1 (12010)", "against 12.2 (12020)"),
    ("cuDNN", "8600", "8800", "cuDNN (libcudnn) 8.6.0 (8600)", "against 8.8.0 (8800)"),
    ("cuDNN", "90100", "90300", "cuDNN (libcudnn) 9.1.0 (90100)", "against 9.3.0 (90300)"),
    ("cuSOLVER", "11405", "11502", "cuSOLVER (libcusolver) 11.4.5 (11405)", "against 11.5.2 (11502)"),
    ("cuSPARSE", "12001", "12100", "cuSPARSE (libcusparse) 12.0.1 (12001)", "against 12.1.0 (12100)"),
]


@pytest.mark.parametrize("lib, have, built, said, against", JAX)
def test_jax_s_older_wording_names_the_library_that_is_too_old(tmp_path, lib, have, built, said, against):
    text = ("jaxlib/xla_client.py:93] RuntimeError: CUDA backend failed to initialize: Found %s version %s, but JAX "
            "was built against version %s, which is newer. The copy of CUDA that is installed must be at least as "
            "new as the version against which JAX was built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)"
            % (lib, have, built))
    r = explain(Machine(tmp_path), text)
    assert r.returncode == 0 and "[26]" in r.stdout, r.stdout + r.stderr
    assert said in r.stdout and against in r.stdout and "too old" in r.stdout


UNKNOWN = ("RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing "
           "env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.")


def broken_uvm(m, how):
    m.desc["driver"]["init_result"] = 999
    if how == "module":
        m.remove("sys/module/nvidia_uvm")
    elif how == "node":
        m.remove("dev/nvidia-uvm")
        m.write(".dockerenv", "")


@pytest.mark.parametrize("how, vid", [("module", "driver.uvm_missing"), ("node", "driver.uvm_node_missing"),
                                      ("stuck", "driver.bad_state")])
def test_unknown_error_names_the_cause_this_machine_shows(tmp_path, how, vid):
    m = Machine(tmp_path)
    broken_uvm(m, how)
    r = explain(m, UNKNOWN)
    assert "[27]" in r.stdout and "FOUND HERE (error, %s)" % vid in r.stdout, r.stdout
    assert "[9]" not in r.stdout  # CUDA_VISIBLE_DEVICES is named inside [27], as its last cause
    assert r.returncode == 0 and explain(m, UNKNOWN, "--check").returncode == 1


def test_unknown_error_on_a_healthy_machine_lists_the_causes_in_order(tmp_path):
    r = explain(Machine(tmp_path), UNKNOWN)
    assert "[27]" in r.stdout and "[9]" not in r.stdout and "FOUND HERE" not in r.stdout, r.stdout
    fix = r.stdout[r.stdout.index("  fix: "):]
    order = [fix.index(w) for w in ("nvidia_uvm", "bad state", "/dev/nvidia-uvm", "CUDA_VISIBLE_DEVICES")]
    assert order == sorted(order), fix
    assert r.returncode == 0 and explain(Machine(tmp_path / "b"), UNKNOWN, "--check").returncode == 0


def test_a_bad_cuda_visible_devices_is_named_under_unknown_error_too(tmp_path):
    m = Machine(tmp_path)  # what the fake libcuda answers for a GPU that is not there
    m.env["CUDA_VISIBLE_DEVICES"] = "7"
    m.desc["driver"].update(init_result=100, device_count=0)
    r = explain(m, UNKNOWN)
    assert "[27]" in r.stdout and "FOUND HERE (error, driver.visible_devices)" in r.stdout, r.stdout


def test_a_healthy_machine_shows_no_uvm_verdict(tmp_path):
    rep = Machine(tmp_path).report()
    assert not [v for v in rep["verdicts"] if v["id"] in ("driver.uvm_missing", "driver.uvm_node_missing", "driver.bad_state")]


def test_the_driver_s_found_version_is_decoded(tmp_path):
    r = explain(Machine(tmp_path), "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
                                   "(found version 11040). Please update your GPU driver")
    assert "[1]" in r.stdout and '"found version 11040" is the driver\'s CUDA' in r.stdout and "CUDA 11.4" in r.stdout
    assert "12.x >= 525.60.13, 13.x >= 580.65.06" in r.stdout


def test_sm_120_names_the_builds_that_carry_it(tmp_path):
    r = explain(Machine(tmp_path), "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible "
                                   "with the current PyTorch installation. The current PyTorch install supports CUDA "
                                   "capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.")
    assert "[6]" in r.stdout and "sm_120 is compute capability 12.0" in r.stdout, r.stdout
    assert "the first torch build in cudabench's table that carries it is torch 2.7.0 (cu128)" in r.stdout
    assert "torch 2.10.0 (cu128, driver >= 525.60.13)" in r.stdout and "sm_XY" not in r.stdout
    assert "torch 2.7.1 (cu118" not in r.stdout  # CUDA 11.8 builds have no sm_120


OTHER_MACHINE = ("NVIDIA-SMI 470.182.03   Driver Version: 470.182.03   CUDA Version: 11.4\n"
                 "|   0  NVIDIA GeForce RTX 3090        Off  | 00000000:01:00.0 Off |                  N/A |\n"
                 '  File "/home/user/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 217\n'
                 "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).")


def test_a_paste_s_driver_and_gpu_pick_the_build_and_this_machine_stays_apart(tmp_path):
    """A paste from a 470 machine with an RTX 3090, answered on a healthy
    H200 with a 580 driver: the paste's facts first, the torch that runs on
    the paste's driver, and this machine under its own heading, not the cause."""
    m = Machine(tmp_path)
    m.env.update(HOME=str(m.tmp / "home"), CUDABENCH_CACHE=str(m.tmp / "cache"))
    r = m.run("--explain", OTHER_MACHINE)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("What the paste shows: driver 470.182.03 (CUDA 11.4); GPU rtx 3090 (compute capability 8.6); "
                          "the package torch"), out
    assert "install torch 2.7.1, the cu118 build (CUDA 11.8)" in out  # the newest torch a CUDA 11.4 driver runs
    assert "On this machine (not the paste's cause: the paste's driver 470.182.03 is not this machine's (580.95.05))" in out
    assert "FOUND HERE" not in out and out.index("[1] ") < out.index("On this machine")


def test_a_paste_whose_driver_is_this_machine_s_is_taken_for_it(tmp_path):
    m = Machine(tmp_path)
    m.desc["driver"]["init_result"] = 804
    m.libcuda_at("usr/local/cuda-13.0/compat", version="580.95.05")
    m.env.update(HOME=str(m.tmp / "home"), CUDABENCH_CACHE=str(m.tmp / "cache"))
    text = "Driver Version: 580.95.05\nError 804: forward compatibility was attempted on non supported HW"
    r = m.run("--explain", text)
    assert "taken as the paste's: the paste's driver is this machine's" in r.stdout, r.stdout
    assert "FOUND HERE (error, driver.compat_unsupported)" in r.stdout
    # Without the driver's line the paste is not taken for this machine's, unless the user says so.
    r = m.run("--explain", text.splitlines()[1], "--explain-json")
    answer = json.loads(r.stdout)
    assert not answer["here"] and not answer["cause_found"] and answer["causes"][0]["id"] == "compat_not_supported"
    assert json.loads(m.run("--here", "--explain", text.splitlines()[1], "--explain-json").stdout)["cause_found"]
