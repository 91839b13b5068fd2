"""The exit-code contract (docs/contributing.md), case by case, for bench,
train, compare.py, report.py and the scripts.

Each case runs a real program on a bad input and asserts:
  - its exit code (2 for bad input or usage; 3 for a failure that is not
    the input's; 1 only for a wrong result);
  - exactly one line on stderr, naming the input;
  - no Python traceback and no C++/c10 backtrace;
  - that no output file was created or changed, and no temporary file left.
Then the faults no table can hold: a signal in the middle of a run, a full
disk (/dev/full), three runs that share a label.

CUDABENCH_BUILD_DIR names the build to test (default: build/).
"""
import contextlib
import gzip
import json
import os
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import time
from dataclasses import dataclass, field

import pytest

from conftest import BENCH, PY, ROOT, SCRIPTS, TRAIN


BUILD = os.environ.get("CUDABENCH_BUILD_DIR") or os.path.join(ROOT, "build")
TRAIN_PERTURBED = os.path.join(BUILD, "train_perturbed")  # train with a test's fault (tests/train_perturbed.cpp)
FIX = os.path.join(ROOT, "tests", "fixtures", "compare")
BASE = os.path.join(FIX, "base.json")
TRACES = ("Traceback", "Exception raised from", "frame #", "terminate called", "Aborted", "what():")


# ---- inputs, made in each case's own folder ----

def idx_images(count, rows=28, cols=28, data=None):
    body = data if data is not None else bytes(count * rows * cols)
    return struct.pack(">IIII", 0x803, count, rows, cols) + body


def idx_labels(count):
    return struct.pack(">II", 0x801, count) + bytes(count)


def dataset(d, train_images=None, train_labels=None, gz=False):
    """An MNIST-format folder: 2 good test images, and the train files given
    (bytes, or "dir" for a folder in the file's place)."""
    os.makedirs(d, exist_ok=True)
    files = {"train-images-idx3-ubyte": train_images if train_images is not None else idx_images(2),
             "train-labels-idx1-ubyte": train_labels if train_labels is not None else idx_labels(2),
             "t10k-images-idx3-ubyte": idx_images(2), "t10k-labels-idx1-ubyte": idx_labels(2)}
    for name, content in files.items():
        if content == "dir":
            os.makedirs(os.path.join(d, name))
        elif gz and name.startswith("train-images"):
            with open(os.path.join(d, name + ".gz"), "wb") as f:
                f.write(content)
        else:
            with open(os.path.join(d, name), "wb") as f:
                f.write(content)
    return d


def gzip_bomb():
    """A valid header for 2 images, then 256 MiB of zeros: about 250 KiB."""
    import zlib
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [co.compress(idx_images(2, data=b""))]
    zeros = bytes(1 << 24)
    parts += [co.compress(zeros) for _ in range(16)]
    parts.append(co.flush())
    return b"".join(parts)


def gbench(tmp, name, mutate):
    """base.json with `mutate(doc)` applied, written to tmp/name."""
    with open(BASE) as f:
        doc = json.load(f)
    mutate(doc)
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        json.dump(doc, f)
    return p


def set_first(key, value):
    def m(doc):
        doc["benchmarks"][0][key] = value
    return m


def write(tmp, name, data):
    p = os.path.join(tmp, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


# ---- the table ----

@dataclass
class Case:
    id: str
    cmd: list                        # may hold "{tmp}"; callables get tmp and return a path
    rc: int
    names: str                       # what the one stderr line must contain
    outputs: list = field(default_factory=list)  # paths ("{tmp}/...") that must not appear or change
    env: dict = field(default_factory=dict)
    stdin: str = None
    needs_torch: bool = False        # only a bench built with LibTorch has the Mnist families
    no_driver: bool = False          # what a machine without an NVIDIA driver answers
    unset: list = field(default_factory=list)  # variables the case's environment lacks (HOME)


def bench(*a, **kw):
    return Case(cmd=[BENCH, *a], **kw)


def train(*a, **kw):
    return Case(cmd=[TRAIN, *a], **kw)


def py(script, *a, **kw):
    return Case(cmd=[PY, os.path.join(SCRIPTS, script), *a], **kw)


def fleet_sh(*a, **kw):
    return Case(cmd=["bash", os.path.join(SCRIPTS, "fleet", "fleet.sh"), *a], **kw)


def script(name, *a, **kw):
    return Case(cmd=["bash", os.path.join(SCRIPTS, name), *a], **kw)


def path_without_python(tmp):
    """A PATH of one folder: /usr/bin's and /bin's programs, python left out."""
    d = os.path.join(tmp, "nopython")
    os.makedirs(d, exist_ok=True)
    for src in ("/usr/bin", "/bin"):
        for n in os.listdir(src):
            if not n.startswith("python") and not os.path.lexists(os.path.join(d, n)):
                os.symlink(os.path.join(src, n), os.path.join(d, n))
    return d


def path_without_passwd_home(tmp):
    """PATH with a getent first that knows no user: no home in passwd either."""
    os.makedirs(os.path.join(tmp, "bin"), exist_ok=True)
    write(os.path.join(tmp, "bin"), "getent", b"#!/bin/sh\nexit 2\n")
    os.chmod(os.path.join(tmp, "bin", "getent"), 0o755)
    return os.path.join(tmp, "bin") + ":" + os.environ["PATH"]


def symlink_loop(tmp):
    """tmp/loop -> tmp/loop2 -> tmp/loop."""
    os.symlink("loop2", os.path.join(tmp, "loop"))
    os.symlink("loop", os.path.join(tmp, "loop2"))
    return os.path.join(tmp, "loop")


def fleet_run(tmp, status):
    """A run folder whose one status file holds `status`."""
    os.makedirs(os.path.join(tmp, "run", "n1"))
    write(os.path.join(tmp, "run", "n1"), "cpu.status.json", status)
    return os.path.join(tmp, "run")


OUT = "{tmp}/out.json"
PRE = "{tmp}/pre.json"   # exists before the run, with known content
MD = "{tmp}/report.md"

CASES = [
    # bench: its own flags
    bench("--bogus", id="bench-unknown-flag", rc=2, names="--bogus"),
    bench("--benchmark_foo=1", "--benchmark_bar=2", id="bench-two-unknown-flags", rc=2, names="--benchmark_foo"),
    bench("--l2-flush=sometimes", id="bench-l2-flush", rc=2, names="--l2-flush"),
    bench("--devices=1", id="bench-devices-without-gpu", rc=2, names="--devices 1"),
    bench("--check", id="bench-check-without-env", rc=2, names="--check"),
    # a value that is empty, never the next argument
    bench("--env", "--env-out=", "--check", id="bench-env-out-empty", rc=2, names="--env-out=: empty value",
          outputs=["{tmp}/--check"]),
    bench("--env", "--env-out", "--check", id="bench-env-out-then-a-flag", rc=2,
          names="--env-out: expects a value, not the option --check", outputs=["{tmp}/--check"]),
    bench("--devices=", "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-devices-empty", rc=2,
          names="--devices=: empty value"),
    bench("--explain=", "Error 804", id="bench-explain-empty", rc=2, names="--explain=: empty value"),
    bench("--env", f"--benchmark_out={OUT}", id="bench-env-with-benchmark-out", rc=2,
          names=f"--benchmark_out={OUT} goes with benchmarks, not --env", outputs=[OUT]),
    bench("--benchmark_out=-", id="bench-out-dash", rc=2, names="--benchmark_out=-: cannot write: '-' is not"),
    bench("--benchmark_out=/proc/version", id="bench-out-in-proc", rc=2,
          names="--benchmark_out=/proc/version: cannot write: its folder /proc takes no new file"),
    bench(lambda t: "--benchmark_out=" + symlink_loop(t), id="bench-out-symlink-loop", rc=2,
          names="cannot write: Too many levels of symbolic links"),
    # a machine to probe that is not there
    bench("--env", "--check", id="bench-probe-root-missing", rc=2,
          names="CUDABENCH_PROBE_ROOT=/nonexistent: no such folder", env={"CUDABENCH_PROBE_ROOT": "/nonexistent"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-probe-root-a-file", rc=2,
          names="CUDABENCH_PROBE_ROOT={tmp}/pre.json: not a folder", env={"CUDABENCH_PROBE_ROOT": PRE}),
    # filters std::regex would overflow the stack on
    bench("--benchmark_filter=" + "a" * 100000, id="bench-filter-long", rc=2,
          names="(100000 characters): expected a regular expression of at most 10000 characters"),
    bench("--benchmark_filter=" + "(" * 30000 + ")" * 30000, id="bench-filter-nested-long", rc=2,
          names="(60000 characters): expected a regular expression of at most 10000 characters"),
    bench("--benchmark_filter=(.?){15000}", id="bench-filter-repeat", rc=2,
          names="--benchmark_filter=(.?){15000}: expected a regular expression whose {n} repetitions are at most 100"),
    bench("--benchmark_filter=" + "(" * 400 + "a" + ")" * 400, id="bench-filter-nested", rc=2,
          names="expected a regular expression nested at most 50 groups deep"),
    bench("--benchmark_filter=VectorAdd/cuda_v4", id="bench-gpu-filter-without-driver", rc=2, no_driver=True,
          names="matches no benchmark here: GPU benchmarks are not registered"),
    bench("--env=yaml", id="bench-env-format", rc=2, names="--env"),
    bench("--env", "--env-out={tmp}/no/dir/env.txt", id="bench-env-out-missing-dir", rc=2,
          names="--env-out={tmp}/no/dir/env.txt: cannot write: No such file or directory"),
    bench("--env", "--env-out={tmp}", id="bench-env-out-is-dir", rc=2, names="is a directory"),
    # bench: Google Benchmark's flags, checked before it sees them
    bench("--benchmark_filter=nomatch", f"--benchmark_out={OUT}", id="bench-filter-matches-nothing", rc=2,
          names="--benchmark_filter=nomatch matches no benchmark", outputs=[OUT]),
    bench("--benchmark_filter=nomatch", f"--benchmark_out={PRE}", id="bench-filter-keeps-old-results", rc=2,
          names="nomatch", outputs=[PRE]),
    bench("--benchmark_filter=[", f"--benchmark_out={OUT}", id="bench-filter-invalid-regex", rc=2,
          names="--benchmark_filter=[", outputs=[OUT]),
    bench("--benchmark_filter=MnistTrain/cpu/batch:64/", id="bench-data-env-missing", rc=2,
          names="CUDABENCH_DATA_DIR={tmp}/nope", env={"CUDABENCH_DATA_DIR": "{tmp}/nope"}, needs_torch=True),
    bench("--benchmark_repetitions=-3", id="bench-repetitions-negative", rc=2, names="--benchmark_repetitions=-3"),
    bench("--benchmark_repetitions=abc", id="bench-repetitions-word", rc=2, names="--benchmark_repetitions=abc"),
    bench("--benchmark_min_time=0", id="bench-min-time-zero", rc=2, names="--benchmark_min_time=0"),
    bench("--benchmark_min_time=nan", id="bench-min-time-nan", rc=2, names="--benchmark_min_time=nan"),
    bench("--benchmark_min_warmup_time=-1", id="bench-warmup-negative", rc=2, names="--benchmark_min_warmup_time"),
    bench("--benchmark_out={tmp}/no/dir/out.json", id="bench-out-missing-dir", rc=2,
          names="--benchmark_out={tmp}/no/dir/out.json: cannot write: No such file or directory"),
    bench("--benchmark_out={tmp}", id="bench-out-is-dir", rc=2, names="is a directory"),
    bench("--benchmark_out=", id="bench-out-empty", rc=2, names="--benchmark_out="),
    bench("--benchmark_out_format=yaml", f"--benchmark_out={OUT}", id="bench-out-format", rc=2,
          names="--benchmark_out_format=yaml", outputs=[OUT]),
    bench("--benchmark_format=xml", id="bench-format", rc=2, names="--benchmark_format=xml"),
    bench("--benchmark_time_unit=min", id="bench-time-unit", rc=2, names="--benchmark_time_unit=min"),
    bench("--benchmark_list_tests=maybe", id="bench-bool-flag", rc=2, names="--benchmark_list_tests=maybe"),
    bench("--benchmark_unheard_of=1", id="bench-unknown-benchmark-flag", rc=2, names="--benchmark_unheard_of"),
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
    # ddp_scaling.py
    py("ddp_scaling.py", "--ranks", "0,2", id="ddp-scaling-ranks-zero", rc=2, names="--ranks 0,2"),
    py("ddp_scaling.py", "--ranks", "a", id="ddp-scaling-ranks-junk", rc=2, names="--ranks a"),
    py("ddp_scaling.py", "--ranks", "4096", id="ddp-scaling-ranks-beyond-the-cpus", rc=2, names="local ranks on"),
    py("ddp_scaling.py", "--ranks", "2,2", id="ddp-scaling-ranks-repeated", rc=2, names="--ranks 2,2"),
    py("ddp_scaling.py", "--train", "{tmp}/nope", id="ddp-scaling-train-missing", rc=2, names="--train {tmp}/nope"),
    py("ddp_scaling.py", "--repetitions", "0", id="ddp-scaling-repetitions-zero", rc=2, names="--repetitions 0"),
    py("ddp_scaling.py", "--device", "tpu", id="ddp-scaling-device", rc=2, names="--device"),
    py("ddp_scaling.py", "--batch-size", "0", id="ddp-scaling-batch-zero", rc=2, names="--batch-size 0"),
    py("ddp_scaling.py", "--limit", "0", id="ddp-scaling-limit-zero", rc=2, names="--limit 0"),
    py("ddp_scaling.py", "--threads-per-rank", "-1", id="ddp-scaling-threads-negative", rc=2,
       names="--threads-per-rank -1"),
    # compare.py
    py("compare.py", BASE, id="compare-one-file", rc=2, names="need at least two files"),
    # filters are matched by RE2, as bench matches them: linear time, no backtracking
    py("compare.py", BASE, BASE, "--filter", "(.*)*z", id="compare-filter-backtracking", rc=2,
       names="no benchmarks in common matching '(.*)*z'"),
    py("compare.py", BASE, BASE, "--filter", "(a", id="compare-filter-invalid", rc=2,
       names="--filter (a: not a valid regular expression"),
    py("compare.py", BASE, BASE, "--plot", lambda t: write(t, "plotfile", b"x") + "/p", id="compare-plot-under-a-file",
       rc=2, names="--plot"),
    py("samples.py", "run", "--bench", BENCH, "--out", "{tmp}/s.json", "--", "--benchmark_list_tests",
       id="samples-list-tests", rc=2, names="--benchmark_list_tests: not for a measured run", outputs=["{tmp}/s.json"]),
    py("samples.py", "run", "--bench", BENCH, "--out", "{tmp}/s.json", "--", "--benchmark_filter=x",
       id="samples-own-filter", rc=2, names="give --filter instead", outputs=["{tmp}/s.json"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "{tmp}/ab", "--process-seconds", "0",
       id="ab-process-seconds-zero", rc=2, names="--process-seconds", outputs=["{tmp}/ab"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "{tmp}/ab", "--history",
       lambda t: write(t, "histfile", b"x") + "/h", "--rev-a", "HEAD", "--rev-b", "HEAD", id="ab-history-under-a-file",
       rc=2, names="--history", outputs=["{tmp}/ab"]),
    py("compare.py", BASE, "{tmp}/missing.json", id="compare-missing-file", rc=2,
       names="{tmp}/missing.json: cannot read"),
    py("compare.py", BASE, lambda t: write(t, "latin1.json", b'{"benchmarks": [], "context": {"h": "\xe9"}}'),
       id="compare-not-utf8", rc=2, names="latin1.json: not UTF-8"),
    py("compare.py", BASE, lambda t: write(t, "bad.json", b"{not json"), id="compare-not-json", rc=2,
       names="bad.json: not valid JSON"),
    py("compare.py", BASE, lambda t: gbench(t, "null.json", set_first("real_time", None)),
       id="compare-real-time-null", rc=2, names="null.json: VectorAdd/cuda_v4/n:1000000/manual_time: real_time"),
    py("compare.py", BASE, lambda t: gbench(t, "str.json", set_first("real_time", "fast")),
       id="compare-real-time-string", rc=2, names="str.json: VectorAdd/cuda_v4/n:1000000/manual_time: real_time"),
    py("compare.py", BASE, lambda t: gbench(t, "neg.json", set_first("real_time", -5.0)),
       id="compare-real-time-negative", rc=2, names="neg.json"),
    py("compare.py", BASE, lambda t: gbench(t, "zero.json", set_first("real_time", 0)),
       id="compare-real-time-zero", rc=2, names="zero.json"),
    py("compare.py", BASE, lambda t: gbench(t, "unit.json", set_first("time_unit", "min")),
       id="compare-time-unit", rc=2, names="unit.json"),
    py("compare.py", BASE, lambda t: gbench(t, "ctx.json", lambda d: d.update(context=[1, 2])),
       id="compare-context-list", rc=2, names="ctx.json: 'context' is a list"),
    py("compare.py", BASE, lambda t: gbench(t, "noname.json", lambda d: d["benchmarks"][0].pop("name")),
       id="compare-entry-without-name", rc=2, names="noname.json: benchmarks[0] has no name"),
    py("compare.py", BASE, BASE, "--filter", "[", id="compare-filter-invalid", rc=2, names="--filter ["),
    py("compare.py", BASE, BASE, "--markdown", "{tmp}/no/dir/r.md", id="compare-markdown-missing-dir", rc=2,
       names="--markdown {tmp}/no/dir/r.md: cannot write"),
    py("compare.py", BASE, BASE, "--markdown", "{tmp}", id="compare-markdown-is-dir", rc=2,
       names="is a directory"),
    py("compare.py", BASE, BASE, "--labels", "a", id="compare-labels-count", rc=2, names="--labels"),
    py("compare.py", BASE, BASE, "--labels", "a,a", id="compare-labels-twice", rc=2, names="'a' given twice"),
    py("compare.py", BASE, BASE, "--metric", "joules", id="compare-metric", rc=2, names="--metric"),
    py("compare.py", BASE, BASE, "--threshold", "nan", id="compare-threshold-nan", rc=2, names="--threshold"),
    py("compare.py", BASE, BASE, "--floors", lambda t: write(t, "floors.json", b'{"benchmarks": {"x": '
                                                                         b'{"process_medians": [1, true]}}}'),
       id="compare-floors-bad", rc=2, names="floors.json"),
    py("compare.py", BASE, os.path.join(FIX, "with_error.json"), id="compare-failed-check-fails-gate", rc=1,
       names="failed in the new run (a wrong result): VectorAdd/cuda_v4/n:1000000/manual_time"),
    py("compare.py", BASE, lambda t: gbench(t, "oom.json", lambda d: d["benchmarks"][0].update(
        error_occurred=True, error_message="could not run: cudaMalloc: out of memory")),
       id="compare-could-not-run-is-3", rc=3, names="could not run in the new run: VectorAdd/cuda_v4"),
    py("compare.py", BASE, lambda t: gbench(t, "clock.json", set_first("sm_clock_mhz", "n/a")),
       id="compare-counter-string", rc=2, names="clock.json: VectorAdd/cuda_v4/n:1000000/manual_time: sm_clock_mhz"),
    py("compare.py", BASE, lambda t: gbench(t, "tk.json", lambda d: d["context"].update(cuda_toolkit=12.4)),
       "--report-only", id="compare-numeric-context-is-fine", rc=0, names=""),
    py("compare.py", BASE, BASE, id="compare-without-scipy", rc=3, names="needs scipy",
       env={"CUDABENCH_VENV": "{tmp}/no-venv", "PYTHON": "/usr/bin/python3"}),
    py("compare.py", BASE, BASE, "--markdown", "-", id="compare-markdown-dash", rc=2,
       names="--markdown -: expected a file name", outputs=["{tmp}/-"]),
    py("compare.py", BASE, "/dev/zero", id="compare-dev-zero", rc=2, names="/dev/zero: not a regular file"),
    py("compare.py", BASE, lambda t: (os.mkfifo(t + "/fifo.json"), t + "/fifo.json")[1], id="compare-fifo", rc=2,
       names="fifo.json: not a regular file"),
    py("compare.py", BASE, lambda t: gbench(t, "gone.json", lambda d: d.update(
        benchmarks=[b for b in d["benchmarks"] if "cpu_scalar" not in b["name"]])),
       id="compare-missing-benchmark-fails-gate", rc=1, names="missing from the new run: VectorAdd/cpu_scalar"),
    py("compare.py", BASE, lambda t: gbench(t, "nobps.json", lambda d: [
        b.pop("bytes_per_second", None) for b in d["benchmarks"] if "cuda_v4" in b["name"]]),
       "--metric", "bytes_per_second", "--filter", "cpu_scalar", id="compare-filter-before-metric", rc=0, names=""),
    # report.py
    py("report.py", BASE, "--out", "-", id="report-out-dash", rc=2, names="--out: '-': expected a folder name",
       outputs=["{tmp}/-"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "-", id="ab-out-dash", rc=2,
       names="--out: '-': expected a folder name", outputs=["{tmp}/-"]),
    py("report.py", "/dev/zero", "--out", "{tmp}/r", id="report-dev-zero", rc=2, names="/dev/zero: not a regular file",
       outputs=["{tmp}/r"]),
    py("report.py", "--out", "{tmp}/r", id="report-no-files", rc=2, names="give result files"),
    py("report.py", BASE, "--out", "{tmp}/r", id="report-without-scipy", rc=3, names="report: needs",
       env={"CUDABENCH_VENV": "{tmp}/no-venv", "PYTHON": "/usr/bin/python3"}, outputs=["{tmp}/r"]),
    py("report.py", BASE, id="report-no-out", rc=2, names="--out"),
    py("report.py", lambda t: write(t, "bad.json", b"[1,"), "--out", "{tmp}/r", id="report-bad-json", rc=2,
       names="bad.json: not valid JSON", outputs=["{tmp}/r"]),
    py("report.py", lambda t: gbench(t, "bps.json", set_first("bytes_per_second", "many")), "--out", "{tmp}/r",
       id="report-counter-string", rc=2, names="bps.json", outputs=["{tmp}/r"]),
    py("report.py", BASE, BASE, "--labels", "a,a", "--out", "{tmp}/r", id="report-labels-twice", rc=2,
       names="'a' given twice", outputs=["{tmp}/r"]),
    py("report.py", BASE, "--out", lambda t: write(t, "afile", b"x"), id="report-out-is-a-file", rc=2,
       names="--out"),
    py("report.py", "--history", "{tmp}/nope", "--out", "{tmp}/r", id="report-history-missing", rc=2,
       names="{tmp}/nope: cannot read", outputs=["{tmp}/r"]),
    # the scripts
    py("ab.py", "run", "--a", BENCH, id="ab-missing-side", rc=2, names="--b"),
    py("ab.py", "run", "--a", "{tmp}/nope", "--b", BENCH, "--out", "{tmp}/ab", id="ab-no-executable", rc=2,
       names="--a {tmp}/nope: no such executable", outputs=["{tmp}/ab"]),
    py("matrix.py", "summary", lambda t: write(t, "bad.json", b"[1,"), id="matrix-summary-bad-json", rc=2,
       names="bad.json"),
    py("matrix.py", "summary", BASE, "--markdown", "-", id="matrix-markdown-dash", rc=2,
       names="--markdown -: expected a file name", outputs=["{tmp}/-"]),
    py("ab.py", "calibrate", "--bench", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--floors-out", "-",
       "--out", "{tmp}/ab", id="ab-floors-out-dash", rc=2, names="--floors-out -: expected a file name",
       outputs=["{tmp}/-", "{tmp}/ab"]),
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b", lambda t: (
        write(t, "b.sh", b'#!/bin/sh\nfor a; do case $a in --benchmark_out=*) echo "[1]" > "${a#*=}";; esac; done\n'),
        os.chmod(t + "/b.sh", 0o755), t + "/b.sh")[2], "--processes", "2", "--max-interference", "1",
       "--out", "{tmp}/ab", id="ab-b-malformed-result", rc=3, names="process 0 of B ({tmp}/b.sh) wrote a result"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "regress.sh"), "--bogus"], id="regress-unknown-argument", rc=2,
         names="'--bogus'"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "run-bench.sh")], id="run-bench-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=../../evil: expected one name", env={"CUDABENCH_MACHINE": "../../evil"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "run-bench.sh")], id="run-bench-machine-is-root", rc=2,
         names="CUDABENCH_MACHINE=/: expected one name", env={"CUDABENCH_MACHINE": "/"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh")], id="gpu-check-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=..: expected one name", env={"CUDABENCH_MACHINE": ".."}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh"), "--bogus"], id="gpu-check-unknown-option", rc=2,
         names="gpu-check: --bogus: unknown option"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh"), "--results"], id="gpu-check-results-no-folder", rc=2,
         names="gpu-check: --results: expected a folder"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "regress.sh")], id="regress-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=a/b: expected one name", env={"CUDABENCH_MACHINE": "a/b"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "matrix.sh"), "--stack", "13.0"], id="matrix-stack-not-a-pair",
         rc=2, names="--stack 13.0: expected CUDA:TORCH"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "setup.sh"), "--plan"], id="setup-pin-unknown", rc=2,
         names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table", env={"CUDABENCH_TORCH": "0.1"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "cpu-quota.sh"), "2", "true"], id="cpu-quota-fraction", rc=2,
         names="got '2'"),
    # the fleet mode: checked before anything is built or submitted
    fleet_sh("--tasks", "0", id="fleet-tasks-zero", rc=2, names="--tasks 0"),
    fleet_sh("--threshold", "1.5", id="fleet-threshold", rc=2, names="--threshold 1.5"),
    fleet_sh("--min-time=nan", id="fleet-min-time-nan", rc=2, names="--min-time nan"),
    fleet_sh("--run-id", "a/b", id="fleet-run-id-slash", rc=2, names="--run-id a/b"),
    fleet_sh("--processes", id="fleet-processes-no-value", rc=2, names="--processes needs a value"),
    fleet_sh("--build", "{tmp}/nope", id="fleet-build-missing", rc=2, names="--build {tmp}/nope: no bench"),
    fleet_sh("--bogus", id="fleet-unknown-argument", rc=2, names="unknown argument --bogus"),
    fleet_sh("--sbatch-arg=-pdebug", id="fleet-partition-in-sbatch-arg", rc=2, names="--sbatch-arg -pdebug"),
    fleet_sh("collect", id="fleet-collect-no-folder", rc=2, names="collect needs the run folder"),
    py("fleet/fleet.py", "report", "{tmp}/nope", id="fleet-report-missing-run", rc=2,
       names="{tmp}/nope: no such run folder"),
    py("fleet/fleet.py", "report", lambda t: fleet_run(t, b'{"host": "../etc", "unit": "cpu"}'),
       id="fleet-report-bad-host", rc=3, names="n1/cpu.status.json: 'host' is \"../etc\": expected a name"),
    py("fleet/fleet.py", "report", lambda t: fleet_run(t, b"{oops"), id="fleet-report-bad-status", rc=3,
       names="n1/cpu.status.json: not valid JSON"),
    py("fleet/fleet.py", "report", lambda t: fleet_run(t, b'{"host": "n1", "unit": "cpu", "results": "cpu.json"}'),
       id="fleet-report-results-missing", rc=3, names="n1/cpu.json: cannot read (No such file or directory)"),
    py("fleet/fleet.py", "report", "{tmp}", id="fleet-report-empty-run", rc=2, names="{tmp}: no fleet results"),
    py("fleet/fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", "{tmp}/s.json", "--processes",
       "/dev/zero", id="fleet-merge-processes-dev-zero", rc=2, names="--processes /dev/zero: not a regular file",
       outputs=["{tmp}/s.json"]),
    py("ddp_scaling.py", "--out", "{tmp}/out", "--", "--bogus", id="ddp-scaling-train-refuses-flag", rc=2,
       names="n1-r1: train: The following argument was not expected: --bogus", outputs=["{tmp}/out"],
       needs_torch=True),
    py("fleet/fleet.py", "report", "{tmp}", "--threshold", "0", id="fleet-report-threshold", rc=2,
       names="--threshold 0.0"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "fleet", "local-cluster.sh"), "start", "{tmp}/c", "--nodes", "0"],
         id="local-cluster-nodes", rc=2, names="--nodes 0", outputs=["{tmp}/c"]),
    # issue 33: the Python tools
    # an output never replaces an input: by its name, a symbolic link or a hard link to it
    py("compare.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--markdown", "{tmp}/new.json",
       id="compare-markdown-is-an-input", rc=2, names="--markdown {tmp}/new.json: is the input {tmp}/new.json",
       outputs=["{tmp}/new.json"]),
    py("compare.py", BASE, PRE, "--markdown", lambda t: linked(t, "pre.json", "r.md"),
       id="compare-markdown-links-to-an-input", rc=2, names="--markdown {tmp}/r.md: is the input {tmp}/pre.json", outputs=[PRE]),
    py("compare.py", PRE, BASE, "--markdown", lambda t: linked(t, "pre.json", "r.md", hard=True),
       id="compare-markdown-hard-link-to-an-input", rc=2, names="is the input {tmp}/pre.json", outputs=[PRE]),
    py("compare.py", BASE, PRE, "--plot", lambda t: os.path.dirname(linked(t, "pre.json", "p/mnist.png")),
       id="compare-plot-links-to-an-input", rc=2, names="--plot {tmp}/p/mnist.png: is the input {tmp}/pre.json",
       outputs=[PRE]),
    py("compare.py", BASE, PRE, "--floors", lambda t: linked(t, "pre.json", "f.json", hard=True), "--markdown",
       "{tmp}/f.json", id="compare-markdown-is-the-floors", rc=2, names="--markdown {tmp}/f.json: is the input",
       outputs=[PRE]),
    py("report.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--out",
       lambda t: os.path.dirname(linked(t, "new.json", "r/report.md", hard=True)), id="report-out-holds-an-input",
       rc=2, names="--out {tmp}/r/report.md: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("report.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--out",
       lambda t: os.path.dirname(linked(t, "new.json", "r/vector_add.png")), id="report-plot-links-to-an-input",
       rc=2, names="--out {tmp}/r/vector_add.png: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("report.py", "--history", lambda t: history(t, "h"), "--out",
       lambda t: os.path.dirname(linked(t, "h/c1.json", "r/history.md")), id="report-history-links-to-an-input",
       rc=2, names="--out {tmp}/r/history.md: is the input {tmp}/h/c1.json", outputs=["{tmp}/h/c1.json"]),
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b",
       os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--floors",
       lambda t: write(t, "floors.json", b'{"benchmarks": {}}'), "--out",
       lambda t: os.path.dirname(linked(t, "floors.json", "ab/report.md", hard=True)), id="ab-out-holds-the-floors",
       rc=2, names="--out {tmp}/ab/report.md: is the input {tmp}/floors.json", outputs=["{tmp}/floors.json"]),
    py("ab.py", "calibrate", "--bench", lambda t: bench_copy(t), "--floors-out", "{tmp}/bench.py", "--out",
       "{tmp}/ab", id="ab-floors-out-is-the-bench", rc=2, names="--floors-out {tmp}/bench.py: is the input",
       outputs=["{tmp}/bench.py", "{tmp}/ab"]),
    py("samples.py", "run", "--bench", lambda t: bench_copy(t), "--out", "{tmp}/bench.py",
       id="samples-out-is-the-bench", rc=2, names="--out {tmp}/bench.py: is the input {tmp}/bench.py",
       outputs=["{tmp}/bench.py"]),
    py("matrix.py", "merge", PRE, PRE, id="matrix-merge-out-is-a-round", rc=2,
       names="merge OUT {tmp}/pre.json: is the input {tmp}/pre.json", outputs=[PRE]),
    py("matrix.py", "summary", lambda t: gbench(t, "new.json", lambda d: None), "--markdown",
       lambda t: linked(t, "new.json", "m.md"), id="matrix-markdown-links-to-an-input", rc=2,
       names="--markdown {tmp}/m.md: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("fleet/fleet.py", "report", lambda t: (fleet_run(t, b'{"host": "n1", "unit": "cpu"}'),
                                              linked(t, "run/n1/cpu.status.json", "run/fleet.md"), t + "/run")[2],
       id="fleet-report-output-is-a-run-file", rc=2,
       names="output {tmp}/run/fleet.md: is the input {tmp}/run/n1/cpu.status.json",
       outputs=["{tmp}/run/n1/cpu.status.json"]),
    py("fleet/fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", PRE, "--env", PRE,
       id="fleet-merge-status-out-is-the-env", rc=2, names="--status-out {tmp}/pre.json: is the input", outputs=[PRE]),
    py("ddp_scaling.py", "--train", lambda t: bench_copy(t, "o/scaling.json"), "--out", "{tmp}/o",
       id="ddp-scaling-out-holds-the-train", rc=2, names="--out {tmp}/o/scaling.json: is the input",
       outputs=["{tmp}/o/scaling.json", "{tmp}/o/runs"]),
    # an --out that cannot be a folder
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b",
       os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--out", lambda t: write(t, "afile", b"x") + "/sub",
       id="ab-out-under-a-file", rc=2, names="--out {tmp}/afile/sub: cannot write there: Not a directory"),
    # every count and number within its range
    py("ab.py", "trials", "0", "--a", "x", "--b", "y", id="ab-trials-zero", rc=2,
       names="N 0: expected a whole number in [1, 1000]"),
    py("ab.py", "trials", "-1", "--a", "x", "--b", "y", id="ab-trials-negative", rc=2, names="N -1: expected"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--processes", "1000000000", id="ab-processes-huge", rc=2,
       names="--processes 1000000000: expected a whole number in [2, 1000]"),
    py("ab.py", "calibrate", "--bench", "x", "--floors-out", OUT, "--reps", "0", id="ab-reps-zero", rc=2,
       names="--reps 0: expected", outputs=[OUT]),
    py("ab.py", "trials", "2", "--a", "x", "--b", "y", "--min-time", "1e9", id="ab-min-time-huge", rc=2,
       names="--min-time 1000000000.0: expected a number in (0, 3600]"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--max-interference", "nan", id="ab-max-interference-nan", rc=2,
       names="--max-interference nan: expected a number in [0, 1]"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--alpha", "0", id="ab-alpha-zero", rc=2, names="--alpha 0.0"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--threshold", "-0.1", id="ab-threshold-negative", rc=2,
       names="--threshold -0.1"),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--processes", "0", id="samples-processes-zero", rc=2,
       names="--processes 0: expected a whole number in [1, 1000]", outputs=[OUT]),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--reps", "1e9", id="samples-reps-not-whole", rc=2,
       names="--reps 1e9: expected a whole number", outputs=[OUT]),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--max-interference", "2", id="samples-interference-2",
       rc=2, names="--max-interference 2.0", outputs=[OUT]),
    py("compare.py", BASE, BASE, "--threshold", "1e308", id="compare-threshold-huge", rc=2,
       names="--threshold 1e+308: expected a number in (0, 10]"),
    py("compare.py", BASE, BASE, "--alpha", "1", id="compare-alpha-one", rc=2, names="--alpha 1.0"),
    py("ddp_scaling.py", "--epochs", "1000000000", id="ddp-scaling-epochs-huge", rc=2, names="--epochs 1000000000"),
    py("ddp_scaling.py", "--run-timeout", "0", id="ddp-scaling-run-timeout-zero", rc=2, names="--run-timeout 0.0"),
    py("fleet/fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", OUT, "--device", "99999",
       id="fleet-merge-device-huge", rc=2, names="--device 99999: expected a whole number in [-1, 4095]",
       outputs=[OUT]),
    # Google Benchmark 1.8+'s skipped rows ("skipped", "skip_message", real_time 0): no failure
    py("compare.py", lambda t: gbench(t, "skipped.json", skip_first_row), BASE, id="compare-gbench-1.8-skipped-row",
       rc=0, names=""),
    py("compare.py", BASE, lambda t: gbench(t, "skipped.json", skip_first_row), id="compare-gbench-1.8-row-skips-itself",
       rc=1, names="missing from the new run: VectorAdd/cuda_v4/n:1000000/manual_time"),
    py("report.py", BASE, lambda t: gbench(t, "skipped.json", skip_first_row), "--out", "{tmp}/r",
       id="report-gbench-1.8-skipped-row", rc=0, names=""),
    # issue 33: the scripts
    # no HOME (cron, env -i): the cache comes from passwd's home; without one there either, one line naming both
    script("setup.sh", "--plan", id="setup-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("run-bench.sh", id="run-bench-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("test.sh", id="test-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("regress.sh", id="regress-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("setup.sh", "--plan", id="setup-without-any-home", rc=2,
           names="has no home in passwd: set HOME, or CUDABENCH_CACHE",
           env={"PATH": path_without_passwd_home}, unset=["HOME", "CUDABENCH_CACHE"]),
    # a TMPDIR mktemp cannot write in: one line naming it, before any work
    script("run-bench.sh", id="run-bench-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope: cannot make a temporary file",
           env={"TMPDIR": "{tmp}/nope"}),
    script("setup.sh", "--plan", id="setup-tmpdir-a-file", rc=2, names="TMPDIR={tmp}/pre.json: cannot make",
           env={"TMPDIR": PRE}),
    script("regress.sh", id="regress-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("matrix.sh", id="matrix-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("train-compare.sh", id="train-compare-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope",
           env={"TMPDIR": "{tmp}/nope"}),
    script("sanitize.sh", id="sanitize-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("vendor-deps.sh", id="vendor-deps-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope",
           env={"TMPDIR": "{tmp}/nope"}),
    fleet_sh(id="fleet-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    # no python3 on PATH: a tool missing, not the user's input (3), said in one line
    script("setup.sh", "--plan", id="setup-without-python3", rc=3, names="needs python3",
           env={"PATH": path_without_python}),
    script("run-bench.sh", id="run-bench-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    script("regress.sh", id="regress-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    script("matrix.sh", id="matrix-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    fleet_sh(id="fleet-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    # issue 33: bench and train
    bench("--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_context=host_cores=999,gpu_name=H100",
          f"--benchmark_out={OUT}", id="bench-context-key-of-ours", rc=2,
          names="host_cores is one cudabench writes", outputs=[OUT]),
    bench("--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_context=host_name=x",
          id="bench-context-key-of-google-benchmark", rc=2, names="host_name is one cudabench writes"),
    bench("--benchmark_context=a=1,a=2", id="bench-context-key-twice", rc=2, names="a is given twice"),
    bench("--benchmark_context=novalue", id="bench-context-no-equals", rc=2, names="'novalue' has no '='"),
    bench("--benchmark_context=a b=1", id="bench-context-key-with-space", rc=2, names="keys of letters"),
    bench("--benchmark_min_time=0.5y", id="bench-min-time-unit", rc=2, names="or iterations (100x"),
    bench("--benchmark_min_time=0x", id="bench-min-time-zero-iterations", rc=2, names="--benchmark_min_time=0x"),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-huge", rc=2,
          names="OMP_NUM_THREADS=40000: at most", env={"OMP_NUM_THREADS": "40000"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-huger", rc=2,
          names="OMP_NUM_THREADS=100000: at most", env={"OMP_NUM_THREADS": "100000"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-nested", rc=2,
          names="OMP_NUM_THREADS=2,400: at most", env={"OMP_NUM_THREADS": "2,400"}),
    bench("--benchmark_filter=.*.*.*.*.*.*z", "--benchmark_list_tests", id="bench-filter-backtracking", rc=2,
          names="--benchmark_filter=.*.*.*.*.*.*z matches no benchmark"),
    bench("--benchmark_filter=(.+)+z", "--benchmark_list_tests", id="bench-filter-nested-plus", rc=2,
          names="--benchmark_filter=(.+)+z matches no benchmark"),
    bench("--stall-seconds=-1", id="bench-stall-seconds-negative", rc=2, names="--stall-seconds"),
    bench("--benchmark_context=json_schema_version=7", id="bench-context-schema-version", rc=2,
          names="json_schema_version is one cudabench writes"),
    bench("--benchmark_min_time=0x10", id="bench-min-time-hexadecimal", rc=2, names="--benchmark_min_time=0x10"),
    bench("--benchmark_min_time= 0.1", id="bench-min-time-blank", rc=2, names="--benchmark_min_time= 0.1"),
    bench("--env", "--python", lambda t: (os.makedirs(t + "/venv/bin"), shutil.copy("/bin/true", t + "/venv/bin/python3"),
                                          t + "/venv")[2],
          "--env-out={tmp}/venv/pyvenv.cfg", id="bench-env-out-in-the-python-environment", rc=2,
          names="in the Python environment", outputs=["{tmp}/venv/pyvenv.cfg"]),
    bench("--stall-seconds=soon", id="bench-stall-seconds-word", rc=2, names="--stall-seconds"),
    bench("--benchmark_filter=(a", id="bench-filter-re2-error", rc=2, names="--benchmark_filter=(a: expected a regular"),
    bench("--explain", "-", id="bench-explain-stdin-unknown", rc=2, names="not a CUDA set-up error I know",
          stdin="hello\n" * 1000),
    bench("--require-gpu", "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-require-gpu-without-one", rc=3,
          names="--require-gpu: ", no_driver=True),
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
    bench(lambda t: (dataset(t + "/d"), "--benchmark_out=" + t + "/d/train-labels-idx1-ubyte")[1],
          "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-out-is-the-dataset", rc=2,
          names="that is the dataset's", env={"CUDABENCH_DATA_DIR": "{tmp}/d"}, needs_torch=True,
          outputs=["{tmp}/d/train-labels-idx1-ubyte"]),
    bench("--env", lambda t: (dataset(t + "/d"), os.link(t + "/d/t10k-labels-idx1-ubyte", t + "/hard.txt"),
                              "--env-out=" + t + "/hard.txt")[2],
          id="bench-env-out-hard-links-to-the-dataset", rc=2, names="an input", env={"CUDABENCH_DATA_DIR": "{tmp}/d"},
          needs_torch=True, outputs=["{tmp}/d/t10k-labels-idx1-ubyte"]),
    bench("--env", "--python", lambda t: (os.mkdir(t + "/bin"), shutil.copy("/bin/true", t + "/bin/python3"))[1],
          "--env-out={tmp}/bin/python3", id="bench-env-out-is-the-python", rc=2, names="that is the interpreter",
          outputs=["{tmp}/bin/python3"]),
]


def needs(path):
    return pytest.mark.skipif(not os.access(path, os.X_OK), reason=f"{path} is not built")


def expand(x, tmp):
    if callable(x):
        return x(tmp)
    return x.replace("{tmp}", tmp)


def snapshot(path):
    if os.path.isdir(path):
        return ("dir", sorted(os.listdir(path)))
    if os.path.exists(path):
        with open(path, "rb") as f:
            return ("file", f.read())
    return None


def dev_full_is_intact():
    """A tool that renamed a file over /dev/full (as root) would break it."""
    return stat.S_ISCHR(os.stat("/dev/full").st_mode)


def temporaries(top):
    return [os.path.join(d, n) for d, _, names in os.walk(top) for n in names if ".tmp." in n]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    if case.cmd[0] in (BENCH, TRAIN, TRAIN_PERTURBED) and not os.access(case.cmd[0], os.X_OK):
        pytest.skip(f"{case.cmd[0]} is not built (train needs LibTorch)")
    if case.needs_torch and not os.access(TRAIN, os.X_OK):
        pytest.skip("this build has no LibTorch (no train, no Mnist benchmarks)")
    if case.no_driver and os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("an NVIDIA driver is loaded here: the GPU families are registered")
    tmp = str(tmp_path)
    with open(os.path.join(tmp, "pre.json"), "w") as f:
        f.write('{"kept": true}\n')
    cmd = [expand(x, tmp) for x in case.cmd]
    # A launcher's variables around the suite (srun, torchrun) must not make
    # train a rank: only a case's own do.
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_NUM_TASKS")
           and not k.startswith("TORCHELASTIC_")}
    env.update({k: expand(v, tmp) for k, v in case.env.items()})
    for k in case.unset:
        env.pop(k, None)
    if env.pop("PYTHON", None):
        if subprocess.run(["/usr/bin/python3", "-c", "import scipy"], capture_output=True).returncode == 0:
            pytest.skip("this machine's /usr/bin/python3 has scipy (a GPU machine's may)")
        cmd[0] = "/usr/bin/python3"  # a python without the venv's scipy
        env.pop("VIRTUAL_ENV", None)
    outputs = [expand(o, tmp) for o in case.outputs]
    before = {o: snapshot(o) for o in outputs}
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, input=case.stdin,
                       timeout=120, cwd=tmp)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == case.rc, f"exit {r.returncode}, expected {case.rc}; stderr:\n{r.stderr}"
    if case.rc == 0:  # accepted input: nothing on stderr
        assert not lines, r.stderr
    else:
        assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{r.stderr}"
        assert expand(case.names, tmp) in lines[0], lines[0]
        assert len(lines[0]) < 400, f"a line of {len(lines[0])} characters: {lines[0][:200]}..."
    for t in TRACES:
        assert t not in r.stderr and t not in r.stdout, f"{t!r} reached the terminal:\n{r.stderr}"
    for o in outputs:
        assert snapshot(o) == before[o], f"{o} was created or changed"
    assert not temporaries(tmp), f"temporary files left: {temporaries(tmp)}"


def test_the_table_covers_every_program():
    progs = {os.path.basename(c.cmd[1] if c.cmd[0] in (PY, "bash") else c.cmd[0]) for c in CASES}
    assert {"bench", "train", "compare.py", "report.py", "fleet.sh", "fleet.py", "local-cluster.sh",
            "ddp_scaling.py"} <= progs
    assert len(CASES) >= 40


# ---- what a table cannot hold ----

@needs(BENCH)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM])
def test_bench_stopped_by_a_signal_keeps_every_finished_row(tmp_path, sig):
    """The results file is written whole after each finished benchmark: a
    stop keeps what finished, in a valid file, and no temporary."""
    out = tmp_path / "out.json"
    p = subprocess.Popen([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|65536)/",
                          "--benchmark_min_time=0.1", "--benchmark_repetitions=20",
                          f"--benchmark_out={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(sig)
    p.wait(timeout=30)
    assert p.returncode == -sig
    doc = json.loads(out.read_text())
    assert doc["benchmarks"] and doc["context"]["cudabench_env"], doc.keys()
    assert {b["run_name"] for b in doc["benchmarks"]} == {"VectorAdd/cpu_scalar/n:4096/real_time"}  # the first, whole
    assert not temporaries(str(tmp_path))


@needs(BENCH)
def test_bench_out_of_host_memory_keeps_every_finished_row(tmp_path):
    """std::bad_alloc in a later benchmark (under a 4 GB address-space limit
    at n = 2^27): exit 3, one line, and the file holds the rows before it."""
    import resource
    out = tmp_path / "out.json"
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    r = subprocess.run([BENCH, "--benchmark_filter=^VectorAdd/cpu_scalar/n:(4096|134217728)/",
                        "--benchmark_min_time=0.01", f"--benchmark_out={out}"], capture_output=True, text=True,
                       preexec_fn=limit, timeout=300)
    assert r.returncode == 3, r.stderr
    assert "out of host memory" in r.stderr.splitlines()[-1], r.stderr
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == ["VectorAdd/cpu_scalar/n:4096/real_time"], names


@needs(BENCH)
def test_a_benchmark_that_never_finishes_ends_the_run_at_its_deadline(tmp_path):
    """As a stuck GPU's kernel would: a row that makes no progress within
    --stall-seconds (here one of 1000 passes over 2^27 elements, minutes
    long) ends the run with exit 3 and one line, keeping the rows before."""
    out = tmp_path / "out.json"
    start = time.monotonic()
    r = subprocess.run([BENCH, "--benchmark_filter=^VectorAdd/cpu_scalar/n:(4096|134217728)/",
                        "--benchmark_min_time=1000x", "--stall-seconds=3", f"--benchmark_out={out}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and time.monotonic() - start < 30, r.stderr
    last = r.stderr.splitlines()[-1]
    assert last.startswith("bench: no benchmark finished in 3 s since VectorAdd/cpu_scalar/n:4096/real_time"), last
    assert "nvidia-smi -q" in last
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == ["VectorAdd/cpu_scalar/n:4096/real_time"], names
    assert not temporaries(str(tmp_path))


@needs(BENCH)
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_regular_file_under_dev_is_replaced_whole_not_appended_to(tmp_path):
    """/dev/shm holds files: only devices, pipes and descriptors' paths are streams."""
    out = f"/dev/shm/cudabench-test-{os.getpid()}.json"
    try:
        with open(out, "w") as f:
            f.write('{"old": 1}\n')
        r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|16384)/",
                            "--benchmark_min_time=0.01", f"--benchmark_out={out}"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        with open(out) as f:
            assert len(json.load(f)["benchmarks"]) == 2  # one document, not one per row after the old one
        r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--markdown", out],
                           capture_output=True, text=True, timeout=120)
        with open(out) as f:
            assert r.returncode == 0 and f.read().startswith("#"), r.stderr
    finally:
        os.unlink(out)


@needs(BENCH)
def test_a_context_value_that_is_not_utf8_reaches_stdout_replaced(tmp_path):
    r = subprocess.run([os.fsencode(BENCH), b"--benchmark_filter=VectorAdd/cpu_scalar/n:4096/",
                        b"--benchmark_min_time=0.01", b"--benchmark_format=json", b"--benchmark_context=k=v\xff\xfe"],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.decode("utf-8"))["context"]["k"] == "v\ufffd\ufffd"


@needs(BENCH)
def test_too_few_open_files_is_one_line_not_a_wrong_result():
    """Google Benchmark exits 1 (a wrong result's code) when it cannot read
    /sys for the CPU's caches: bench raises the soft limit or names it."""
    r = subprocess.run(["bash", "-c", f'ulimit -n 8 && exec "{BENCH}" --benchmark_filter=VectorAdd/cpu_scalar/n:4096/ '
                        "--benchmark_min_time=1x"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[-1].startswith("bench: the limit on open files is 8 (ulimit -n; hard limit 8)")


@needs(BENCH)
def test_a_reader_that_goes_away_leaves_the_results_file_whole(tmp_path):
    """`bench --benchmark_out=r.json | head -1`: SIGPIPE used to kill bench
    (141) before r.json was written. With a file to finish the run goes on;
    without one it ends as a pipeline expects."""
    out = tmp_path / "r.json"
    filt = shlex.quote("--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|65536)/")
    r = subprocess.run(["bash", "-c", f'set -o pipefail; "{BENCH}" {filt} --benchmark_min_time=0.01 '
                                      f'--benchmark_out="{out}" 2>/dev/null | head -c 1'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 2
    r = subprocess.run(["bash", "-c", f'set -o pipefail; "{BENCH}" {filt} --benchmark_min_time=0.01 2>/dev/null | head -c 1'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 128 + signal.SIGPIPE


@needs(BENCH)
def test_bytes_that_are_not_utf8_reach_the_json_replaced(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ)
    env_b = {k.encode(): v.encode() for k, v in env.items()}
    env_b[b"CUDA_VISIBLE_DEVICES"] = b"0\xff\xfe"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={out}"], capture_output=True, env=env_b, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["benchmarks"] and "\ufffd" in json.dumps(doc, ensure_ascii=False)
    r = subprocess.run([BENCH, "--env=json"], capture_output=True, env=env_b, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout.decode("utf-8"))["gpu_usable"] in (True, False)


@needs(TRAIN)
def test_train_writes_a_dataset_path_that_is_not_utf8(tmp_path):
    d = dataset(str(tmp_path) + "/data" + os.fsdecode(b"\xff"), train_images=idx_images(64), train_labels=idx_labels(64))
    out = tmp_path / "t.json"
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", str(out)], capture_output=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["dataset"].endswith("data\ufffd")


@needs(BENCH)
@needs(TRAIN)
def test_past_the_file_size_limit_the_write_fails_whole(tmp_path):
    """`ulimit -f 8`: SIGXFSZ used to kill bench and train (153) with a .tmp
    file left; now the write fails: exit 3, the reason, nothing left."""
    import resource
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={tmp_path / 'r.json'}"], capture_output=True, text=True, preexec_fn=limit,
                       timeout=120)
    assert r.returncode == 3 and "cannot write: File too large" in r.stderr, r.stderr
    d = dataset(str(tmp_path / "d"), train_images=idx_images(64), train_labels=idx_labels(64))
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", str(tmp_path / "t.json")],
                       capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert r.returncode == 3 and r.stderr.strip().endswith("cannot write: File too large"), r.stderr
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "t.json").exists()
    assert not temporaries(str(tmp_path))


@needs(BENCH)
@pytest.mark.parametrize("redirect,why", [("> /dev/full", "No space left on device"), (">&-", "Bad file descriptor")])
def test_standard_output_that_cannot_be_written_fails_the_run(redirect, why):
    for args in ("--env=json", "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/ --benchmark_min_time=0.01 "
                               "--benchmark_format=json"):
        r = subprocess.run(["bash", "-c", f'"{BENCH}" {args} {redirect}'], capture_output=True, text=True, timeout=120)
        assert r.returncode == 3, r.stderr
        assert r.stderr.strip().splitlines()[-1] == f"bench: standard output: cannot write: {why}", r.stderr


@needs(BENCH)
def test_a_thread_count_openmp_refuses_is_refused_too():
    """libgomp says its own word on junk before main(); bench's line, the last, names it."""
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar"], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="four"), timeout=60)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1].startswith("bench: OMP_NUM_THREADS=four: expected a count of threads"), r.stderr


@needs(BENCH)
def test_google_benchmarks_current_flag_forms_are_honoured(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=7x",
                        "--benchmark_time_unit=s", "--benchmark_context=run=a=b,team=gpu",
                        f"--benchmark_out={out}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    b = doc["benchmarks"][0]
    assert b["iterations"] == 7 and b["time_unit"] == "s", b
    assert b["name"] == "VectorAdd/cpu_scalar/n:4096/real_time", b  # the name a 1.8 library gives: rows still match
    assert doc["context"]["run"] == "a=b" and doc["context"]["team"] == "gpu"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01s",
                        f"--benchmark_out={out}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["benchmarks"][0]["iterations"] > 7


@needs(BENCH)
@pytest.mark.parametrize("flt", [".*.*.*.*.*.*z", "(.*)*z", "(.+)+z", "-(.*)*z"])
def test_a_backtracking_filter_selects_in_bounded_time(flt):
    t0 = time.monotonic()
    r = subprocess.run([BENCH, f"--benchmark_filter={flt}", "--benchmark_list_tests"], capture_output=True, text=True,
                       timeout=120)
    assert time.monotonic() - t0 < 20
    if flt.startswith("-"):  # everything but nothing: the whole list
        assert r.returncode == 0 and "VectorAdd/cpu_scalar/n:4096/real_time" in r.stdout.split()
    else:
        assert r.returncode == 2 and "matches no benchmark" in r.stderr


@needs(BENCH)
def test_explain_reads_an_endless_input_only_so_far():
    """`bench --explain - < /dev/zero` never ended: stdin is read up to 64 MiB,
    and a pipe that never ends (`journalctl -f | ...`) for 20 s."""
    t0 = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([BENCH, "--explain", "-"], stdin=zero, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "read its first 64 MiB" in r.stderr, r.stderr
    p = subprocess.Popen([BENCH, "--explain", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdin.write("Error 804: forward compatibility was attempted on non supported HW\n")
    p.stdin.flush()  # and never closed, as `journalctl -f` never ends
    try:
        p.wait(timeout=90)
        out, err = p.stdout.read(), p.stderr.read()
    finally:
        p.kill()
        p.stdin.close()
    assert p.returncode == 0 and "had not ended after 20 s" in out and "[2]" in out, err
    assert time.monotonic() - t0 < 80


@needs(BENCH)
def test_bench_on_a_full_disk_exits_3_and_says_why(tmp_path):
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        "--benchmark_out=/dev/full"], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "--benchmark_out=/dev/full: cannot write: No space left on device" in r.stderr
    r = subprocess.run([BENCH, "--env", "--env-out=/dev/full"], capture_output=True, text=True)
    assert r.returncode == 3 and r.stderr.strip() == "bench: --env-out=/dev/full: cannot write: No space left on device"
    assert dev_full_is_intact()


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
def test_training_that_makes_no_progress_ends_at_its_deadline(tmp_path):
    """An epoch of 60000 images in batches of 500 (seconds long) against
    --stall-seconds 1, as a GPU stuck in a step would: exit 3, one line, no file."""
    d = dataset(str(tmp_path / "d"), train_images=idx_images(60000), train_labels=idx_labels(60000))
    out = tmp_path / "t.json"
    r = subprocess.run([TRAIN, "--data-dir", d, "--batch-size", "500", "--stall-seconds", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines()[-1].startswith("train: no progress in 1 s (none yet): stopped"), r.stderr
    assert not out.exists() and not temporaries(str(tmp_path))


def test_a_bench_process_that_never_ends_fails_the_samples_at_its_deadline(tmp_path):
    """As a bench stuck on a GPU would: samples.py (and so ab.py and
    run-bench.sh) stops it at --process-seconds, exit 3, its log named and kept."""
    hang = tmp_path / "bench"
    hang.write_text("#!/bin/sh\necho started >&2\nexec sleep 100\n")
    hang.chmod(0o755)
    start = time.monotonic()
    r = subprocess.run([PY, os.path.join(SCRIPTS, "samples.py"), "run", "--bench", str(hang), "--out",
                        str(tmp_path / "s.json"), "--process-seconds", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and time.monotonic() - start < 20, r.stderr
    line = r.stderr.splitlines()[-1]
    assert "was still running after 1 s (--process-seconds)" in line, line
    assert os.path.isfile(line.rsplit("log: ", 1)[1]), "the log it names is gone"
    assert not (tmp_path / "s.json").exists()


def test_fleet_merge_reads_only_the_end_of_a_regular_stderr_file(tmp_path):
    """A process list naming /dev/zero or a FIFO as a process's stderr must
    not hold the merge or fill the memory: that process has no message."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plist = tmp_path / "processes.tsv"
    plist.write_text(f"1\tnone.json\t/dev/zero\n1\tnone.json\t{fifo}\n")
    r = subprocess.run([PY, os.path.join(SCRIPTS, "fleet", "fleet.py"), "merge", "--host", "h", "--unit", "cpu",
                        "--status-out", str(tmp_path / "st.json"), "--processes", str(plist)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    errors = [p["error"] for p in json.loads((tmp_path / "st.json").read_text())["processes"]]
    assert errors == ["exit 1, no message"] * 2, errors


def test_compare_markdown_on_a_full_disk_exits_3():
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--markdown", "/dev/full"],
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "/dev/full: cannot write" in r.stderr and "Traceback" not in r.stderr
    assert dev_full_is_intact()


def test_report_only_reports_a_failed_check_without_failing():
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, os.path.join(FIX, "with_error.json"),
                        "--report-only"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "error" in r.stdout and "new: " in r.stdout


def test_report_labels_three_runs_of_one_setup_apart(tmp_path):
    """Three files with the same default label: each column shows its own
    run's numbers (the last file's used to fill every column)."""
    paths = []
    for i, scale in enumerate((1.0, 2.0, 4.0)):
        def m(doc, scale=scale):
            for b in doc["benchmarks"]:
                if "real_time" in b:
                    b["real_time"] *= scale
        paths.append(gbench(str(tmp_path), f"run{i}.json", m))
    out = tmp_path / "r"
    r = subprocess.run([PY, os.path.join(SCRIPTS, "report.py"), *paths, "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    header = next(x for x in md.splitlines() if x.startswith("| benchmark |") and "baseline" in x)
    assert "(run0.json) (baseline)" in header and "(run1.json)" in header and "(run2.json)" in header
    row = next(x for x in md.splitlines() if x.startswith("| VectorAdd/cuda_v4/n:1000000/manual_time |"))
    assert "+100.0%" in row and "+300.0%" in row, row


@needs(TRAIN)
def test_train_that_diverges_is_a_wrong_result_and_saves_nothing(tmp_path):
    out = tmp_path / "t.json"  # Fashion-MNIST (setup.sh installs it): 10 batches at lr 1e5 diverge
    r = subprocess.run([TRAIN, "--epochs", "1", "--lr", "1e5", "--limit", "640", "--test-limit", "100", "--quiet",
                        "--json", str(out)], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "CUDABENCH_DATA_DIR"})
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().startswith("train: epoch 1: the loss is not a finite number")
    assert not out.exists() and not temporaries(str(tmp_path))


@needs(BENCH)
def test_bench_writes_through_symlinks_and_keeps_them(tmp_path):
    """A link to results/.../latest.json stays a link; the file it names gets
    the new results (a dangling link's target is made)."""
    target = tmp_path / "results" / "latest.json"
    target.parent.mkdir()
    target.write_text("old\n")
    (tmp_path / "link.json").symlink_to(target)
    (tmp_path / "chain.json").symlink_to(tmp_path / "link.json")
    (tmp_path / "dangling.txt").symlink_to("results/env.txt")
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={tmp_path / 'chain.json'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "chain.json").is_symlink()
    assert json.loads(target.read_text())["benchmarks"]
    r = subprocess.run([BENCH, "--env", f"--env-out={tmp_path / 'dangling.txt'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dangling.txt").is_symlink() and "CUDA" in (tmp_path / "results" / "env.txt").read_text()
    assert not temporaries(str(tmp_path))


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


@needs(BENCH)
def test_output_names_up_to_255_characters_are_written(tmp_path):
    for n in (246, 255):
        out = tmp_path / ("r" * (n - 5) + ".json")
        r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                            f"--benchmark_out={out}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(out.read_text())["benchmarks"]
    assert not temporaries(str(tmp_path))


@needs(BENCH)
def test_explain_reads_the_whole_of_a_long_log():
    """`journalctl -k | bench --explain -`: the error on the last line of 1.1 MB."""
    log = "kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n" * 17000
    log += "RuntimeError: CUDA error: Error 804: forward compatibility was attempted on non supported HW\n"
    assert len(log) > 1_100_000
    r = subprocess.run([BENCH, "--explain", "-"], input=log, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr  # recognised (whether a cause shows here is in the text); never 2
    assert "Forward-compatibility libraries" in r.stdout, r.stdout


def test_regress_refuses_a_second_run_in_one_checkout_naming_the_first():
    """Two regress.sh runs in one checkout: the second exits 2 at once and
    says who holds it (it used to wipe the first's processes)."""
    import fcntl
    out = os.path.join(ROOT, "build", "regress")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.seek(0)
        held.truncate()
        held.write("pid 4242, started today")
        held.flush()
        # Its own session: were the lock ever broken, a timeout stops the whole gate it would start.
        p = subprocess.Popen(["bash", os.path.join(SCRIPTS, "regress.sh")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    assert p.returncode == 2, err
    assert err.strip().startswith("regress: another run holds build/regress in this checkout (pid 4242"), err


def test_regress_labels_a_revision_against_itself_apart():
    """regress.sh --base HEAD used to fail with `ab: --labels '9f03808,9f03808'`."""
    def labels(a, b):
        return subprocess.run(["bash", "-c", f". {SCRIPTS}/lib.sh && ab_labels {a} {b}"], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert labels("9f03808", "9f03808") == "9f03808 (A),9f03808 (B)"
    assert labels("9f03808", "1a2b3c4") == "9f03808,1a2b3c4"
    assert 'labels="$(ab_labels' in open(os.path.join(SCRIPTS, "regress.sh")).read()


def test_a_signal_to_a_script_stops_its_jobs_whole_group(tmp_path):
    """lib.sh's run_job and stop_jobs_on_signal, which regress.sh, matrix.sh
    and the other scripts run their long children through: SIGTERM to the
    script ends it at once, and every process of its job's group (a child's
    child too) is gone; nothing is written after."""
    late, pgid_file = tmp_path / "written-late", tmp_path / "pgid"
    script = tmp_path / "s.sh"
    script.write_text(f"""set -euo pipefail
. {SCRIPTS}/lib.sh
stop_jobs_on_signal
run_job bash -c 'ps -o pgid= $$ > {pgid_file}; sleep 30 & sleep 30; echo late > {late}'
""")
    p = subprocess.Popen(["bash", str(script)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not (pgid_file.exists() and pgid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pgid = int(pgid_file.read_text())
    assert pgid != os.getpgid(p.pid)  # the job has a group of its own
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    assert p.returncode == -signal.SIGTERM and time.monotonic() - t0 < 5
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # no process of the job's group is left
    assert not late.exists()

@needs(BENCH)
def test_dev_stdout_as_a_pipe_is_written_in_place():
    """/dev/stdout leads to pipe:[N], which no path resolution follows: it is
    written in place (`bench --benchmark_out=/dev/stdout | jq`)."""
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        "--benchmark_out=/dev/stdout", "--benchmark_format=csv"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"benchmarks"' in r.stdout
    r = subprocess.run([BENCH, "--env=json", "--env-out=/dev/stdout"], capture_output=True, text=True)
    assert r.returncode == 0 and "gpu_usable" in json.loads(r.stdout), r.stderr
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--report-only", "--markdown",
                        "/dev/stdout"], capture_output=True, text=True)
    assert r.returncode == 0 and "### Benchmarks" in r.stdout, r.stderr


# ---- issue 33: the helpers of the table's last rows, and the Python tools' faults no table can hold ----

FAKE = os.path.join(ROOT, "tests", "fakes", "fake_gbench.py")


def linked(tmp, target, link, hard=False):
    """tmp/link made a symbolic (or a hard) link to tmp/target; its path."""
    path = os.path.join(tmp, link)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    (os.link if hard else os.symlink)(os.path.join(tmp, target), path)
    return path


def bench_copy(tmp, name="bench.py"):
    """An executable copy of the fake bench at tmp/name; its path."""
    path = os.path.join(tmp, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy(FAKE, path)
    os.chmod(path, 0o755)
    return path


def history(tmp, folder):
    """A report.py --history folder: two per-commit results, c1 and c2."""
    os.makedirs(os.path.join(tmp, folder))
    for i, c in enumerate(("c1", "c2")):
        gbench(tmp, f"{folder}/{c}.json", lambda d: d.update(cudabench_history={"commit": c, "time": i}))
    return os.path.join(tmp, folder)


def skip_first_row(doc):
    """The first benchmark as Google Benchmark 1.8+ writes one that called
    SkipWithMessage: "skipped", "skip_message", zero times, no aggregate."""
    name = doc["benchmarks"][0]["name"]
    doc["benchmarks"] = [dict(b, skipped=True, skip_message="needs 2 GPUs", iterations=0, real_time=0, cpu_time=0)
                         if b["name"] == name else b for b in doc["benchmarks"] if b["name"] != name + "_median"]


@contextlib.contextmanager
def tmpfs(path, size, read_only=False):
    """A file system of `size` mounted at path, for a full or read-only disk
    (root only: the test is skipped where it cannot mount)."""
    os.makedirs(path, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    if not shutil.which("mount") or subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)],
                                                   capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (it needs root)")
    try:
        yield str(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


def ab(*args, timeout=120):
    return subprocess.run([PY, os.path.join(SCRIPTS, "ab.py"), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_fleet_report_in_a_read_only_run_folder_is_exit_2_before_any_work(tmp_path):
    with tmpfs(tmp_path / "fs", "1m") as fs:
        run = fleet_run(fs, b'{"host": "n1", "unit": "cpu"}')
        subprocess.run(["mount", "-o", "remount,ro", fs], check=True, timeout=60)
        r = subprocess.run([PY, os.path.join(SCRIPTS, "fleet", "fleet.py"), "report", run], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"fleet: output {run}/fleet.json: cannot write: Read-only file system"


def test_ab_out_on_a_read_only_file_system_is_exit_2(tmp_path):
    with tmpfs(tmp_path / "fs", "1m", read_only=True) as fs:
        r = ab("run", "--a", FAKE, "--b", FAKE, "--processes", "2", "--out", f"{fs}/ab")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"ab: --out {fs}/ab: cannot write there: Read-only file system"


def test_ab_on_a_full_disk_names_it_before_and_during_the_run(tmp_path):
    with tmpfs(tmp_path / "small", "64k") as fs:  # full before the first process
        r = ab("run", "--a", FAKE, "--b", FAKE, "--processes", "2", "--max-interference", "1", "--out", f"{fs}/ab")
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().startswith(f"ab: no space left on device in {fs}/ab/processes ("), r.stderr
    # B fills the disk and fails writing its result: its message is lost
    # with its log (bench on a full disk: exit 3, one line nobody can read).
    b = write(str(tmp_path), "b.sh", b'#!/bin/sh\nfor a; do case $a in --benchmark_out=*) o="${a#*=}";; esac; done\n'
                                     b'head -c 4000000 /dev/zero > "$(dirname "$o")/filler" 2>/dev/null\n'
                                     b'echo "bench: cannot write: No space left on device" >&2\nexit 3\n')
    os.chmod(b, 0o755)
    with tmpfs(tmp_path / "fs", "2m") as fs:
        r = ab("run", "--a", FAKE, "--b", b, "--processes", "2", "--max-interference", "1", "--out", f"{fs}/ab")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 3 and len(lines) == 1, r.stderr
    assert f"process 0 of B ({b}) failed without a result (exit 3): no space left on device in {fs}/ab/processes" \
        in lines[0] and "so its log is empty" in lines[0], lines[0]
