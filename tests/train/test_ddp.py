"""Data-parallel train over c10d with Gloo, on this machine's CPUs: 2 and 4
ranks launched as plain processes (RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set by the test, as torchrun would), and once by torchrun itself.

What is shown: every rank holds identical parameters after every step (the
hash check, and each rank's own hash line); the check fails loudly on a
replica made to differ; N ranks with a global batch B reproduce one rank with
batch B (to rounding without dropout, within noise with it); a killed or
hung rank is named by the others, who stop within the timeout; only rank 0
writes the JSON, whole.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import BUILD, ROOT, TRAIN


TRAIN_PERTURBED = os.path.join(BUILD, "train_perturbed")  # train with CUDABENCH_TEST_PERTURB (tests/)
QUICK = ["--epochs", "1", "--limit", "2048", "--test-limit", "500", "--quiet", "--threads", "1"]
HASH_LINE = re.compile(r"^train: rank (\d+) of (\d+): parameters fnv1a64 ([0-9a-f]{16})$", re.M)
# The model's parameters: conv1 16*9+16, conv2 32*16*9+32, fc1 4608*128+128, fc2 128*10+10.
PARAM_BYTES = 4 * (160 + 4640 + 589952 + 1290)

pytestmark = pytest.mark.skipif(not os.access(TRAIN, os.X_OK), reason=f"{TRAIN} is not built (no LibTorch)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TORCHELASTIC_"))
            and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}


def rank_env(rank, world, port, extra=None):
    env = clean_env()
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    env.update(extra or {})
    return env


def start(world, args, extra_env=None, per_rank=lambda r: [], program=TRAIN):
    port = free_port()
    return [subprocess.Popen([program, *args, *per_rank(r)], env=rank_env(r, world, port, extra_env),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]


def finish(procs, timeout=300):
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"a rank did not finish within {timeout} s")
        out.append((p.returncode, o, e))
    return out


def run(world, args, extra_env=None, timeout=300, per_rank=lambda r: [], program=TRAIN):
    return finish(start(world, args, extra_env, per_rank, program), timeout)


def rank0_json(tmp_path, world, args):
    """The run's JSON; world 0 is a plain process (no launcher variables)."""
    out = tmp_path / "run.json"
    if world == 0:
        r = subprocess.run([TRAIN, *args, "--json", str(out)], env=clean_env(), capture_output=True, text=True, timeout=300)
        results = [(r.returncode, r.stdout, r.stderr)]
    else:
        results = run(world, [*args, "--json", str(out)])
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 0, f"rank {rank}: {e}"
    with open(out) as f:
        return json.load(f), results


@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_holds_identical_parameters_after_every_step(tmp_path, world):
    # Each rank is given a --json path of its own: only rank 0's may appear.
    results = run(world, [*QUICK, "--check-sync"], per_rank=lambda r: ["--json", str(tmp_path / f"rank{r}.json")])
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 0, f"rank {rank}: {e}"
    assert os.listdir(tmp_path) == ["rank0.json"]  # whole: no temporaries either
    doc = json.loads((tmp_path / "rank0.json").read_text())
    # Each rank's own hash line, printed after the last step: all equal.
    hashes = {}
    for rank, (rc, o, e) in enumerate(results):
        lines = HASH_LINE.findall(o)
        assert lines and lines[0][:2] == (str(rank), str(world)), o
        hashes[rank] = lines[0][2]
    assert len(set(hashes.values())) == 1, hashes
    d = doc["distributed"]
    assert d["parameter_hash"] == hashes[0]
    assert d["replicas_identical"] is True
    steps = doc["per_epoch"][0]["steps"]
    assert steps == -(-2048 // world // 64)
    assert d["replicas_checked_after_steps"] == steps  # --check-sync: every one of them
    assert (d["world_size"], d["backend"], d["launcher"]) == (world, "gloo", "torchrun")
    # The linear rule: N ranks of batch 64 train at N x 0.01.
    assert d["global_batch"] == 64 * world and doc["lr"] == pytest.approx(0.01 * world)
    # The Reducer's buckets hold every gradient once.
    assert sum(d["bucket_bytes"]) == PARAM_BYTES and len(d["bucket_bytes"]) >= 2
    ar = d["allreduce"]
    assert ar["bytes"] == PARAM_BYTES and ar["seconds_per_step"] > 0
    assert ar["busbw_bytes_per_second"] == pytest.approx(ar["algbw_bytes_per_second"] * 2 * (world - 1) / world)
    # Only rank 0 printed the run.
    assert "epoch 1/1" in results[0][1] and all("epoch 1/1" not in o for _, o, _ in results[1:])
    assert doc["per_epoch"][0]["images"] == 2048


needs_perturbed = pytest.mark.skipif(not os.access(TRAIN_PERTURBED, os.X_OK),
                                     reason=f"{TRAIN_PERTURBED} is not built (tests off)")


@needs_perturbed
def test_the_check_fails_loudly_when_a_replica_differs(tmp_path):
    out = tmp_path / "run.json"
    # The test's fault: rank 1 nudges a weight after its step 3.
    results = run(2, [*QUICK, "--check-sync", "--json", str(out)], {"CUDABENCH_TEST_PERTURB": "1:3"},
                  program=TRAIN_PERTURBED)
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 1, f"rank {rank}: rc {rc}: {e}"  # a wrong result
        assert re.fullmatch(rf"train: rank {rank}: after step 3 the replicas' parameters differ: rank 1 has "
                            r"fnv1a64 [0-9a-f]+; rank 0 has [0-9a-f]+\n", e), e
    assert not os.listdir(tmp_path)


@needs_perturbed
def test_without_the_check_a_differing_replica_is_still_caught_at_the_end(tmp_path):
    results = run(2, QUICK, {"CUDABENCH_TEST_PERTURB": "0:2"}, program=TRAIN_PERTURBED)
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 1 and "after the last step the replicas' parameters differ" in e, e


def test_n_ranks_without_dropout_reproduce_one_rank_to_rounding(tmp_path):
    # Global batch 64 as 1 x 64, 2 x 32 and 4 x 16 at one learning rate
    # (--lr-batch 64): each global batch holds the same images, the averaged
    # gradient is the same mean, so only the summation order differs.
    args = ["--epochs", "1", "--limit", "1024", "--test-limit", "1000", "--quiet", "--threads", "1", "--no-dropout",
            "--lr-batch", "64"]
    docs = {}
    for world in (1, 2, 4):
        d = tmp_path / str(world)
        d.mkdir()
        docs[world], _ = rank0_json(d, world if world > 1 else 0, [*args, "--batch-size", str(64 // world)])
    assert docs[1]["world_size"] == 1 and "distributed" not in docs[1]
    for world in (2, 4):
        assert docs[world]["lr"] == docs[1]["lr"] == pytest.approx(0.01)
        assert docs[world]["per_epoch"][0]["train_loss"] == pytest.approx(docs[1]["per_epoch"][0]["train_loss"],
                                                                          abs=1e-4)
        assert docs[world]["final_test_loss"] == pytest.approx(docs[1]["final_test_loss"], abs=1e-4)


def test_n_ranks_reach_one_ranks_accuracy_within_noise(tmp_path):
    # With dropout every rank draws its own masks: the runs differ by noise.
    # Measured here (2 CPUs, 8192 images, one epoch): three seeds of one rank
    # gave 68.4%, 68.7% and 71.3%; the bar is 5 points.
    args = ["--epochs", "1", "--limit", "8192", "--test-limit", "2000", "--quiet", "--threads", "1", "--lr-batch", "64"]
    acc = {}
    for world in (1, 2, 4):
        d = tmp_path / str(world)
        d.mkdir()
        doc, _ = rank0_json(d, world if world > 1 else 0, [*args, "--batch-size", str(64 // world)])
        acc[world] = doc["final_test_accuracy"]
    assert acc[1] > 0.5, acc  # it learned
    for world in (2, 4):
        assert abs(acc[world] - acc[1]) <= 0.05, acc


def read_until(proc, text, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if text in line:
            return
        if not line and proc.poll() is not None:
            pytest.fail(f"rank 0 ended ({proc.returncode}) before printing {text!r}: {proc.stderr.read()}")
    pytest.fail(f"rank 0 did not print {text!r} in {timeout} s")


@pytest.mark.parametrize("world,victim,how,timeout", [
    (3, 2, signal.SIGKILL, 5), (3, 0, signal.SIGKILL, 5), (3, 1, signal.SIGSTOP, 5), (3, 0, signal.SIGSTOP, 5),
    (4, 3, signal.SIGKILL, 20)], ids=["rank2-killed", "rank0-killed", "rank1-hung", "rank0-hung", "4-ranks-rank3-killed"])
def test_a_lost_rank_is_named_by_the_others_within_the_timeout(tmp_path, world, victim, how, timeout):
    procs = start(world, ["--epochs", "1000", "--limit", "4096", "--test-limit", "500", "--quiet", "--threads", "1",
                          "--dist-timeout", str(timeout), "--json", str(tmp_path / "run.json")])
    try:
        read_until(procs[0], f"data-parallel over {world} ranks")
        time.sleep(1)
        procs[victim].send_signal(how)
        # A dead peer is seen at once, a hung one after --dist-timeout; then
        # 3 s of watching the heartbeats (and a silent store gets 2 s more).
        # Past that bound, finish() fails the test: no rank may hang.
        results = finish([p for r, p in enumerate(procs) if r != victim], timeout=timeout + 30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    survivors = [r for r in range(world) if r != victim]
    for rank, (rc, o, e) in zip(survivors, results):
        assert rc == 3, f"rank {rank}: rc {rc}: {e}"
        lines = e.splitlines()
        assert len(lines) == 1, e  # one line: no backtrace, no c10d log
        assert lines[0].startswith(f"train: rank {rank}: stopped: lost rank {victim} of {world} ("), e
    assert not os.listdir(tmp_path)  # nothing half-written


def test_a_rank_that_never_joins_is_named(tmp_path):
    port = free_port()
    procs = [subprocess.Popen([TRAIN, *QUICK, "--dist-timeout", "3"], env=rank_env(r, 3, port),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    for rank, (rc, o, e) in enumerate(finish(procs, timeout=40)):
        assert rc == 3 and e.strip() == (f"train: rank {rank}: stopped: rank 2 of 3 never arrived within 3 s "
                                         "(--dist-timeout): was a process started with RANK=2?"), e


def test_a_rank_given_twice_is_named_by_every_process(tmp_path):
    """RANK=0, 1, 1 of 3: the second RANK=1 is told at once (2), and the
    others name the duplicate rather than wait out the timeout for rank 2."""
    port = free_port()
    procs = [subprocess.Popen([TRAIN, *QUICK, "--dist-timeout", "60"], env=rank_env(r, 3, port),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1, 1)]
    t0 = time.monotonic()
    results = finish(procs, timeout=50)
    assert time.monotonic() - t0 < 40  # not the 60 s timeout
    for rc, _, e in results:
        assert rc == 2 and e.count("\n") == 1 and "RANK=1 is given to two processes" in e, e
    assert sum("so rank 2 never came" in e for _, _, e in results) >= 2


def test_no_rank_0_is_named(tmp_path):
    r = subprocess.run([TRAIN, *QUICK, "--dist-timeout", "2"], env=rank_env(1, 2, free_port()), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 3 and "(rank 0: did a process start with RANK=0?)" in r.stderr, r.stderr


def test_too_few_open_files_is_named_before_anything_starts(tmp_path):
    """`ulimit -n 16`: Gloo used to say "Cannot resolve 127.0.0.1 to a
    (local) address"."""
    import resource
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    r = subprocess.run([TRAIN, *QUICK], env=rank_env(0, 2, free_port()), capture_output=True, text=True, timeout=60,
                       preexec_fn=limit)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().startswith("train: rank 0: the limit on open files is 16 (ulimit -n"), r.stderr
    # A soft limit under a higher hard one is raised, and the run goes on.
    low = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 4096))
    procs = [subprocess.Popen([TRAIN, *QUICK], env=rank_env(rank, 2, port), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, preexec_fn=low) for port in [free_port()]
             for rank in (0, 1)]
    for rc, _, e in finish(procs, timeout=300):
        assert rc == 0, e


def test_torchrun_launches_it_with_nothing_else_to_set(tmp_path):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")  # beside the venv's python
    if not os.access(torchrun, os.X_OK):
        pytest.skip(f"no {torchrun}: train was built with a LibTorch that is not the venv's torch")
    out = tmp_path / "run.json"
    env = clean_env()
    r = subprocess.run([torchrun, "--no-python", "--standalone", "--nproc-per-node", "2", TRAIN, *QUICK,
                        "--check-sync", "--json", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    hashes = {h for _, _, h in HASH_LINE.findall(r.stdout)}
    assert len(HASH_LINE.findall(r.stdout)) == 2 and len(hashes) == 1, r.stdout
    doc = json.loads(out.read_text())
    assert doc["distributed"]["world_size"] == 2 and doc["distributed"]["launcher"] == "torchrun"


def test_the_scaling_series_reports_images_per_second_efficiency_and_bus_bandwidth(tmp_path):
    out = tmp_path / "scaling"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ddp_scaling.py"), "--ranks", "1,2",
                        "--repetitions", "2", "--epochs", "1", "--limit", "1024", "--train", TRAIN, "--out", str(out),
                        "--", "--test-limit", "200"],
                       capture_output=True, text=True, env=clean_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "scaling.json").read_text())
    assert (doc["backend"], doc["launcher"], doc["repetitions"]) == ("gloo", "local", 2)
    one, two = doc["series"]
    assert (one["world_size"], two["world_size"]) == (1, 2)
    assert two["global_batch"] == 128
    ips1, ips2 = one["images_per_second"], two["images_per_second"]
    assert len(ips2["samples"]) == 2 and ips2["min"] <= ips2["median"] <= ips2["max"]
    assert two["speedup"] == pytest.approx(ips2["median"] / ips1["median"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2) and one["efficiency"] == pytest.approx(1)
    # One rank reduces nothing: no all-reduce is timed (n/a); nccl-tests' busbw = algbw x 2(n-1)/n is algbw at two.
    assert one["allreduce_seconds_per_step"] is None and one["busbw_bytes_per_second"] is None
    assert "| 1 | " in r.stdout and "n/a (one rank)" in r.stdout
    assert two["busbw_bytes_per_second"]["median"] == pytest.approx(two["algbw_bytes_per_second"]["median"])
    assert two["allreduce_bytes"] == PARAM_BYTES
    assert "| 2 |" in (out / "scaling.md").read_text() and "| 2 |" in r.stdout
    # Every run's rank-0 JSON is kept: 2 world sizes x 2 repetitions.
    assert sorted(p for p in os.listdir(out / "runs") if p.endswith(".json")) == \
        ["n1-r1.json", "n1-r2.json", "n2-r1.json", "n2-r2.json"]


# ---- where the ranks meet: every wait has a deadline, every difference is said ----

def listener(behaviour):
    """A TCP listener on a free port that accepts and then stays silent, or
    closes at once: not a rendezvous store. Returns (port, stop)."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held, done = [], threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not done.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            (held.append(c) if behaviour == "silent" else c.close())

    threading.Thread(target=serve, daemon=True).start()

    def stop():
        done.set()
        for c in held:
            c.close()
        srv.close()
    return srv.getsockname()[1], stop


@pytest.mark.parametrize("behaviour", ["silent", "closes"])
def test_a_listener_that_is_not_the_store_ends_the_rank_within_the_timeout(behaviour):
    port, stop = listener(behaviour)
    try:
        t0 = time.monotonic()
        p = subprocess.run([TRAIN, *QUICK, "--dist-timeout", "5"], env=rank_env(1, 2, port), capture_output=True,
                           text=True, timeout=60)
        took = time.monotonic() - t0
    finally:
        stop()
    assert p.returncode == 3, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("train: rank 1: stopped: "), p.stderr
    assert f"127.0.0.1:{port}" in lines[0], lines[0]
    if behaviour == "silent":  # the store's client never times out on it: the watchdog names it
        assert "is another program listening on MASTER_PORT?" in lines[0], lines[0]
    assert took < 5 + 5 + 3, f"took {took:.1f} s for --dist-timeout 5"


def test_a_master_addr_that_does_not_resolve_is_said_at_once():
    t0 = time.monotonic()
    results = run(2, [*QUICK, "--dist-timeout", "30"], extra_env={"MASTER_ADDR": "no-such-host.invalid"}, timeout=60)
    took = time.monotonic() - t0
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 2, f"rank {rank}: {e}"
        assert e.strip() == f"train: rank {rank}: MASTER_ADDR=no-such-host.invalid: no such host " \
                            "(the name does not resolve)", e
    assert took < 15, f"took {took:.1f} s"


BASE_RUN = ["--epochs", "1", "--limit", "512", "--test-limit", "512", "--batch-size", "64", "--seed", "1",
            "--quiet", "--threads", "1"]


@pytest.mark.parametrize("flag,rank1", [("--test-limit", "320"), ("--seed", "2"), ("--batch-size", "32"),
                                        ("--limit", "256"), ("--epochs", "2")])
def test_ranks_given_different_settings_all_exit_2_naming_the_flag(tmp_path, flag, rank1):
    def args(rank):
        a = list(BASE_RUN)
        if rank == 1:
            a[a.index(flag) + 1] = rank1
        return a
    rank0 = BASE_RUN[BASE_RUN.index(flag) + 1]
    out = tmp_path / "run.json"
    port = free_port()
    procs = [subprocess.Popen([TRAIN, *args(r), "--json", str(out), "--dist-timeout", "20"],
                              env=rank_env(r, 2, port), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    for rank, (rc, o, e) in enumerate(finish(procs, timeout=60)):
        assert rc == 2, f"rank {rank}: {e}"
        assert e.strip() == (f"train: rank {rank}: ranks disagree on {flag}: {rank0} on rank 0, {rank1} on rank 1 "
                             "(give every rank the same)"), e
    assert not out.exists()


def test_ranks_on_different_data_of_one_size_exit_2(tmp_path):
    """Two datasets of one size (MNIST and Fashion-MNIST are both 60000 and
    10000 images) are told apart by their content."""
    import struct
    dirs = []
    for fill in (0, 7):
        d = tmp_path / f"data{fill}"
        d.mkdir()
        for prefix, n in (("train", 64), ("t10k", 16)):
            (d / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 0x803, n, 28, 28) +
                                                            bytes([fill]) * (n * 784))
            (d / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x801, n) + bytes(n))
        dirs.append(str(d))
    results = run(2, ["--epochs", "1", "--quiet", "--threads", "1", "--dist-timeout", "20"], timeout=60,
                  per_rank=lambda r: ["--data-dir", dirs[r]])
    for rank, (rc, o, e) in enumerate(results):
        assert rc == 2, f"rank {rank}: {e}"
        assert e.startswith(f"train: rank {rank}: ranks disagree on the training set (--data-dir): 64 images, "), e
