"""Conclusions that survive broken files, and fixes that fit the driver:
`bench --env` on fake environments whose torch/version.py is binary, a
folder, a dangling link, a FIFO, a link loop or truncated beside a valid
dist-info; a ROCm torch; a CuPy known only by its dist-info; a library that
resolves nowhere; two blocking causes at once; and, on drivers for CUDA
11.8, 12.2 and 13.0, the build each fix names for torch, JAX and CuPy.
Also --check=python (the user's environments alone) and --import keeping
the end of a long traceback."""
import json
import os
import subprocess

import pytest

from fake_machine import Machine
from fake_python import Env, driver, env_of, errors, kernels, scan, verdict  # noqa: F401 (kernels: a fixture)

NUL_BYTES = bytes(range(256)) * 4


def torch_with_broken_version_py(site, how):
    """torch 2.5.1+cu124's dist-info (pinning the CUDA 12.4 runtime) beside a
    torch/version.py that is broken `how`."""
    vp = site / "torch/version.py"
    vp.parent.mkdir(parents=True)
    if how == "binary":
        vp.write_bytes(NUL_BYTES)
    elif how == "folder":
        vp.mkdir()
    elif how == "dangling link":
        os.symlink(site / "torch/nowhere.py", vp)
    elif how == "fifo":
        os.mkfifo(vp)
    elif how == "link loop":
        os.symlink(site / "torch/other.py", vp)
        os.symlink(vp, site / "torch/other.py")
    elif how == "truncated":
        vp.write_text("from typing import Optional\n\n__version__ = '2.5.1+cu124'\ndeb")


BROKEN = [("binary", "not text", "error"), ("folder", "a folder", "error"),
          ("dangling link", "a dangling link", "error"), ("fifo", "a FIFO", "error"),
          ("link loop", "a link loop", "error"), ("truncated", "no cuda line", "warning")]


@pytest.mark.parametrize("how, said, level", BROKEN)
def test_a_broken_version_py_still_names_torch_from_the_rest(tmp_path, how, said, level):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    torch_with_broken_version_py(e.site, how)
    e.dist("torch", "2.5.1+cu124", ["nvidia-cuda-runtime-cu12==12.4.127; platform_system == \"Linux\""])
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    torch = env["packages"][0]
    assert (torch["name"], torch["version"], torch["build"], torch["cuda"]) == ("torch", "2.5.1+cu124", "cuda", "12.4")
    assert any(said in u for u in torch["unread"]), torch["unread"]
    v = verdict(env, "python.broken_install", level)
    assert said in v["message"] and "--force-reinstall" in v["fix"] and "whl/cu124" in v["fix"]
    assert "python.cpu_only" not in [x["id"] for x in env["verdicts"]]
    for x in env["verdicts"]:  # each says what it could not read
        assert any(e_.startswith("not read: torch/version.py") for e_ in x["evidence"]), x
    text = m.run("--env", "--python", str(e.prefix)).stdout
    assert "torch 2.5.1+cu124: CUDA 12.4" in text and "NOT READ: torch/version.py" in text
    line = [x for x in text.splitlines() if x.strip().startswith(os.path.realpath(e.prefix) + "  [")]
    assert line and "no torch, jax, tensorflow or cupy" not in line[0]


def test_a_truncated_version_py_draws_on_the_library_when_nothing_else_tells(tmp_path, kernels):
    # No local tag, no CUDA requirement: the runtime libtorch_cuda.so needs names CUDA 13.
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    (e.site / "torch/lib").mkdir(parents=True)
    (e.site / "torch/version.py").write_text("from typing import Optional\n\n__version__ = '2.5.1'\ndeb")
    (e.site / "torch/lib/libtorch_cuda.so").write_bytes(kernels["rpath"].read_bytes())
    e.dist("torch", "2.5.1")
    torch = env_of(scan(m, e.prefix)[0], e.prefix)["packages"][0]
    assert (torch["build"], torch["cuda"], torch["build_from"]) == ("cuda", "13", "the runtime its library needs")
    assert torch["fatbin"]["sass"] == ["sm_90"]


def test_a_rocm_build_is_named_as_one(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    (e.site / "torch").mkdir()
    (e.site / "torch/version.py").write_text("from typing import Optional\n\n__version__ = '2.5.1+rocm6.2'\n"
                                             "debug = False\ncuda: Optional[str] = None\n"
                                             "hip: Optional[str] = '6.2.41133-dd7f95766'\n")
    e.dist("torch", "2.5.1+rocm6.2")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert (env["packages"][0]["build"], env["packages"][0]["rocm"]) == ("rocm", "6.2")
    v = verdict(env, "python.rocm", "warning")
    assert "ROCm build (ROCm 6.2)" in v["message"] and "NVIDIA" in v["message"]
    assert "not compiled with CUDA" not in v["message"] and "python.cpu_only" not in [x["id"] for x in env["verdicts"]]
    assert "torch 2.11.0, the cu130 build" in v["fix"]


@pytest.mark.parametrize("dist, build, cuda", [("cupy_cuda12x", "cuda", "12"), ("cupy_rocm_6_0", "rocm", "")])
def test_cupy_is_named_from_its_dist_info_alone(tmp_path, dist, build, cuda):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    e.dist(dist, "13.3.0")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    cupy = env["packages"][0]
    assert (cupy["name"], cupy["version"], cupy["build"], cupy["cuda"]) == ("cupy", "13.3.0", build, cuda)
    assert "cupy/_version.py: missing" in cupy["unread"]
    assert "cupy/_version.py: missing" in verdict(env, "python.broken_install", "error")["message"]


def test_a_library_that_resolves_nowhere_is_an_error_with_its_fix(tmp_path):
    if "libcudart.so.12 " in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout:
        pytest.skip("this machine has a libcudart.so.12 on its loader's path")
    stub, src = tmp_path / "stub", tmp_path / "t.c"
    stub.mkdir()
    src.write_text("int torch_cuda(void) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o", str(stub / "libcudart.so.12"), str(src)], check=True)
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.5.1+cu124", "12.4", requires=["nvidia-cuda-runtime-cu12==12.4.127; platform_system == \"Linux\""])
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(e.site / "torch/lib/libtorch_cuda.so"), str(src),
                    "-L", str(stub), "-Wl,--no-as-needed", "-l:libcudart.so.12"], check=True)
    (stub / "libcudart.so.12").unlink()
    report, _ = scan(m, e.prefix)
    env = env_of(report, e.prefix)
    v = verdict(env, "python.library_missing", "error")
    assert "libcudart.so.12" in v["message"] and "cannot open shared object file" in v["message"]
    assert "pip install nvidia-cuda-runtime-cu12==12.4.127" in v["fix"]
    assert m.run("--env", "--check=python", "--python", str(e.prefix)).returncode == 1


def test_two_blocking_causes_are_both_named_in_the_order_met(tmp_path):
    m = Machine(tmp_path)  # a container without device nodes, on a driver for CUDA 12.2
    for n in ("nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools"):
        m.remove("dev/" + n)
    m.write(".dockerenv", "")
    m.desc["driver"]["init_result"] = 100
    driver(m, 12020, "535.183.01")
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert errors(env) == ["python.device_nodes", "python.driver_too_old"]
    first, second = [v for v in env["verdicts"] if v["level"] == "error"]
    assert first["message"].startswith("cause 1 of 2: ") and "/dev/nvidia*" in first["message"]
    assert second["message"].startswith("cause 2 of 2: ") and "torch 2.10.0, the cu128 build" in second["fix"]


# ---------------------------------------------------------------- fixes that fit the driver

DRIVERS = {"11.8": (11080, "520.61.05"), "12.2": (12020, "535.183.01"), "13.0": (13000, "580.95.05"),
           "10.2": (10020, "440.33.01")}


def torch_env(e, driver_cuda):
    return e.torch("2.11.0+cu130", "13.0") if driver_cuda != "13.0" else e.torch("2.11.0+cpu", None)


def jax_env(e, driver_cuda):
    (e.site / "jaxlib").mkdir()
    (e.site / "jaxlib/version.py").write_text('_version = "0.7.2"\n')
    if driver_cuda != "13.0":  # 13.0: jaxlib alone, a CPU build
        e.dist("jax_cuda13_plugin", "0.7.2")


def cupy_env(e, driver_cuda):
    e.dist("cupy_cuda13x" if driver_cuda != "13.0" else "cupy_rocm_6_0", "14.0.0")
    (e.site / "cupy").mkdir()
    (e.site / "cupy/_version.py").write_text("__version__ = '14.0.0'\n")


FITS = [
    ("torch", "11.8", "install torch 2.7.1, the cu118 build", ">= 580.65.06 for torch 2.11.0 (cu130)"),
    ("torch", "12.2", "install torch 2.10.0, the cu128 build", ">= 580.65.06 for torch 2.11.0 (cu130)"),
    ("torch", "13.0", "install torch 2.11.0, the cu130 build", None),
    ("jax", "11.8", 'jax[cuda11_pip]==0.4.25', ">= 525.60.13 for jax[cuda12]"),
    ("jax", "12.2", 'pip install -U "jax[cuda12]"', ">= 580.65.06 for jax[cuda13]"),
    ("jax", "13.0", 'pip install -U "jax[cuda13]"', None),
    ("cupy", "11.8", 'pip install "cupy-cuda11x<14"', ">= 525.60.13 for cupy-cuda12x"),
    ("cupy", "12.2", "pip install cupy-cuda12x", ">= 580.65.06 for cupy-cuda13x"),
    ("cupy", "13.0", "pip install cupy-cuda13x", None),
    ("cupy", "10.2", "no cupy build runs on this driver (CUDA 10.2)", ">= 450.80.02 for cupy-cuda11x (CuPy 13)"),
]


@pytest.mark.parametrize("package, driver_cuda, fix, newer", FITS)
def test_the_fix_names_the_build_that_fits_this_driver(tmp_path, package, driver_cuda, fix, newer):
    m = Machine(tmp_path)
    driver(m, *DRIVERS[driver_cuda])
    e = Env(tmp_path / "venv")
    {"torch": torch_env, "jax": jax_env, "cupy": cupy_env}[package](e, driver_cuda)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    vid = {"13.0": {"torch": "python.cpu_only", "jax": "python.cpu_only", "cupy": "python.rocm"}[package]}.get(
        driver_cuda, "python.driver_too_old")
    v = verdict(env, vid)
    assert fix in v["fix"], v["fix"]
    if newer:
        assert newer in v["fix"], v["fix"]
    else:
        assert "newer driver" not in v["fix"], v["fix"]


def test_check_python_judges_the_user_s_environments_alone(tmp_path):
    # On a 12.x driver cudabench's own CUDA 13 build is an error by itself:
    # --check says 1 whatever the environments hold, --check=python does not.
    m = Machine(tmp_path)
    driver(m, *DRIVERS["12.2"])
    good = Env(tmp_path / "good").torch("2.10.0+cu128", "12.8")
    scan(m)  # the fake $HOME and the managers' settings
    machine = json.loads(m.run("--env=json", "--python", str(good.prefix)).stdout)
    if any(v["level"] == "error" for v in machine["verdicts"]):  # cudabench's own CUDA 13 build, as here
        assert m.run("--env", "--check", "--python", str(good.prefix)).returncode == 1
    assert m.run("--env", "--check=python", "--python", str(good.prefix)).returncode == 0
    bad = Env(tmp_path / "bad").torch("2.11.0+cu130", "13.0")
    assert m.run("--env", "--check=python", "--python", str(bad.prefix)).returncode == 1
    r = m.run("--check=python", "--python", str(bad.prefix))
    assert r.returncode == 2 and "go with --env" in r.stderr


def test_import_keeps_the_end_of_a_long_traceback(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    (e.prefix / "bin").mkdir()
    (e.prefix / "bin/python3").write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):'\n"
        "i=0; while [ $i -lt 60 ]; do echo \"  File \\\"/x/mod$i.py\\\", line $i, in <module>\"; i=$((i+1)); done\n"
        "echo 'ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory'\nexit 1\n")
    (e.prefix / "bin/python3").chmod(0o755)
    env = env_of(scan(m, e.prefix, extra=["--import"])[0], e.prefix)
    printed = env["imports"][0]["warnings"]
    assert printed[-1].startswith("ImportError: libcudnn.so.9") and len(printed) == 21
    assert printed[0] == "(42 earlier lines not kept)"  # 62 lines printed


def test_an_editable_install_is_not_a_broken_one(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    e.dist("torch", "2.8.0a0+git1234567")
    (e.site / "__editable__.torch-2.8.0a0+git1234567.pth").write_text("/src/pytorch\n")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert "python.broken_install" not in [v["id"] for v in env["verdicts"]], env["verdicts"]
    assert any("editable install" in u for u in env["packages"][0]["unread"])


@pytest.mark.parametrize("dist, cuda", [("cupy_cuda110", "11.0"), ("cupy_cuda102", "10.2"), ("cupy_cuda11x", "11")])
def test_old_cupy_wheels_name_their_cuda(tmp_path, dist, cuda):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv")
    e.dist(dist, "9.6.0")
    (e.site / "cupy").mkdir()
    (e.site / "cupy/_version.py").write_text("__version__ = '9.6.0'\n")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert env["packages"][0]["cuda"] == cuda and errors(env) == []  # all run on a CUDA 13 driver


def test_a_fifo_where_a_library_should_be_does_not_block_the_scan(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    os.mkfifo(e.site / "torch/lib/libtorch_cuda.so")
    env = env_of(scan(m, e.prefix)[0], e.prefix)  # Machine.run's timeout would fail it
    assert env["packages"][0]["build"] == "cuda"
