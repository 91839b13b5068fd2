"""train held to the exit-code contract (tests/bad_input.py): its table of
bad inputs (datasets, flags, ranks), then the faults no table can hold: a
signal, a full disk, training that diverges or makes no progress."""
import gzip
import json
import os
import signal
import struct
import subprocess
import time

import pytest

from conftest import PY, TRAIN
from bad_input import (Case, TRAIN_PERTURBED, dataset, dev_full_is_intact, gzip_bomb, idx_images, idx_labels, needs,
                       program_copy, run_case, symlink_loop, temporaries, train)


CASES = [
    # train: flags
    train("--device", "tpu", id="train-device-unknown", rc=2, names="--device tpu"),
    train("--json", "-", id="train-json-dash", rc=2, names="--json -: cannot write: '-' is not a file name",
          outputs=["{tmp}/-"]),
    train("--json=", "--quiet", id="train-json-empty", rc=2, names="--json=: empty value", outputs=["{tmp}/--quiet"]),
    train("--json", "--quiet", id="train-json-then-a-flag", rc=2, names="--json: expects a value, not the option --quiet",
          outputs=["{tmp}/--quiet"]),
    train("--threads", "65536", id="train-threads-beyond-the-cpus", rc=2, names="--threads 65536: at most"),
    train("--data-dir", symlink_loop, id="train-data-dir-symlink-loop", rc=2,
          names="loop: Too many levels of symbolic links"),
    train("--epochs", "1", id="train-probe-root-missing", rc=2, names="CUDABENCH_PROBE_ROOT=/nonexistent: no such",
          env={"CUDABENCH_PROBE_ROOT": "/nonexistent"}),
    train("--device", "cuda:x", id="train-device-bad-index", rc=2, names="--device cuda:x"),
    train("--device", "cpu:0", id="train-device-cpu-index", rc=2, names="--device cpu:0"),
    train("--device", "cuda:01", id="train-device-leading-zero", rc=2, names="--device cuda:01"),
    train("--device", "cuda:200", id="train-device-index-too-big", rc=2, names="--device cuda:200"),
    train("--lr", "nan", id="train-lr-nan", rc=2, names="--lr"),
    train("--lr", "-1", id="train-lr-negative", rc=2, names="--lr"),
    train("--lr", "inf", id="train-lr-inf", rc=2, names="--lr"),
    train("--momentum", "2", id="train-momentum-range", rc=2, names="--momentum"),
    train("--momentum", "nan", id="train-momentum-nan", rc=2, names="--momentum"),
    train("--threads", "-1", id="train-threads-negative", rc=2, names="--threads"),
    train("--epochs", "0", id="train-epochs-zero", rc=2, names="--epochs"),
    train("--batch-size", "0", id="train-batch-zero", rc=2, names="--batch-size"),
    train("--limit", "0", id="train-limit-zero", rc=2, names="--limit"),
    train("--test-limit", "0", id="train-test-limit-zero", rc=2, names="--test-limit"),
    train("--tf32", "maybe", id="train-tf32", rc=2, names="--tf32"),
    train("--bogus", id="train-unknown-flag", rc=2, names="--bogus"),
    train("--json", "{tmp}/no/dir/t.json", id="train-json-missing-dir", rc=2,
          names="--json {tmp}/no/dir/t.json: cannot write: No such file or directory"),
    train("--json", "{tmp}", id="train-json-is-dir", rc=2, names="is a directory"),
    # train: datasets
    train("--data-dir", "{tmp}/nope", id="train-data-dir-missing", rc=2, names="--data-dir {tmp}/nope"),
    train(id="train-data-env-missing", rc=2, names="CUDABENCH_DATA_DIR={tmp}/nope",
          env={"CUDABENCH_DATA_DIR": "{tmp}/nope"}),
    train("--data-dir", lambda t: dataset(t + "/d", train_images="dir"), id="train-images-is-dir", rc=2,
          names="train-images-idx3-ubyte: is a directory"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=idx_images(2, 32, 32)),
          id="train-images-32x32", rc=2, names="train-images-idx3-ubyte: images are 32x32"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=idx_images(0), train_labels=idx_labels(0)),
          id="train-no-images", rc=2, names="holds no images"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=idx_images(3)[:-5]),
          id="train-images-truncated", rc=2, names="train-images-idx3-ubyte: truncated"),
    train("--data-dir", lambda t: dataset(t + "/d", train_labels=idx_labels(3)),
          id="train-count-mismatch", rc=2, names="has 2 images but"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=gzip_bomb(), gz=True),
          id="train-gzip-bomb", rc=2, names="inflates beyond the 1584 bytes its IDX header implies"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=gzip.compress(idx_images(2))[:-12], gz=True),
          id="train-gzip-truncated", rc=2, names="truncated gzip data"),
    train("--data-dir", lambda t: dataset(t + "/d", train_images=b"\x1f\x8b" + b"junk" * 10, gz=True),
          id="train-gzip-corrupt", rc=2, names="gzip"),
    train("--data-dir", lambda t: dataset(t + "/d", train_labels=struct.pack(">II", 0x801, 2) + b"\x00\x0b"),
          id="train-label-out-of-range", rc=2, names="label 11 at index 1 is out of range"),
    # train: data-parallel launches (torchrun's and srun's variables) and flags
    train(id="train-world-size-junk", rc=2, names="WORLD_SIZE=abc: not a whole number",
          env={"RANK": "0", "WORLD_SIZE": "abc", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
    train(id="train-rank-beyond-world", rc=2, names="RANK=5: expected 0..1",
          env={"RANK": "5", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
    train(id="train-no-master-addr", rc=2, names="MASTER_ADDR is not set (a torchrun launch needs it)",
          env={"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1"}),
    train(id="train-srun-procid-junk", rc=2, names="SLURM_PROCID=x: not a whole number",
          env={"SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "x", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "1",
               "SLURM_STEP_NODELIST": "node1"}),
    train("--backend", "nccl", id="train-nccl-on-cpu", rc=2, names="--backend nccl needs --device cuda",
          env={"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
    train("--cuda-graph", id="train-cuda-graph-data-parallel", rc=2, names="--cuda-graph: not with data-parallel",
          env={"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
    Case(cmd=[TRAIN_PERTURBED], id="train-perturb-junk", rc=2, names="CUDABENCH_TEST_PERTURB=x: expected RANK:STEP",
         env={"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1",
              "CUDABENCH_TEST_PERTURB": "x"}),
    train("--backend", "mpi", id="train-backend-unknown", rc=2, names="--backend"),
    train("--dist-timeout", "0", id="train-dist-timeout-zero", rc=2, names="--dist-timeout"),
    train("--bucket-mb", "-1", id="train-bucket-negative", rc=2, names="--bucket-mb"),
    train("--lr-batch", "0", id="train-lr-batch-zero", rc=2, names="--lr-batch"),
    # rank 1 of 2 with nobody at rank 0's address: not the input's fault, 3
    train("--dist-timeout", "1", id="train-rank0-unreachable", rc=3,
          names="could not reach the rendezvous store at 127.0.0.1:1 (rank 0: did a process start with RANK=0?)",
          env={"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
    train("--seed", "-1", id="train-seed-negative", rc=2, names="--seed"),
    train("--stall-seconds", "inf", id="train-stall-seconds-infinite", rc=2, names="--stall-seconds"),
    train("--seed", "18446744073709551616", id="train-seed-2-to-64", rc=2, names="out of range"),
    train("--seed", "1e23", id="train-seed-float", rc=2, names="not a whole number"),
    train("--epochs", "1", id="train-omp-threads-huge", rc=2, names="OMP_NUM_THREADS=40000: at most",
          env={"OMP_NUM_THREADS": "40000"}),
    train("--data-dir", lambda t: dataset(t + "/d"), "--json", "{tmp}/d/train-labels-idx1-ubyte",
          id="train-json-is-the-dataset", rc=2, names="that is the dataset's", outputs=["{tmp}/d/train-labels-idx1-ubyte"]),
    train("--data-dir", lambda t: dataset(t + "/d"), "--json",
          lambda t: (os.symlink(t + "/d/t10k-images-idx3-ubyte", t + "/link.json"), t + "/link.json")[1],
          id="train-json-links-to-the-dataset", rc=2, names="an input", outputs=["{tmp}/d/t10k-images-idx3-ubyte"]),
    train("--json", "{tmp}/no/t\ntrain: done, accuracy 99%\x1b[2K", id="train-json-forges-a-line", rc=2,
          names="--json {tmp}/no/t\\ntrain: done, accuracy 99%\\x1b[2K: cannot write"),
    Case(cmd=[program_copy(TRAIN, "t"), "--json", lambda t: (os.link(t + "/t", t + "/hard.json"), t + "/hard.json")[1]],
         id="train-json-hard-links-to-the-program", rc=2, names="it is the running program", outputs=["{tmp}/t"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_the_table_covers_the_program():
    progs = {os.path.basename(c.cmd[1] if c.cmd[0] in (PY, "bash") else getattr(c.cmd[0], "program", c.cmd[0]))
             for c in CASES}
    assert progs <= {"train", "train_perturbed"} and "train" in progs, progs
    assert len(CASES) >= 50


# ---- what a table cannot hold ----

@needs(TRAIN)
def test_train_writes_a_dataset_path_that_is_not_utf8(tmp_path):
    d = dataset(str(tmp_path) + "/data" + os.fsdecode(b"\xff"), train_images=idx_images(64), train_labels=idx_labels(64))
    out = tmp_path / "t.json"
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", str(out)], capture_output=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["dataset"].endswith("data\ufffd")


@needs(TRAIN)
def test_train_on_a_full_disk_exits_3_after_checking_early(tmp_path):
    d = dataset(str(tmp_path / "d"), train_images=idx_images(64), train_labels=idx_labels(64))
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", "/dev/full"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip() == "train: --json /dev/full: cannot write: No space left on device"
    assert dev_full_is_intact()


@needs(TRAIN)
def test_train_stopped_by_a_signal_leaves_no_file(tmp_path):
    d = dataset(str(tmp_path / "d"), train_images=idx_images(6000), train_labels=idx_labels(6000))
    out = tmp_path / "t.json"
    p = subprocess.Popen([TRAIN, "--data-dir", d, "--epochs", "50", "--json", str(out), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(4)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGTERM
    assert not out.exists() and not temporaries(str(tmp_path))


@needs(TRAIN)
@pytest.mark.parametrize("seconds", ["1", "0.5"])
def test_training_that_makes_no_progress_ends_at_its_deadline(tmp_path, seconds):
    """An epoch of 60000 images in batches of 500 (seconds long) against
    --stall-seconds 1, as a GPU stuck in a step would: exit 3, one line, no
    file; the line gives the deadline as given (0.5 s was said "0 s")."""
    d = dataset(str(tmp_path / "d"), train_images=idx_images(60000), train_labels=idx_labels(60000))
    out = tmp_path / "t.json"
    r = subprocess.run([TRAIN, "--data-dir", d, "--batch-size", "500", "--stall-seconds", seconds, "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines()[-1].startswith(f"train: no progress in {seconds} s (none yet): stopped"), r.stderr
    assert not out.exists() and not temporaries(str(tmp_path))


@needs(TRAIN)
def test_train_that_diverges_is_a_wrong_result_and_saves_nothing(tmp_path):
    out = tmp_path / "t.json"  # Fashion-MNIST (setup.sh installs it): 10 batches at lr 1e5 diverge
    r = subprocess.run([TRAIN, "--epochs", "1", "--lr", "1e5", "--limit", "640", "--test-limit", "100", "--quiet",
                        "--json", str(out)], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "CUDABENCH_DATA_DIR"})
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().startswith("train: epoch 1: the loss is not a finite number")
    assert not out.exists() and not temporaries(str(tmp_path))


@needs(TRAIN)
def test_train_writes_its_json_through_a_symlink(tmp_path):
    d = dataset(str(tmp_path / "d"), train_images=idx_images(64), train_labels=idx_labels(64))
    target = tmp_path / "latest.json"
    target.write_text("old\n")
    (tmp_path / "link").symlink_to(target)
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", str(tmp_path / "link")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link").is_symlink() and "final_test_accuracy" in json.loads(target.read_text())
