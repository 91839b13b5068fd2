"""Data-parallel train launched by srun in a real Slurm on this machine
(scripts/fleet/local-cluster.sh, as the fleet test uses): two tasks on two
nodes find each other from Slurm's own variables, with nothing else set.
The nodes' names (node1, node2) are not in DNS, so rank 0's address comes
from Slurm (its NodeAddr), as on a cluster whose node names do not resolve.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import TRAIN
from slurm_cluster import env_for, running_cluster

HASH_LINE = re.compile(r"^train: rank (\d+) of 2: parameters fnv1a64 ([0-9a-f]{16})$", re.M)


@pytest.mark.skipif(not os.access(TRAIN, os.X_OK), reason=f"{TRAIN} is not built (no LibTorch)")
def test_srun_launches_two_ranks_with_nothing_else_to_set(tmp_path):
    out = tmp_path / "run.json"
    with running_cluster(tmp_path, nodes=2) as cluster:
        env = {k: v for k, v in env_for(cluster).items()
               if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
        r = subprocess.run(["srun", "-p", "fleet", "-N", "2", "-n", "2", "--kill-on-bad-exit=1", TRAIN,
                            "--epochs", "1", "--limit", "2048", "--test-limit", "500", "--quiet", "--threads", "1",
                            "--check-sync", "--json", str(out)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = HASH_LINE.findall(r.stdout)
    assert sorted(rank for rank, _ in ranks) == ["0", "1"] and len({h for _, h in ranks}) == 1, r.stdout
    doc = json.loads(out.read_text())
    d = doc["distributed"]
    assert (d["launcher"], d["world_size"], d["backend"]) == ("srun", 2, "gloo")
    assert d["master"].startswith("127.0.0.1:")  # node1's NodeAddr, from scontrol
    assert d["replicas_checked_after_steps"] == doc["per_epoch"][0]["steps"] == 16
