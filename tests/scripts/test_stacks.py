"""The stack a machine gets (scripts/stacks.py, through scripts/setup.sh --plan):
LibTorch and the kernels' toolkit chosen to fit the driver, which the fake
libcuda answers (tests/fakes: cuDriverGetVersion through a real dlopen)."""
import json
import os
import subprocess

import pytest

from cudabench.commands import stacks
from conftest import FAKES, ROOT



# The driver branches that give each CUDA (NVML's version string).
DRIVERS = {12020: "535.247.01", 12080: "570.133.20", 13000: "580.95.05", 13020: "595.45.04", 11080: "520.61.05"}


def fake_nvcc(tmp_path, version):
    """An nvcc that only says its version, as CUDACXX."""
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {version.rsplit('.', 1)[0]}, V{version}'\n")
    nvcc.chmod(0o755)
    return str(nvcc)


def setup_plan(tmp_path, driver_cuda, **env):
    """scripts/setup.sh --plan on a machine whose driver supports driver_cuda."""
    if not os.path.exists(os.path.join(FAKES, "cuda", "libcuda.so.1")):
        pytest.skip(f"the fake libcuda is not built in {FAKES} (build the tests first)")
    machine = tmp_path / "machine.json"
    machine.write_text(json.dumps({"driver": {"cuda_version": driver_cuda},
                                   "nvml": {"driver_version": DRIVERS[driver_cuda]}, "gpus": []}))
    full = {k: v for k, v in os.environ.items()
            if k not in ("Torch_DIR", "CUDABENCH_TORCH", "CUDABENCH_NO_TORCH", "CUDABENCH_VENV")}
    full.update(CUDABENCH_FAKE_GPU=str(machine), CUDABENCH_CACHE=str(tmp_path / "cache"),
                CUDACXX=fake_nvcc(tmp_path, "13.0.88"), CUDABENCH_NVCC_SEARCH="", PATH="/usr/bin:/bin",
                LD_LIBRARY_PATH=f"{FAKES}/cuda:{FAKES}/nvml:" + os.environ.get("LD_LIBRARY_PATH", ""))
    full.update(env)
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "setup.sh"), "--plan"], env=full,
                       capture_output=True, text=True, timeout=60)
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    return r.returncode, fields, r.stderr


@pytest.mark.parametrize("driver_cuda, stack, toolkit", [
    (12020, "cuda13.0-torch2.10.0", "system 13.0.88"),  # 535: 12.x by minor-version compatibility
    (12080, "cuda13.0-torch2.10.0", "system 13.0.88"),  # 570
    (13000, "cuda13.0-torch2.11.0", "system 13.0.88"),  # 580
    (13020, "cuda13.0-torch2.11.0", "system 13.0.88"),  # a newer 13.x driver runs 13.0
])
def test_each_driver_gets_the_newest_stack_it_can_run(tmp_path, driver_cuda, stack, toolkit):
    rc, plan, err = setup_plan(tmp_path, driver_cuda)
    assert rc == 0, err
    assert plan["stack"] == stack
    assert plan["toolkit"].endswith(f"({toolkit})")
    assert plan["venv"] == str(tmp_path / "cache" / "stacks" / stack / "venv")
    # One line saying what it chose and why, with the driver's own version.
    assert err.count("\n") == 1 and err.startswith(f"setup: driver {DRIVERS[driver_cuda]} supports CUDA "), err
    assert f"LibTorch {stack.split('torch')[1]}" in err


def test_kernels_a_12x_driver_cannot_run_are_said_so(tmp_path):
    # PyPI has no CUDA 12 nvcc: the system's 13.0 builds them, and the line says they cannot run.
    rc, plan, err = setup_plan(tmp_path, 12080)
    assert "(CUDA 13.0.88), but they cannot run on this driver: PyPI has no nvcc for CUDA 12.8" in err


def test_the_override_pins_the_libtorch(tmp_path):
    rc, plan, err = setup_plan(tmp_path, 13000, CUDABENCH_TORCH="2.10.0")
    assert rc == 0, err
    assert plan["stack"] == "cuda13.0-torch2.10.0"
    assert "CUDABENCH_TORCH=2.10.0 pins LibTorch 2.10.0" in err
    # A pin the driver cannot run is kept, and said.
    rc, plan, err = setup_plan(tmp_path, 12080, CUDABENCH_TORCH="2.11.0")
    assert rc == 0 and plan["stack"] == "cuda13.0-torch2.11.0"
    assert "which this driver cannot run" in err


def test_an_unknown_pin_is_exit_2_naming_the_known_ones(tmp_path):
    rc, plan, err = setup_plan(tmp_path, 13000, CUDABENCH_TORCH="2.9.1")
    assert rc == 2 and plan == {}
    assert err.strip() == "setup: CUDABENCH_TORCH: LibTorch 2.9.1 is not in the table (2.11.0, 2.10.0)"


def test_torch_dir_wins_over_the_table_and_the_pin(tmp_path):
    rc, plan, err = setup_plan(tmp_path, 12080, Torch_DIR="/opt/libtorch/share/cmake/Torch", CUDABENCH_TORCH="2.11.0")
    assert rc == 0, err
    assert plan["stack"].endswith("-owntorch")  # nothing installed: your LibTorch
    assert "Torch_DIR names your own LibTorch" in err


def test_a_driver_too_old_for_every_stack_is_one_line_naming_the_oldest_driver(tmp_path):
    rc, plan, err = setup_plan(tmp_path, 11080)
    assert rc == 2 and plan == {}
    assert err.count("\n") == 1, err
    assert "driver 520.61.05 supports CUDA 11.8, older than every stack" in err
    assert "needs driver 525.60.13 or newer" in err


def test_no_driver_gets_the_newest_and_says_so():
    plan = stacks.plan({}, driver=(None, ""), nvcc=("/usr/local/cuda/bin/nvcc", "13.0.88"))
    assert plan["stack"] == "cuda13.0-torch2.11.0" and plan["toolkit"] == "system"
    assert plan["why"].startswith("no NVIDIA driver: the newest")


SYSTEM = "/usr/local/cuda/bin/nvcc"


@pytest.mark.parametrize("nvcc, driver_cuda, kind, cuda, cannot_run", [
    ((SYSTEM, "13.0.88"), 13000, "system", "13.0.88", False),
    ((SYSTEM, "13.2.51"), 13000, "system", "13.2.51", False),  # minor-version compatibility
    ((SYSTEM, "12.9.86"), 13000, "system", "12.9.86", False),  # a newer driver runs an older major
    ((None, None), 13000, "pypi", "13.0", False),               # no system toolkit: PyPI's
    ((None, None), 13020, "pypi", "13.2", False),               # ... of the driver's CUDA
    ((SYSTEM, "13.0.88"), 12080, "system", "13.0.88", True),    # PyPI has no CUDA 12 nvcc
    ((None, None), 12080, "pypi", "13.0", True),
])
def test_the_kernels_toolkit(nvcc, driver_cuda, kind, cuda, cannot_run):
    plan = stacks.plan({"CUDABENCH_CACHE": "/c"}, driver=(driver_cuda, "x"), nvcc=nvcc)
    assert (plan["toolkit"], plan["toolkit_version"]) == (kind, cuda)
    assert ("cannot run on this driver" in plan["why"]) == cannot_run
    if kind == "pypi":
        assert plan["toolkit_pip"].endswith(f"]=={cuda}.*")
        assert plan["toolkit_root"] == f"/c/toolkits/cuda-{cuda}/root"


def test_a_stack_argument_names_a_toolkit_the_machine_can_have():
    nvcc = (SYSTEM, "13.0.88")
    assert stacks.plan({}, "13.0:2.10.0", (None, ""), nvcc)["stack"] == "cuda13.0-torch2.10.0"
    assert stacks.plan({}, "13.2:2.11.0", (None, ""), nvcc)["toolkit"] == "pypi"
    with pytest.raises(stacks.Refused, match="no nvcc of CUDA 12.8"):
        stacks.plan({}, "12.8:2.10.0", (None, ""), nvcc)
    with pytest.raises(stacks.Refused, match="expected CUDA:TORCH"):
        stacks.plan({}, "2.10.0", (None, ""), nvcc)
    with pytest.raises(stacks.Refused, match="LibTorch 2.1 is not in the table"):
        stacks.plan({}, "13.0:2.1", (None, ""), nvcc)


def test_the_matrix_pairs_the_chosen_stack_with_the_other_libtorch_cuda_major(monkeypatch):
    monkeypatch.setattr(stacks, "system_nvcc", lambda driver_cuda=None: (SYSTEM, "13.0.88"))
    for driver, want in [((None, ""), ["13.0:2.11.0", "13.0:2.10.0"]),
                         ((13000, "580"), ["13.0:2.11.0", "13.0:2.10.0"]),
                         ((12080, "570"), ["13.0:2.10.0", "13.0:2.11.0"])]:  # 2.11.0 kept, its GPU rows shown unrunnable
        monkeypatch.setattr(stacks, "read_driver", lambda d=driver: d)
        assert stacks.matrix_stacks({}) == want


def test_a_side_by_side_toolkit_the_driver_runs_is_chosen(tmp_path, monkeypatch):
    nvccs = {}
    for version in ("12.4.131", "12.8.93", "13.0.88"):
        folder = tmp_path / f"cuda-{version.rsplit('.', 1)[0]}" / "bin"
        folder.mkdir(parents=True)
        nvccs[version] = fake_nvcc(folder, version)
    monkeypatch.setenv("CUDABENCH_NVCC_SEARCH", str(tmp_path / "cuda-*" / "bin" / "nvcc"))
    monkeypatch.setenv("CUDACXX", nvccs["13.0.88"])
    monkeypatch.setenv("PATH", "/nonexistent")
    assert stacks.system_nvcc(13000) == (nvccs["13.0.88"], "13.0.88")  # CUDACXX first
    assert stacks.system_nvcc(None) == (nvccs["13.0.88"], "13.0.88")
    assert stacks.system_nvcc(12080) == (nvccs["12.8.93"], "12.8.93")  # the newest a 570 driver runs
    plan = stacks.plan({}, driver=(12080, "570.133.20"))
    assert plan["stack"] == "cuda12.8-torch2.10.0" and "cannot run" not in plan["why"]


def test_the_docs_hold_the_table():
    with open(os.path.join(ROOT, "docs", "stacks.md")) as f:
        assert stacks.table() in f.read()


def cmake_args(tmp_path, cache_text, venv, make_nvcc=True):
    """scripts/lib.sh's stack_cmake_args for a build folder whose cache holds cache_text."""
    build = tmp_path / "build"
    (build / "CMakeFiles").mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text(cache_text)
    tk = tmp_path / "tk"
    if make_nvcc:
        (tk / "bin").mkdir(parents=True, exist_ok=True)
        (tk / "bin" / "nvcc").write_text("#!/bin/sh\n")
        (tk / "bin" / "nvcc").chmod(0o755)
    script = (f'CUDABENCH_ROOT={ROOT}; . {ROOT}/scripts/lib.sh; '
              f'STACK=([stack]=s [venv]={venv} [toolkit_root]={tk} [torch]=); stack_cmake_args {build} ""')
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines(), (build / "CMakeCache.txt").exists()


def test_a_build_folder_of_another_stack_starts_afresh(tmp_path):
    nvcc = tmp_path / "tk" / "bin" / "nvcc"
    same = f"CUDABENCH_VENV_DIR:PATH=/v/a\nCMAKE_CUDA_COMPILER:FILEPATH={nvcc}\n"
    args, kept = cmake_args(tmp_path, same, "/v/a")
    assert kept and args == ["-DCUDABENCH_VENV_DIR=/v/a", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                             f"-DCUDAToolkit_ROOT={tmp_path / 'tk'}"]
    _, kept = cmake_args(tmp_path, same, "/v/b")  # another stack's venv
    assert not kept and not (tmp_path / "build" / "CMakeFiles").exists()
    _, kept = cmake_args(tmp_path, "CUDABENCH_VENV_DIR:PATH=/v/a\nCMAKE_CUDA_COMPILER:STRING=/other/nvcc\n", "/v/a")
    assert not kept  # another compiler: CMake would re-run with its defaults, dropping ours
