"""The Python scan's bounds and what it cannot read: a site of 100,000
entries is read whole (no cut in the folder's own order hides torch's
cuDNN pin or tensorflow), a folder or version file the user may not read
is said to be unreadable, and why, and the scan's deadline holds inside one
environment, not only between them."""
import os
import shutil
import time

import pytest

from fake_machine import Machine
from fake_python import Env, env_of, scan

needs_setpriv = pytest.mark.skipif(not shutil.which("setpriv") or os.geteuid() != 0,
                                   reason="needs setpriv, as root, to run bench without root's power to read all")


def crowd(site, count):
    """`count` entries that are no package's, in the site beside the real ones."""
    for i in range(count):
        open(os.path.join(site, f"zz_module_{i:06d}.py"), "w").close()


@pytest.mark.parametrize("count", [100_000, 5_000])
def test_a_crowded_site_hides_no_package(tmp_path, count):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0", requires=["nvidia-cudnn-cu13==9.13.0.50"])
    e.dist("tensorflow", "2.20.0")
    crowd(e.site, count)
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    names = {p["name"]: p for p in env["packages"]}
    assert set(names) == {"torch", "tensorflow"}, env["packages"]
    assert names["torch"]["cudnn"] == "9.13.0.50", names["torch"]
    assert env["unread"] == []


def unreadable(path):
    os.chmod(path, 0)
    return path


@needs_setpriv
def test_a_site_the_user_may_not_read_is_said_to_be_unreadable(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    try:
        unreadable(e.site)
        r = m.run("--env", "--python", str(e.prefix), as_user=True)
        assert r.returncode == 0, r.stderr
        assert f"NOT READ: {os.path.realpath(e.site)}: Permission denied" in r.stdout, r.stdout
        line = next(x for x in r.stdout.splitlines() if x.strip().startswith(os.path.realpath(e.prefix) + " "))
        assert line.endswith(": not read whole"), line
    finally:
        os.chmod(e.site, 0o755)


@needs_setpriv
def test_a_version_file_the_user_may_not_read_says_permission_denied(tmp_path):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    unreadable(e.site / "torch/version.py")
    r = m.run("--env", "--python", str(e.prefix), as_user=True)
    assert r.returncode == 0, r.stderr
    assert "NOT READ: torch/version.py: unreadable: Permission denied" in r.stdout, r.stdout


@needs_setpriv
@pytest.mark.parametrize("what", ["folder", "parent"])
def test_an_environment_the_user_may_not_read_is_not_called_no_python(tmp_path, what):
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    (e.prefix / "bin").mkdir()
    shutil.copy("/bin/true", e.prefix / "bin/python3")
    target = e.prefix if what == "folder" else tmp_path / "venv"
    given = e.prefix if what == "folder" else e.prefix / "bin/python3"
    if what == "parent":
        os.chmod(e.prefix, 0o600)  # no search: what is inside cannot be reached
    else:
        unreadable(target)
    try:
        r = m.run("--env", "--python", str(given), as_user=True)
        assert r.returncode == 2 and r.stderr.strip() == f"bench: --python {given}: Permission denied", r.stderr
    finally:
        os.chmod(e.prefix, 0o755)


def test_thousands_of_egg_links_to_one_crowded_folder_read_it_once(tmp_path):
    """4,000 .egg-links naming one 4,000-entry folder took 79 s, the folder
    listed for each link and each package: it is read once now, in
    moments, and the deadline (checked inside the listing: the C++ test
    ScanFiles.AListingStopsAtTheScansDeadline) never needed."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "venv").torch("2.11.0+cu130", "13.0")
    big = tmp_path / "big"
    big.mkdir()
    crowd(big, 4_000)
    for i in range(4_000):
        (e.site / f"proj{i}.egg-link").write_text(f"{big}\n.\n")
    start = time.monotonic()
    report, _ = scan(m, e.prefix)
    took = time.monotonic() - start
    env = env_of(report, e.prefix)
    assert report["python"]["stopped"] == "" and env["sites"].count(os.path.realpath(big)) == 1, env["sites"]
    assert took < 9, f"{took:.0f} s: past the scan's own deadline of 10 s"


@pytest.mark.parametrize("kind", ["conda", "venv"])
def test_a_crowded_lib_folder_hides_no_python(tmp_path, kind):
    """A conda lib/ holds hundreds of libraries that sort before python3.X:
    a listing kept to its first 256 names lost the site, and the whole environment."""
    m = Machine(tmp_path)
    e = Env(tmp_path / "env", kind=kind).torch("2.11.0+cu130", "13.0")
    crowd(e.prefix / "lib", 0)
    for i in range(600):
        open(e.prefix / "lib" / f"libaaa{i:04d}.so", "w").close()
    env = env_of(scan(m, e.prefix)[0], e.prefix)
    assert [p["name"] for p in env["packages"]] == ["torch"], env
