"""The user's own Python, diagnosed: `bench --env --python PATH` and
`bench --explain` on fake environment trees (venvs, conda envs, a user
site, torch/version.py of every flavour, dist-info metadata, a small library
whose fatbin nvcc makes here for one architecture, a planted
LD_LIBRARY_PATH shadow) on the fake machines of test_doctor.py (the fake
libcuda's driver CUDA, a fake device's compute capability). `--import` runs
for real against the project's venv.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from fake_machine import Machine
from fake_python import Env, driver, env_of, errors, kernels, scan, verdict  # noqa: F401 (kernels: a fixture)

from conftest import ROOT
from cudabench.base.text import visible

# ---------------------------------------------------------------- builds against the driver

def test_a_cuda_13_wheel_on_a_12_8_driver_gets_the_build_that_fits(tmp_path, kernels):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0", kernels["rpath"],
                                     ["nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\""])
    report, rc = scan(m, e.prefix)
    env = env_of(report, e.prefix)
    assert env["kind"] == "venv" and env["python"] == "3.11"
    torch = env["packages"][0]
    assert (torch["name"], torch["version"], torch["cuda"], torch["cudnn"]) == ("torch", "2.11.0+cu130", "13.0", "9.19.0.56")
    assert torch["fatbin"]["sass"] == ["sm_90"] and torch["fatbin"]["ptx"] == []
    v = verdict(env, "python.driver_too_old", "error")
    assert "torch 2.11.0+cu130" in v["message"] and "CUDA 13.x driver" in v["message"] and "12.8" in v["message"]
    assert "torch 2.10.0, the cu128 build (CUDA 12.8)" in v["fix"]
    assert "--index-url https://download.pytorch.org/whl/cu128" in v["fix"]
    assert rc == 0 and m.run("--env", "--check", "--python", str(e.prefix)).returncode == 1  # --check counts it
    text = m.run("--env", "--python", str(e.prefix)).stdout
    assert "Python environments" in text and "torch 2.11.0+cu130: CUDA 13.0" in text and "kernels (fatbin): sm_90" in text


def test_a_cpu_build_is_named_cpu_only(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cpu", None)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert env["packages"][0]["cuda_build"] is False
    v = verdict(env, "python.cpu_only", "warning")  # a GPU is here: it is a warning
    assert "CPU-only build" in v["message"] and "torch 2.11.0, the cu130 build" in v["fix"]


def test_a_cuda_11_8_build_on_a_cuda_13_driver_runs(tmp_path, kernels):
    m = Machine(tmp_path)  # driver 580, CUDA 13.0, an H200 (sm_90)
    e = Env(tmp_path / "venv").torch("2.1.0+cu118", "11.8", kernels["rpath"])
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert [v for v in env["verdicts"] if v["level"] in ("warning", "error")] == []


def test_minor_version_compatibility_is_not_a_conflict(tmp_path, kernels):
    # A CUDA 12.4 wheel on the 535 branch's CUDA 12.2 runs (env-doctor calls it a conflict).
    m = Machine(tmp_path)
    driver(m, 12020, "535.183.01")
    e = Env(tmp_path / "venv").torch("2.4.0+cu124", "12.4", kernels["rpath"])
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert errors(env) == []
    assert "minor-version compatibility" in verdict(env, "python.driver_minor", "info")["message"]


def test_a_gpu_the_kernels_do_not_cover(tmp_path, kernels):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    m.desc["gpus"][0].update(name="NVIDIA GeForce RTX 5090", cc_major=12, cc_minor=0, pci_device_id="2b85")
    e = Env(tmp_path / "venv").torch("2.5.1+cu124", "12.4", kernels["rpath"])
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    v = verdict(env, "python.arch", "error")
    assert "sm_120" in v["message"] and "not compatible with the current PyTorch installation" in v["message"]
    assert any("sm_90" in x for x in v["evidence"])
    assert "torch 2.10.0, the cu128 build" in v["fix"]  # it covers sm_120 and runs on 12.8


# ---------------------------------------------------------------- libraries and installs

def shadow(tmp_path, version="13.0.20"):
    """An older libcudart.so.13 on LD_LIBRARY_PATH, versioned as a toolkit
    installs it: a real runtime (bench itself loads it from there)."""
    real = os.path.realpath("/usr/local/cuda/lib64/libcudart.so.13")
    if not os.path.isfile(real):
        pytest.skip("no CUDA 13 runtime to plant as the shadow")
    d = tmp_path / "old-cuda/lib64"
    d.mkdir(parents=True)
    shutil.copy(real, d / ("libcudart.so." + version))
    os.symlink("libcudart.so." + version, d / "libcudart.so.13")
    return d


@pytest.mark.parametrize("dtags, flagged", [("runpath", True), ("rpath", False)])
def test_an_older_runtime_on_ld_library_path(tmp_path, kernels, dtags, flagged):
    # DT_RUNPATH is searched after LD_LIBRARY_PATH, DT_RPATH before it: the
    # same shadow wins over one library and not the other.
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0", kernels[dtags])
    e.cudart_wheel()
    m.env["LD_LIBRARY_PATH"] = str(shadow(tmp_path)) + ":" + m.libcuda_dir + ":" + m.nvml_dir
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    lib = env["packages"][0]["libraries"][0]
    assert lib["name"] == "libcudart.so.13" and lib["own_version"] == "13.0.96"
    assert lib["via"] == ("LD_LIBRARY_PATH" if flagged else "RPATH")
    if flagged:
        v = verdict(env, "python.library_shadowed", "error")
        assert "older than its own 13.0.96" in v["message"] and "LD_LIBRARY_PATH" in v["fix"]
        assert lib["version"] == "13.0.20" and lib["shadowed"]
    else:
        assert "python.library_shadowed" not in [v["id"] for v in env["verdicts"]]


def test_conda_cudatoolkit_beside_pip_wheels(tmp_path, kernels):
    m = Machine(tmp_path)
    e = Env(tmp_path / "conda-env", kind="conda").torch("2.1.0+cu118", "11.8", kernels["rpath"])
    (e.prefix / "conda-meta/cudatoolkit-11.8.0-h6a678d5_0.json").write_text("{}")
    e.dist("nvidia_cuda_runtime_cu11", "11.8.89")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert env["kind"] == "conda" and env["conda_cuda"] == "cudatoolkit 11.8.0"
    v = verdict(env, "python.conda_pip_mix", "warning")
    assert "cudatoolkit 11.8.0" in v["message"] and "nvidia-cuda-runtime-cu11 11.8.89" in v["evidence"][1]


def test_the_user_site_shadows_a_conda_env_found_through_environments_txt(tmp_path, kernels):
    m = Machine(tmp_path)
    home = tmp_path / "home"
    conda = Env(tmp_path / "miniconda3/envs/work", kind="conda").torch("2.6.0+cu126", "12.6", kernels["rpath"])
    (home / ".conda").mkdir(parents=True)
    (home / ".conda/environments.txt").write_text(str(conda.prefix) + "\n")
    user = Env(home / ".local/lib/python3.11/site-packages", kind="site").torch("2.6.0+cpu", None)
    report, _ = scan(m)  # neither is given: both are found
    env = env_of(report, conda.prefix)
    assert "~/.conda/environments.txt" in env["found_via"]
    assert env["sites"][0] == os.path.realpath(user.site)  # Python puts the user site first
    v = verdict(env, "python.shadowed_install", "warning")
    assert str(user.site) in v["message"]
    verdict(env, "python.cpu_only")  # what it imports is the user's CPU build
    assert env_of(report, user.site)["kind"] == "user-site"


def test_jax_tensorflow_and_cupy_are_read(tmp_path):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    e = Env(tmp_path / "venv").jax("0.7.2", "13")
    (e.site / "tensorflow/python/platform").mkdir(parents=True)
    (e.site / "tensorflow/python/platform/build_info.py").write_text(
        # as TensorFlow's gen_build_info.py writes it
        "import collections\nbuild_info = collections.OrderedDict([('cpu_compiler', '/usr/bin/clang-17'), "
        "('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'compute_90']), ('cuda_version', '12.3'), "
        "('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])\n")
    e.dist("tensorflow", "2.16.1")
    (e.site / "cupy").mkdir()
    (e.site / "cupy/_version.py").write_text("__version__ = '13.3.0'\n")
    e.dist("cupy_cuda12x", "13.3.0")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    pk = {p["name"]: p for p in env["packages"]}
    assert pk["jax"]["cuda"] == "13" and "jax-cuda13-plugin 0.7.2" in pk["jax"]["version"]
    assert pk["tensorflow"]["cuda"] == "12.3" and pk["tensorflow"]["archs_listed"][-1] == "compute_90"
    assert pk["cupy"]["cuda"] == "12" and pk["cupy"]["version"] == "13.3.0"
    v = verdict(env, "python.driver_too_old", "error")
    assert v["message"].startswith("jax ") and 'jax[cuda12]' in v["fix"]
    assert [x["id"] for x in env["verdicts"] if x["level"] == "error"] == ["python.driver_too_old"]


# ---------------------------------------------------------------- the machine keeps the GPU away

def without_driver(tmp_path):
    """A machine with an NVIDIA GPU on PCI and no driver (no libcuda, no
    module), and a venv holding a CUDA 13.0 torch."""
    m = Machine(tmp_path)
    m.libcuda_dir = m.nvml_dir = str(tmp_path / "empty")
    m.remove("sys/module/nvidia")
    m.remove("proc/driver/nvidia/version")
    return m, Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")


def test_no_driver_on_a_machine_with_an_nvidia_gpu(tmp_path):
    m, e = without_driver(tmp_path)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    v = verdict(env, "python.no_driver", "error")
    assert "Found no NVIDIA driver on your system" in v["message"] and "580.65.06" in v["fix"]


def test_a_container_without_device_nodes(tmp_path):
    m = Machine(tmp_path)
    for n in ("nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools"):
        m.remove("dev/" + n)
    m.write(".dockerenv", "")
    m.desc["driver"]["init_result"] = 100
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    v = verdict(env_of(scan(m, e.prefix)[0], e.prefix), "python.device_nodes", "error")
    assert "/dev/nvidia*" in v["message"] and "--gpus all" in v["fix"]


def test_the_docs_list_the_json_keys(tmp_path, kernels):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0", kernels["rpath"])
    e.cudart_wheel()
    (e.prefix / "bin").mkdir()
    (e.prefix / "bin/python3").write_text("#!/bin/sh\nexit 3\n")
    (e.prefix / "bin/python3").chmod(0o755)
    env = env_of(scan(m, e.prefix, extra=["--import"])[0], e.prefix)
    with open(os.path.join(ROOT, "docs", "doctor.md")) as f:
        doc = f.read().split("<!-- python-keys:begin -->")[1].split("<!-- python-keys:end -->")[0]
    listed = {}
    for line in doc.splitlines()[2:]:
        cells = line.split("|")
        if len(cells) > 2:
            listed[cells[1].strip()] = set(k.split("`")[0] for k in cells[2].split("`")[1::2] if k)
    got = {"environment": env, "package": env["packages"][0], "library": env["packages"][0]["libraries"][0],
           "import": env["imports"][0]}
    for what, obj in got.items():
        assert set(obj) == listed[what], what


# ---------------------------------------------------------------- --explain

def explain(m, text, *paths):
    m.env.update(HOME=str(m.tmp / "home"), CUDABENCH_CACHE=str(m.tmp / "cache"))
    return m.run("--here", "--explain", text, *[a for p in paths for a in ("--python", str(p))])


def test_explain_names_the_environments_where_the_cause_holds(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cpu", None)
    for text in ("torch.cuda.is_available() returns False", "AssertionError: Torch not compiled with CUDA enabled",
                 "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu."):
        r = explain(m, text, e.prefix)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "FOUND HERE" in r.stdout and "torch 2.11.0+cpu in %s" % os.path.realpath(e.prefix) in r.stdout


def test_found_no_driver_is_the_cause_on_a_machine_without_one(tmp_path):
    m, e = without_driver(tmp_path)
    r = explain(m, "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                   "and installed a driver from http://www.nvidia.com/Download/index.aspx", e.prefix)
    assert r.returncode == 0, r.stdout
    assert "[23]" in r.stdout and "python.no_driver" in r.stdout and "FOUND HERE" in r.stdout


@pytest.mark.parametrize("text, number", [
    ("RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.", 24),
    ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
     "'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file", 13),
    ("NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch installation.", 6),
    ("The NVIDIA driver on your system is too old (found version 11040).", 1),
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (9, 1, 0) but found runtime "
     "version (8, 9, 2).", 14),
])
def test_explain_knows_the_python_messages(tmp_path, text, number):
    r = explain(Machine(tmp_path), text)
    assert r.returncode != 2 and "[%d]" % number in r.stdout, r.stdout + r.stderr


# ---------------------------------------------------------------- --import

def project_python():
    venv = os.path.join(os.environ.get("CUDABENCH_CACHE") or os.path.expanduser("~/.cache/cudabench"), "venv")
    python = os.path.join(venv, "bin", "python3")
    if not os.access(python, os.X_OK) or not os.path.exists(os.path.join(venv, "pyvenv.cfg")):
        pytest.skip("no project venv (scripts/setup.sh makes it)")
    return python


def test_import_runs_for_real_against_the_project_venv(tmp_path):
    python = project_python()
    m = Machine(tmp_path)
    report, _ = scan(m, python, extra=["--import"])
    env = env_of(report, os.path.dirname(os.path.dirname(python)))
    torch = [i for i in env["imports"] if i["package"] == "torch"]
    assert torch and torch[0]["error"] == "" and torch[0]["version"].startswith("2."), env["imports"]
    assert report["python"]["imported"] is True


@pytest.mark.parametrize("body, said", [("sleep 30", "hung: no answer in 2 s"), ("kill -SEGV $$", "crashed (SIGSEGV)")])
def test_an_import_that_hangs_or_crashes_is_a_finding(tmp_path, body, said):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    (e.prefix / "bin").mkdir()
    (e.prefix / "bin/python3").write_text("#!/bin/sh\n%s\n" % body)
    (e.prefix / "bin/python3").chmod(0o755)
    m.env["CUDABENCH_IMPORT_SECONDS"] = "2"
    env = env_of(scan(m, e.prefix, extra=["--import"])[0], e.prefix)
    v = verdict(env, "python.import", "error")
    assert said in v["message"], v


def test_a_path_that_is_no_python_is_refused(tmp_path):
    m = Machine(tmp_path)
    r = m.run("--env", "--python", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and r.stderr.strip() == "bench: --python %s: no such file or folder" % (tmp_path / "nowhere")
    r = m.run("--python", str(tmp_path))
    assert r.returncode == 2 and "go with --env or --explain" in r.stderr


def fake_interpreter(e, body):
    (e.prefix / "bin").mkdir(exist_ok=True)
    (e.prefix / "bin/python3").write_text("#!/bin/sh\n%s\n" % body)
    (e.prefix / "bin/python3").chmod(0o755)


def alive(pid_file):
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[1][0] != "Z"


@pytest.mark.parametrize("daemon", ["sleep 60 &", "(trap '' HUP TERM; exec sleep 60) &", "setsid sleep 60 &"])
def test_an_import_that_leaves_a_daemon_holding_its_output_answers_at_once(tmp_path, daemon):
    """The answer is in once the interpreter exits: a daemon it left holding
    the pipe neither holds bench to the deadline nor outlives it, even one
    in a session of its own (setsid), which no group kill reaches."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    fake_interpreter(e, f"{daemon} echo $! > {tmp_path}/daemon\n"
                        'echo \'cudabench-import: {"version": "2.11.0+cu130", "devices": 1, "available": true}\'')
    m.env["CUDABENCH_IMPORT_SECONDS"] = "20"
    start = time.monotonic()
    env = env_of(scan(m, e.prefix, extra=["--import"])[0], e.prefix)
    assert time.monotonic() - start < 15, "it waited for the daemon"
    torch = [i for i in env["imports"] if i["package"] == "torch"]
    assert torch and torch[0]["error"] == "" and torch[0]["version"] == "2.11.0+cu130", env["imports"]
    assert not alive(tmp_path / "daemon"), "the daemon outlived bench"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_bench_ends_the_interpreter_it_is_importing_in(tmp_path, sig):
    """The interpreter runs in a group of its own (a terminal's Ctrl-C
    misses it): bench ends it when a signal ends bench."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    fake_interpreter(e, f"echo $$ > {tmp_path}/interp; exec sleep 60")
    m.env.update(CUDABENCH_IMPORT_SECONDS="60", HOME=str(tmp_path / "home"), CUDABENCH_CACHE=str(tmp_path / "c"))
    p = m.start("--env=json", "--python", str(e.prefix), "--import")
    for _ in range(300):
        if alive(tmp_path / "interp"):
            break
        time.sleep(0.05)
    assert alive(tmp_path / "interp"), "the interpreter never started"
    p.send_signal(sig)
    p.wait(timeout=20)
    assert p.returncode == -sig
    time.sleep(0.2)
    assert not alive(tmp_path / "interp"), "the interpreter outlived bench"


@pytest.mark.parametrize("devices", ["1e300", "-1", "2.5", "\"two\""])
def test_an_interpreter_that_answers_no_count_of_devices_is_not_believed(tmp_path, devices):
    """1e300 devices were stored as -2147483648: a count that is not a whole
    number from 0 up is no answer of ours, and says what it was."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    fake_interpreter(e, "echo 'cudabench-import: {\"version\": \"2.11.0\", \"devices\": %s}'" % devices)
    env = env_of(scan(m, e.prefix, extra=["--import"])[0], e.prefix)
    torch = [i for i in env["imports"] if i["package"] == "torch"][0]
    assert torch["device_count"] >= 0 and "gave an answer that is not cudabench's" in torch["error"], torch


@pytest.mark.parametrize("forged", ["\nERROR   forged verdict", "\rERROR   forged", "\x1b[2K\x1b[1GERROR   forged",
                                    "\u0085ERROR   forged", "\u2028ERROR   forged", "\u202eERROR   forged"])
def test_text_from_outside_cannot_forge_a_line_of_the_report(tmp_path, forged):
    """A folder's name or a variable's value holding a newline or a terminal
    escape is shown escaped in the text report: it starts no line of its
    own and drives no terminal (the JSON holds it as it is)."""
    m = Machine(tmp_path)
    e = Env(tmp_path / ("venv" + forged)).torch("2.11.0+cu130", "13.0")
    m.env.update(CUDA_HOME="/opt/cuda" + forged, HOME=str(tmp_path / "home"), CUDABENCH_CACHE=str(tmp_path / "c"))
    r = m.run("--env", "--python", str(e.prefix))
    assert r.returncode in (0, 1), r.stderr
    assert not any(line.startswith("ERROR   forged") for line in r.stdout.splitlines()), r.stdout
    assert not set(r.stdout) & {"\r", "\x1b", "\u0085", "\u2028", "\u202e"}
    assert "/opt/cuda" + visible(forged) in r.stdout  # escaped as the Python tools escape it


def test_the_restart_after_a_broken_driver_keeps_a_long_ld_preload(tmp_path):
    """The restart put the stub before the user's LD_PRELOAD in 8 KB, and
    cut the rest (in the middle of a path): the interpreter bench starts
    must get the user's whole LD_PRELOAD back."""
    m = Machine(tmp_path)
    m.desc["driver"]["init_fault"] = "crash"
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    fake_interpreter(e, f'printf %s "$LD_PRELOAD" > {tmp_path}/preload\n'
                        'echo \'cudabench-import: {"version": "2.11.0+cu130", "devices": 0}\'')
    libm = "/lib/x86_64-linux-gnu/libm.so.6"
    long = ":".join([libm] * 600)  # about 17 KB
    m.env.update(LD_PRELOAD=long, CUDABENCH_IMPORT_SECONDS="20")
    report, _ = scan(m, e.prefix, extra=["--import"])
    assert "libcuda crashed in cuInit" in report["gpu_unusable_reason"]
    assert (tmp_path / "preload").read_text() == long
