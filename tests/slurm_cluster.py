"""A real Slurm on this machine for a test (scripts/fleet/local-cluster.sh:
munged, slurmctld and slurmd nodes from Debian's packages), stopped by its
pids after it. Runs as root, as CI does; elsewhere the test skips and says
why. Without Slurm installed it skips too, unless CUDABENCH_REQUIRE_SLURM=1
(scripts/test.sh sets it once scripts/setup.sh has installed Slurm)."""
import contextlib
import os
import shutil
import subprocess

import pytest

from conftest import BENCH, ROOT


CLUSTER = os.path.join(ROOT, "scripts", "fleet", "local-cluster.sh")


SLURM = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo"]


def missing_slurm():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [b for b in SLURM if not shutil.which(b, path=path)]


def skip_reason():
    if os.geteuid() != 0:
        return "needs root: the test cluster's slurmd starts each job as its user"
    if missing_slurm():
        if os.environ.get("CUDABENCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"Slurm is not installed ({', '.join(missing_slurm())} missing) although scripts/setup.sh "
                        "should have installed it")
        return f"Slurm is not installed ({', '.join(missing_slurm())} missing): scripts/setup.sh installs it"
    if not os.access(BENCH, os.X_OK):
        return f"{BENCH} is not built"
    return ""


def daemon_pids(d):
    pids = {}
    for f in os.listdir(os.path.join(d, "run")):
        if f.endswith(".pid"):
            with open(os.path.join(d, "run", f)) as fh:
                pids[f] = int(fh.read().strip())
    return pids


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def running_cluster(tmp_path, nodes=2, gpus=0):
    """A real Slurm on this machine for the test, stopped by its pids after it."""
    why = skip_reason()
    if why:
        pytest.skip(why)
    d = str(tmp_path / "cluster")
    r = subprocess.run(["bash", CLUSTER, "start", d, "--nodes", str(nodes), "--gpus", str(gpus)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pids = daemon_pids(d)
    assert set(pids) == {"munged.pid", "slurmctld.pid"} | {f"slurmd-node{i}.pid" for i in range(1, nodes + 1)}
    try:
        yield d
    finally:
        r = subprocess.run(["bash", CLUSTER, "stop", d], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert not [p for p in pids.values() if alive(p)], "a Slurm daemon outlived stop"


def env_for(cluster):
    return dict(os.environ, SLURM_CONF=os.path.join(cluster, "slurm.conf"),
                PATH=os.environ.get("PATH", "") + ":/usr/sbin")
