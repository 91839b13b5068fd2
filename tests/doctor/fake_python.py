"""Fake Python environments for the doctor's tests: a venv, a conda env or
a bare site with packages written into it as pip lays them out, and
`bench --env=json` run over them on a fake machine (fake_machine.py)."""
import json
import os
import shutil
import subprocess

import pytest

# The variables that move an environment manager's folders: cleared for
# every scan, so that the tests' own environment never leaks into it.
MANAGER_VARS = ("POETRY_VIRTUALENVS_PATH", "POETRY_CACHE_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME", "WORKON_HOME",
                "HATCH_DATA_DIR", "PIXI_HOME", "MAMBA_ROOT_PREFIX", "CONDARC", "CONDA_ENVS_PATH", "CONDA_ENVS_DIRS",
                "UV_PROJECT_ENVIRONMENT", "CONDA_EXE", "PYENV_ROOT")

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Two libraries holding sm_90 SASS only and needing libcudart.so.13 (a
    shared runtime): one asking the loader with DT_RPATH, one with
    DT_RUNPATH, both pointing at a wheel's nvidia/cu13/lib."""
    if not os.access(NVCC, os.X_OK):
        pytest.skip("no nvcc to make a fatbin with")
    d = tmp_path_factory.mktemp("kernels")
    (d / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] += 1; }\n"
                            "void launch(float* x) { k<<<1, 32>>>(x); }\n")
    out = {}
    for tag, flag in (("rpath", "--disable-new-dtags"), ("runpath", "--enable-new-dtags")):
        lib = d / ("lib_%s.so" % tag)
        subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90", "-cudart", "shared", "-o", str(lib),
                        str(d / "k.cu"), "-Xlinker", flag, "-Xlinker", "-rpath,$ORIGIN/../../nvidia/cu13/lib"],
                       check=True, capture_output=True, timeout=300)
        out[tag] = lib
    return out


class Env:
    """A fake Python environment: a venv (pyvenv.cfg), a conda env
    (conda-meta) or a bare site, with packages written into its site."""

    def __init__(self, prefix, kind="venv", python="3.11"):
        self.prefix = prefix
        self.site = prefix / ("lib/python%s/site-packages" % python) if kind != "site" else prefix
        self.site.mkdir(parents=True)
        if kind == "venv":
            (prefix / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n"
                                               "version = %s.2\n" % python)
        if kind == "conda":
            (prefix / "conda-meta").mkdir()

    def dist(self, name, version, requires=()):
        d = self.site / ("%s-%s.dist-info" % (name, version))
        d.mkdir()
        (d / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version) +
                                    "".join("Requires-Dist: %s\n" % r for r in requires))

    def torch(self, version, cuda, kernels=None, requires=()):
        (self.site / "torch/lib").mkdir(parents=True)
        (self.site / "torch/version.py").write_text(
            "from typing import Optional\n\n__version__ = '%s'\ndebug = False\ncuda: Optional[str] = %s\n"
            % (version, repr(cuda) if cuda else "None"))
        self.dist("torch", version, requires)
        if kernels:
            shutil.copy(kernels, self.site / "torch/lib/libtorch_cuda.so")
        return self

    def jax(self, version, plugin_major=None, plugin_version=None):
        """jaxlib VERSION, and its CUDA plugin of that major (of the same
        release unless plugin_version says otherwise)."""
        (self.site / "jaxlib").mkdir()
        (self.site / "jaxlib/version.py").write_text('_version = "%s"\n' % version)
        if plugin_major:
            self.dist("jax_cuda%s_plugin" % plugin_major, plugin_version or version)
        return self

    def cudart_wheel(self, version="13.0.96"):
        lib = self.site / "nvidia/cu13/lib"
        lib.mkdir(parents=True)
        (lib / "libcudart.so.13").write_text("")
        self.dist("nvidia_cuda_runtime", version)


def driver(m, cuda, version):
    m.desc["driver"]["cuda_version"] = cuda
    m.desc["nvml"].update(cuda_version=cuda, driver_version=version)


def scan(m, *paths, extra=()):
    """bench --env=json --python PATH...: (the report, exit code)."""
    m.env.update(HOME=str(m.tmp / "home"), CUDABENCH_CACHE=str(m.tmp / "cache"), VIRTUAL_ENV="", CONDA_PREFIX="",
                 **{k: m.env.get(k, "") for k in MANAGER_VARS})
    args = ["--env=json"] + [a for p in paths for a in ("--python", str(p))] + list(extra)
    r = m.run(*args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout), r.returncode


def env_of(report, prefix):
    found = [e for e in report["python"]["envs"] if e["prefix"] == os.path.realpath(prefix)]
    assert found, "no %s among %s" % (prefix, [e["prefix"] for e in report["python"]["envs"]])
    return found[0]


def verdict(env, vid, level=None):
    found = [v for v in env["verdicts"] if v["id"] == vid and (level is None or v["level"] == level)]
    assert found, "no %s %s; got %s" % (vid, level or "", [(v["level"], v["id"], v["message"]) for v in env["verdicts"]])
    return found[0]


def errors(env):
    return [v["id"] for v in env["verdicts"] if v["level"] == "error"]


