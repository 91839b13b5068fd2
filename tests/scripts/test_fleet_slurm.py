"""The fleet mode on a real Slurm: scripts/fleet/local-cluster.sh starts
munged, slurmctld and two slurmd nodes on this machine from Debian's
packages; fleet.sh submits real sbatch jobs to it (an array and a collect
job with afterok), and the daemons are stopped by their pids at the end.

Runs as root (slurmd starts each job as its user), as CI does; elsewhere it
skips and says why. Without Slurm installed it skips too, unless
CUDABENCH_REQUIRE_SLURM=1 (scripts/test.sh sets it, after scripts/setup.sh
has installed Slurm), so a broken set-up fails CI instead of skipping.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, ROOT
from slurm_cluster import env_for, running_cluster


FLEET_SH = os.path.join(ROOT, "scripts", "fleet", "fleet.sh")
FEW_ROWS = "VectorAdd/cpu_scalar/n:4096/"  # where the rows do not matter
# The gate's CPU rows (bench --rows=gate-cpu, declared by the families), as bench names them.
CPU_SUBSET = [f"VectorAdd/cpu_scalar/n:{n}/real_time" for n in (65536, 1048576, 10000000)] + \
             [f"VectorAdd/cpu_omp_simd/n:{n}/real_time" for n in (1048576, 4194304)] + \
             (["MnistTrain/cpu/batch:64/real_time"] if os.access(os.path.join(BUILD, "train"), os.X_OK) else [])


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path) as d:
        yield d


def scontrol(cluster, job):
    out = subprocess.run(["scontrol", "show", "job", "-o", str(job)], capture_output=True, text=True,
                         env=env_for(cluster)).stdout
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines() if line.strip()]


def fleet(cluster, tmp_path, *args, timeout=300):
    return subprocess.run(["bash", FLEET_SH, "--results", str(tmp_path / "results"), "--builds",
                           str(tmp_path / "builds"), "--processes", "2", "--repetitions", "2",
                           "--min-time", "0.01", "--run-id", "t", *args],
                          capture_output=True, text=True, env=env_for(cluster), timeout=timeout)


def test_a_fleet_run_of_the_cpu_subset_on_real_slurm(cluster, tmp_path):
    # The per-environment build: this machine's fingerprint names the folder
    # the tasks look in; the test's own build stands there, so nothing is
    # rebuilt and the lookup is what is tested.
    r = subprocess.run(["bash", FLEET_SH, "fingerprint"], capture_output=True, text=True, check=True)
    fp = r.stdout.strip().splitlines()[-1].split()[-1]
    builds = tmp_path / "builds"
    builds.mkdir()
    os.symlink(BUILD, builds / fp)
    (builds / f"{fp}.done").write_text(r.stdout)

    r = fleet(cluster, tmp_path, "--report-only", "--wait")  # the CPU subset: the CI rows (scripts/lib.sh)
    assert r.returncode == 0, r.stdout + r.stderr
    run = tmp_path / "results" / "t"
    meta = json.loads((run / "run.json").read_text())
    assert meta["tasks"] == 2 and meta["expected_nodes"] == ["node1", "node2"] and meta["mode"] == "node"

    # Two array tasks, each on a node of its own, and the collect job after both.
    tasks = scontrol(cluster, meta["array_job"])
    assert sorted(t["ArrayTaskId"] for t in tasks) == ["0", "1"]
    assert sorted(t["NodeList"] for t in tasks) == ["node1", "node2"]
    assert all(t["JobState"] == "COMPLETED" for t in tasks), tasks
    collect = scontrol(cluster, meta["collect_job"])[0]
    assert collect["JobState"] == "COMPLETED" and collect["ExitCode"] == "0:0"
    assert collect["StartTime"] >= max(t["EndTime"] for t in tasks)

    for node in ("node1", "node2"):
        st = json.loads((run / node / "cpu.status.json").read_text())
        assert st["host"] == node and st["slurm"]["node"] == node
        assert st["slurm"]["array_job_id"] == str(meta["array_job"])
        assert st["build"] == str(builds / fp) and st["fingerprint"] == fp
        assert [p["exit_code"] for p in st["processes"]] == [0, 0]
        doc = json.loads((run / node / "cpu.json").read_text())
        names = sorted({b["run_name"] for b in doc["benchmarks"]})
        assert names == sorted(CPU_SUBSET), names
        assert len(doc["benchmarks"]) == 2 * len(CPU_SUBSET)  # one sample per process
        assert doc["context"]["cudabench_env"]["host"]["threads"] >= 1
        env = json.loads((run / node / "cpu.env.json").read_text())
        assert "verdicts" in env

    merged = json.loads((run / "fleet.json").read_text())
    assert sorted(m["machine"] for m in merged["machines"]) == ["node1/cpu", "node2/cpu"]
    assert all(len(s) == 2 for m in merged["machines"] for s in m["samples_s"].values())
    (g,) = merged["groups"]
    assert g["name"].startswith("CPU: ") and len(g["benchmarks"]) == len(CPU_SUBSET)
    for b in g["benchmarks"]:
        assert sorted(b["ratios"]) == ["node1/cpu", "node2/cpu"]
    assert merged["incomplete"] == []
    md = (run / "fleet.md").read_text()
    assert "# Fleet run t" in md and "2 array tasks, one per node" in md
    assert "| node1/cpu |" in md and "| node2/cpu |" in md
    assert "at least 3 are needed to name an outlier" in md
    assert f"environment {fp}" in md
    assert "## Environment verdicts across nodes" in md
    assert [p for p in os.listdir(run) if p.endswith(".png")], "no plot"
    # --wait printed the findings the collect job wrote
    assert "## Findings" in r.stdout


def test_a_task_that_fails_cancels_the_collect_and_is_named(cluster, tmp_path):
    # Tasks that cannot write their results exit 3; the collect job's afterok
    # can then never be met, Slurm cancels it (kill_invalid_depend), and the
    # driver names the failed tasks.
    r = fleet(cluster, tmp_path, "--build", BUILD, "--wait", "--cpu-filter", FEW_ROWS,
              "--sbatch-arg=--export=ALL,CUDABENCH_FLEET_RUN=/proc/cudabench-cannot-write")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "the collect job ended CANCELLED: an array task did not complete" in r.stderr
    assert re.search(r"task 0 on node\d: FAILED, exit 3:0", r.stderr), r.stderr


def test_one_task_per_gpu_gets_its_own_gpu(tmp_path):
    # --per-gpu on a node with two stand-in GPUs (gres): one task per GPU, each
    # with its own SLURM_JOB_GPUS; nothing can run on a stand-in, which each
    # task records, so the run is incomplete (exit 3) and says why per GPU.
    with running_cluster(tmp_path, nodes=1, gpus=2) as d:
        r = fleet(d, tmp_path, "--per-gpu", "--build", BUILD, "--no-plots", "--wait")
        assert r.returncode == 3, r.stdout + r.stderr
        run = tmp_path / "results" / "t"
        meta = json.loads((run / "run.json").read_text())
        assert meta["tasks"] == 2 and meta["expected_gpus"] == {"node1": 2}
        for g in (0, 1):
            st = json.loads((run / "node1" / f"gpu{g}.status.json").read_text())
            assert st["slurm"]["job_gpus"] == str(g)
            assert f"SLURM_JOB_GPUS={g}," in st["error"] and "is not usable" in st["error"]
        assert "incomplete: node1/gpu1: the GPU Slurm gave this task" in r.stdout
        assert "incomplete: node1: 0 of its 2 GPUs (its gres) measured" in r.stdout


def test_a_node_task_gets_the_nodes_gpus_and_says_when_it_cannot_use_them(tmp_path):
    # Per node, --exclusive gives the task every GPU of the node (SLURM_JOB_GPUS=0,1).
    # The CPU rows run; the GPUs that bench cannot use are named, not skipped.
    with running_cluster(tmp_path, nodes=1, gpus=2) as d:
        r = fleet(d, tmp_path, "--build", BUILD, "--no-plots", "--wait", "--cpu-filter", FEW_ROWS)
        assert r.returncode == 3, r.stdout + r.stderr
        run = tmp_path / "results" / "t"
        assert json.loads((run / "node1" / "cpu.status.json").read_text())["processes"][0]["exit_code"] == 0
        st = json.loads((run / "node1" / "gpu-unusable.status.json").read_text())
        assert st["error"].startswith("Slurm gave this task 2 GPU(s) (SLURM_JOB_GPUS=0,1, CUDA_VISIBLE_DEVICES=0,1); "
                                      "bench can use 0: ")
        assert "incomplete: node1/gpu-unusable: Slurm gave this task 2 GPU(s)" in r.stdout
        assert "incomplete: node1: 0 of its 2 GPUs (its gres) measured" in r.stdout


def test_a_drained_node_gets_no_task_and_is_named(cluster, tmp_path):
    env = env_for(cluster)
    subprocess.run(["scontrol", "update", "nodename=node2", "state=drain", "reason=cudabench-test"], check=True,
                   env=env)
    r = fleet(cluster, tmp_path, "--build", BUILD, "--no-plots", "--wait", "--cpu-filter", FEW_ROWS)
    assert r.returncode == 0, r.stdout + r.stderr
    meta = json.loads((tmp_path / "results" / "t" / "run.json").read_text())
    assert meta["tasks"] == 1 and meta["expected_nodes"] == ["node1"] and meta["skipped_nodes"] == ["node2 (drain)"]
    assert "Not measured, as Slurm listed them at submit (drained, down or not responding): node2 (drain)." in r.stdout
    assert not (tmp_path / "results" / "t" / "node2").exists()


def test_only_the_partition_the_jobs_go_to_is_counted(cluster, tmp_path):
    # A second partition, now the default, with node1 only: sinfo lists both
    # partitions' nodes, but the jobs go to the default one.
    env = env_for(cluster)
    subprocess.run(["scontrol", "create", "partitionname=small", "nodes=node1", "default=yes", "state=up"], check=True,
                   env=env)
    subprocess.run(["scontrol", "update", "partitionname=fleet", "default=no"], check=True, env=env)
    r = fleet(cluster, tmp_path, "--build", BUILD, "--no-plots", "--wait", "--cpu-filter", FEW_ROWS)
    assert r.returncode == 0, r.stdout + r.stderr
    meta = json.loads((tmp_path / "results" / "t" / "run.json").read_text())
    assert meta["partition"] == "small" and meta["expected_nodes"] == ["node1"] and meta["tasks"] == 1
    assert [t["Partition"] for t in scontrol(cluster, meta["array_job"])] == ["small"]
