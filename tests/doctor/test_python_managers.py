"""Every environment manager's environments are found: a fake environment
in the manager's documented default place (under a fake $HOME, or a
project's folder above the current one), and one moved by the manager's own
setting. Each is a venv (or a conda env) with a CPU-only torch, so the
report lists the package it read there and says which manager led to it."""
import os

import pytest

from fake_machine import Machine
from fake_python import Env, env_of, scan

# name, the default place (under $HOME), the setting, the place below the setting's folder, the kind
MANAGERS = [
    ("poetry", ".cache/pypoetry/virtualenvs/app-Xb3kLq9a-py3.11", "POETRY_VIRTUALENVS_PATH", "app-Xb3kLq9a-py3.11", "venv"),
    ("poetry", ".cache/pypoetry/virtualenvs/app-Xb3kLq9a-py3.11", "POETRY_CACHE_DIR", "virtualenvs/app-py3.11", "venv"),
    ("pipenv", ".local/share/virtualenvs/app-Hq3zLx0c", "WORKON_HOME", "app-Hq3zLx0c", "venv"),
    ("pipenv", ".local/share/virtualenvs/app-Hq3zLx0c", "XDG_DATA_HOME", "virtualenvs/app-Hq3zLx0c", "venv"),
    ("virtualenvwrapper", ".virtualenvs/work", "WORKON_HOME", "work", "venv"),
    ("hatch", ".local/share/hatch/env/virtual/app/kR4n2q/default", "HATCH_DATA_DIR", "env/virtual/app/kR4n2q/test", "venv"),
    ("pixi global", ".pixi/envs/tools", "PIXI_HOME", "envs/tools", "conda"),
    ("micromamba", ".local/share/mamba/envs/work", "MAMBA_ROOT_PREFIX", "envs/work", "conda"),
]


@pytest.mark.parametrize("name, default, setting, below, kind", MANAGERS)
def test_a_manager_s_environments_are_found_where_it_keeps_them(tmp_path, name, default, setting, below, kind):
    m = Machine(tmp_path)
    home = tmp_path / "home"
    at_home = Env(home / default, kind=kind).torch("2.11.0+cpu", None)
    moved = Env(tmp_path / "elsewhere" / below, kind=kind).torch("2.10.0+cpu", None)
    report, _ = scan(m)
    env = env_of(report, at_home.prefix)
    assert env["packages"][0]["version"] == "2.11.0+cpu"
    assert any(v.startswith(name.split()[0]) for v in env["found_via"]), env["found_via"]
    assert os.path.realpath(moved.prefix) not in [e["prefix"] for e in report["python"]["envs"]]

    m.env[setting] = str(tmp_path / "elsewhere")
    report, _ = scan(m)
    env = env_of(report, moved.prefix)
    assert env["packages"][0]["version"] == "2.10.0+cpu"
    assert any(setting in v for v in env["found_via"]), env["found_via"]


@pytest.mark.parametrize("where", [".venv", ".pixi/envs/default", ".hatch/test"])
def test_a_project_s_own_environment_is_found_from_a_folder_below_it(tmp_path, where):
    # uv, poetry (in-project) and pipenv (PIPENV_VENV_IN_PROJECT) make .venv; pixi .pixi/envs/*; hatch .hatch/*
    m = Machine(tmp_path)
    project = tmp_path / "work/app"
    e = Env(project / where, kind="conda" if "pixi" in where else "venv").torch("2.11.0+cpu", None)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    m.cwd = project / "src/app/models"
    m.cwd.mkdir(parents=True)
    env = env_of(scan(m)[0], e.prefix)
    assert any(str(project) in v for v in env["found_via"]), env["found_via"]
    m.cwd = tmp_path  # above the project: not in reach
    assert os.path.realpath(e.prefix) not in [x["prefix"] for x in scan(m)[0]["python"]["envs"]]


@pytest.mark.parametrize("value", ["envs/app", "/ABS"])
def test_uv_project_environment_moves_the_project_s_venv(tmp_path, value):
    m = Machine(tmp_path)
    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    where = tmp_path / "shared/app-venv" if value == "/ABS" else project / value
    e = Env(where).torch("2.11.0+cpu", None)
    m.cwd = project / "src"
    m.env["UV_PROJECT_ENVIRONMENT"] = str(where) if value == "/ABS" else value
    env = env_of(scan(m)[0], e.prefix)
    assert any("UV_PROJECT_ENVIRONMENT" in v for v in env["found_via"]), env["found_via"]


@pytest.mark.parametrize("style", ["block", "flow"])
def test_conda_s_envs_dirs_from_condarc(tmp_path, style):
    m = Machine(tmp_path)
    home = tmp_path / "home"
    e = Env(tmp_path / "scratch/conda-envs/work", kind="conda").torch("2.11.0+cpu", None)
    text = ("envs_dirs:\n  - ~/nowhere  # a comment\n- %s\nchannels:\n  - conda-forge\n" if style == "block"
            else "channels: [conda-forge]\nenvs_dirs: [~/nowhere, '%s']\n") % (tmp_path / "scratch/conda-envs")
    home.mkdir()
    (home / ".condarc").write_text(text)
    env = env_of(scan(m)[0], e.prefix)
    assert any(".condarc" in v for v in env["found_via"]), env["found_via"]
    # moved by CONDARC: the file named there is read
    (home / ".condarc").unlink()
    (tmp_path / "site.condarc").write_text(text)
    assert os.path.realpath(e.prefix) not in [x["prefix"] for x in scan(m)[0]["python"]["envs"]]
    m.env["CONDARC"] = str(tmp_path / "site.condarc")
    env = env_of(scan(m)[0], e.prefix)
    assert any("site.condarc" in v for v in env["found_via"]), env["found_via"]


def test_conda_envs_dirs_from_the_environment(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "team/envs/shared", kind="conda").torch("2.11.0+cpu", None)
    m.env["CONDA_ENVS_DIRS"] = "/nowhere:" + str(tmp_path / "team/envs")
    env = env_of(scan(m)[0], e.prefix)
    assert "CONDA_ENVS_DIRS" in env["found_via"]
