"""The fix fits the environment it goes into: conda's or pixi's packages
get a conda or pixi command, conda-meta's records are read against the torch
on disk, a path with a space is quoted, JAX's downgrade takes the newer
plugin out first, the causes of one package share one fix, and a cu11
wheel's runtime version is its wheel's, not its soname's."""
import os
import shutil
import subprocess

import pytest

from fake_machine import Machine
from fake_python import Env, driver, env_of, kernels, scan, verdict  # noqa: F401 (kernels: a fixture)

CC = shutil.which("cc") or shutil.which("gcc")


def interpreter(e):
    """bin/python3 in the environment, so that fixes name its own pip."""
    (e.prefix / "bin").mkdir(exist_ok=True)
    py = e.prefix / "bin/python3"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    return py


def conda_record(e, name, version, build):
    (e.prefix / "conda-meta" / ("%s-%s-%s.json" % (name, version, build))).write_text("{}")


@pytest.mark.parametrize("manifest", ["pixi.toml", None])
def test_a_pixi_environment_gets_a_pixi_fix(tmp_path, manifest):
    """A project's environment (a manifest beside .pixi) or pixi global's."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "proj/.pixi/envs/default", kind="conda").torch("2.5.1", None)
    conda_record(e, "pytorch", "2.5.1", "cpu_mkl_py311_h1234567_100")
    if manifest:
        (tmp_path / "proj" / manifest).write_text("[workspace]\n")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert env["pixi"] and env["conda_packages"] == ["pytorch 2.5.1 cpu_mkl_py311_h1234567_100"]
    fix = verdict(env, "python.cpu_only")["fix"]
    want = "cd %s && pixi add" % os.path.realpath(tmp_path / "proj") if manifest else "pixi global add --environment default"
    assert want in fix and "pytorch-gpu" in fix and "pip" not in fix, fix


def test_conda_s_torch_on_a_driver_too_old_gets_a_conda_fix(tmp_path, kernels):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    e = Env(tmp_path / "miniconda3/envs/work", kind="conda").torch("2.11.0", "13.0", kernels["rpath"])
    conda_record(e, "pytorch", "2.11.0", "cuda130_py311_h0_300")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    fix = verdict(env, "python.driver_too_old", "error")["fix"]
    assert "conda install -p %s -c conda-forge" % os.path.realpath(e.prefix) in fix
    assert '"pytorch-gpu=2.10.0" "cuda-version=12"' in fix and "pip" not in fix


@pytest.mark.parametrize("record, disk, cuda, said", [
    (("pytorch", "2.1.0", "py3.10_cuda12.1_cudnn8.9.2_0"), "2.3.0+cu121", "12.1", "pip) wrote over conda's files"),
    (("pytorch", "2.1.0", "py3.10_cpu_0"), "2.1.0", None, "the solver took a CPU build"),
    (("pytorch", "2.1.0", "py3.10_cuda11.8_cudnn8.7.0_0"), "2.1.0", "11.8", "built for CUDA 11.8"),
])
def test_conda_meta_s_record_against_the_torch_on_disk(tmp_path, record, disk, cuda, said):
    m = Machine(tmp_path)
    e = Env(tmp_path / "conda-env", kind="conda").torch(disk, cuda)
    conda_record(e, *record)
    conda_record(e, "pytorch-cuda", "12.1", "ha16c6d3_6")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    v = verdict(env, "python.conda_record", "error")
    assert said in v["message"], v["message"]
    assert "pytorch-cuda 12.1" in v["evidence"][0] and disk in v["evidence"][1]
    # conda owns the files: its fix goes through conda, never pip uninstall.
    assert v["fix"].startswith("let conda put back what it owns") and "conda install -p" in v["fix"]
    assert "pip uninstall" not in v["fix"].replace("not pip uninstall", "")


def test_a_path_with_a_space_is_quoted_in_every_printed_command(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "my envs/work").torch("2.11.0+cpu", None)
    py = interpreter(e)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    fix = verdict(env, "python.cpu_only")["fix"]
    assert "'%s' -m pip install torch==" % os.path.realpath(py) in fix, fix


def test_a_jax_downgrade_uninstalls_the_newer_plugin_first(tmp_path):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    e = Env(tmp_path / "venv").jax("0.7.2", "13")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    fix = verdict(env, "python.driver_too_old", "error")["fix"]
    assert "pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt && pip install -U \"jax[cuda12]\"" in fix, fix


def test_the_causes_of_one_package_never_give_two_fixes(tmp_path, kernels):
    """A CUDA 13 build on a 12.8 driver and a GPU its kernels miss: two
    errors, one build that cures both."""
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    m.desc["gpus"][0].update(name="NVIDIA GeForce RTX 5090", cc_major=12, cc_minor=0, pci_device_id="2b85")
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0", kernels["rpath"])
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    errors = [v for v in env["verdicts"] if v["level"] == "error"]
    assert {v["id"] for v in errors} >= {"python.driver_too_old", "python.arch"}
    assert len({v["fix"] for v in errors}) == 1 and "torch 2.10.0, the cu128 build" in errors[0]["fix"]


@pytest.mark.skipif(not CC, reason="no C compiler to make a library that needs libcudart.so.11.0")
def test_a_cu11_wheel_s_runtime_version_comes_from_its_dist_info(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.0.1+cu118", "11.8")
    lib = e.site / "nvidia/cuda_runtime/lib"
    lib.mkdir(parents=True)
    src = tmp_path / "x.c"
    src.write_text("int x(void) { return 1; }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-Wl,-soname,libcudart.so.11.0", "-o", str(lib / "libcudart.so.11.0"), str(src)],
                   check=True, timeout=60)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(e.site / "torch/lib/libtorch_cuda.so"), str(src), "-L", str(lib),
                    "-Wl,--no-as-needed", "-l:libcudart.so.11.0", "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../../nvidia/cuda_runtime/lib"],
                   check=True, timeout=60)
    e.dist("nvidia_cuda_runtime_cu11", "11.8.89")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    cudart = [l for l in env["packages"][0]["libraries"] if l["name"] == "libcudart.so.11.0"]
    assert cudart and cudart[0]["version"] == "11.8.89" and cudart[0]["own_version"] == "11.8.89", cudart


@pytest.mark.parametrize("plugin", ["0.5.0", "0.4.30"])
def test_jax_s_plugin_from_another_release_than_jaxlib_is_named_in_both_directions(tmp_path, plugin):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").jax("0.4.38", "12", plugin)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    v = verdict(env, "python.jax_skew", "error")
    assert ("older" if plugin < "0.4.38" else "newer") + " than jaxlib 0.4.38" in v["message"]
    assert '"jaxlib==0.4.38" "jax-cuda12-plugin==0.4.38" "jax-cuda12-pjrt==0.4.38"' in v["fix"]


def test_a_jax_skew_on_a_driver_too_old_for_the_plugin_gets_the_one_fix(tmp_path):
    m = Machine(tmp_path)
    driver(m, 12080, "570.133.20")
    e = Env(tmp_path / "venv").jax("0.7.2", "13", "0.7.1")
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    skew, old = verdict(env, "python.jax_skew", "error"), verdict(env, "python.driver_too_old", "error")
    assert skew["fix"] == old["fix"] and 'pip install -U "jax[cuda12]"' in old["fix"]
