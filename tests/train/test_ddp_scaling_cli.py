"""scripts/ddp_scaling.py around its runs: a rank that exits 2 (train
refused its arguments) is the user's bad usage, passed on as exit 2 in one
line, with the other ranks stopped and nothing left in --out; a run past
--run-timeout is stopped within a bounded time, even ranks that ignore
SIGTERM. Fake ranks (a shell script) stand in for train where train cannot
be made to misbehave; the real build/train where it can.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, TRAIN


SCRIPT = os.path.join(ROOT, "scripts", "ddp_scaling.py")
GRACE = 5  # ddp_scaling.GRACE

# Each rank writes its pid to $PIDS/rank<RANK>; rank 0 exits 2 when
# FAKE_REFUSE is set, once every rank has started; the others sleep, deaf
# to SIGTERM.
FAKE_TRAIN = """#!/bin/bash
echo $$ > "$PIDS/rank$RANK"
if [ "$RANK" = 0 ] && [ -n "${FAKE_REFUSE:-}" ]; then
  for _ in $(seq 100); do [ "$(ls "$PIDS" | wc -l)" -ge "$WORLD_SIZE" ] && break; sleep 0.1; done
  echo "train: The following argument was not expected: --bogus (see --help)" >&2
  exit 2
fi
trap '' TERM
exec sleep 100
"""


def ddp_scaling(*args, env=None, timeout=120):
    clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                             "MASTER_PORT")}
    start = time.monotonic()
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=timeout,
                       env=dict(clean, **(env or {})))
    return r, time.monotonic() - start


@pytest.fixture
def fake_train(tmp_path):
    """(the fake train, the folder of its ranks' pids); the ranks a failing test left are killed."""
    path = tmp_path / "train"
    path.write_text(FAKE_TRAIN)
    path.chmod(0o755)
    pids = tmp_path / "pids"
    pids.mkdir()
    yield str(path), pids
    for name in os.listdir(pids):
        try:
            os.kill(int((pids / name).read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def gone(pid):
    """The process has ended (reaped, or a zombie waiting for its new parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def one_line(r):
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    return lines[0]


def test_a_rank_that_refuses_its_arguments_stops_the_run_as_bad_usage(tmp_path, fake_train):
    train, pids = fake_train
    out = tmp_path / "new" / "scaling"
    r, took = ddp_scaling("--ranks", "3", "--train", train, "--out", str(out), "--", "--bogus",
                          env={"PIDS": str(pids), "FAKE_REFUSE": "1"}, timeout=60)
    assert r.returncode == 2, r.stderr
    assert one_line(r) == ("ddp_scaling: n3-r1: train: The following argument was not expected: --bogus "
                           "(see --help)")
    assert took < 2 * GRACE + 30  # not the ranks' 100 s, nor --run-timeout's hour
    assert not (tmp_path / "new").exists()  # every folder this run made is gone
    ranks = sorted(os.listdir(pids))
    assert ranks == ["rank0", "rank1", "rank2"]
    for name in ranks:
        pid = int((pids / name).read_text())
        assert gone(pid), f"{name} (pid {pid}) is still running"


def test_bad_usage_keeps_what_was_in_out_before(tmp_path, fake_train):
    train, pids = fake_train
    runs = tmp_path / "out" / "runs"
    runs.mkdir(parents=True)
    (runs / "earlier.json").write_text("{}\n")
    r, _ = ddp_scaling("--ranks", "1", "--train", train, "--out", str(tmp_path / "out"),
                       env={"PIDS": str(pids), "FAKE_REFUSE": "1"})
    assert r.returncode == 2, r.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["runs"] and os.listdir(runs) == ["earlier.json"]


def test_a_run_past_its_timeout_is_stopped_even_deaf_to_sigterm(tmp_path, fake_train):
    train, pids = fake_train
    r, took = ddp_scaling("--ranks", "2", "--train", train, "--out", str(tmp_path / "out"), "--run-timeout", "1",
                          env={"PIDS": str(pids)})
    assert r.returncode == 3, r.stderr
    assert "n2-r1: the run took longer than --run-timeout 1 s" in one_line(r)
    assert took < 1 + 2 * GRACE + 30
    for name in os.listdir(pids):
        assert gone(int((pids / name).read_text())), name
    assert os.listdir(tmp_path / "out" / "runs")  # a failed run keeps every rank's stderr


@pytest.mark.skipif(not os.access(TRAIN, os.X_OK), reason=f"{TRAIN} is not built (no LibTorch)")
def test_train_refusing_a_passed_on_flag_is_exit_2_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    r, _ = ddp_scaling("--train", TRAIN, "--out", str(out), "--", "--bogus")
    assert r.returncode == 2, r.stderr
    line = one_line(r)
    assert line.startswith("ddp_scaling: n1-r1: train: ") and "--bogus" in line, line
    assert not out.exists()
