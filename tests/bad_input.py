"""The bad-input tables' machinery (tests/*/test_*_bad_input.py): a Case,
its constructors, the inputs cases make in their own folder, and
run_case, which holds a case to the exit-code contract
(docs/contributing.md):
  - its exit code (2 for bad input or usage; 3 for a failure that is not
    the input's; 1 only for a wrong result);
  - exactly one line on stderr, naming the input;
  - no Python traceback and no C++/c10 backtrace;
  - that no output file was created or changed, and no temporary file left.
CUDABENCH_BUILD_DIR names the build to test (default: build/).
"""
import contextlib
import json
import os
import shutil
import stat
import struct
import subprocess
from dataclasses import dataclass, field

import pytest

from conftest import BENCH, BUILD, PY, ROOT, SCRIPTS, TRAIN


TRAIN_PERTURBED = os.path.join(BUILD, "train_perturbed")  # train with a test's fault (tests/train/train_perturbed.cpp)


FIX = os.path.join(ROOT, "tests", "fixtures", "compare")


BASE = os.path.join(FIX, "base.json")
BASE_RUN = os.path.join(FIX, "base_processes.json")  # the same rows, each repetition a process (what --add-machine takes)


TRACES = ("Traceback", "Exception raised from", "frame #", "terminate called", "Aborted", "what():")


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


def rows_twice(doc):
    """Every row written twice (a file concatenated with itself): the same samples."""
    doc["benchmarks"] = [b for b in doc["benchmarks"] for _ in range(2)]


def first_again(real_time):
    """The first row again with another time: one repetition, two numbers."""
    def m(doc):
        doc["benchmarks"].insert(1, dict(doc["benchmarks"][0], real_time=real_time))
    return m


def write(tmp, name, data):
    p = os.path.join(tmp, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


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


def self_link(tmp, name="refs"):
    """tmp/name, a symbolic link to itself."""
    os.symlink(name, os.path.join(tmp, name))
    return os.path.join(tmp, name)


def future_reference(tmp):
    """A reference folder whose reference for base.json's hardware is of a format to come (99)."""
    from cudabench.results.context import hardware_of
    with open(BASE) as f:
        doc = json.load(f)
    doc["cudabench_reference"] = {"hardware": hardware_of(doc["context"]), "format": 99, "machines": []}
    os.makedirs(os.path.join(tmp, "refs", hardware_of(doc["context"])))
    with open(os.path.join(tmp, "refs", hardware_of(doc["context"]), "reference.json"), "w") as f:
        json.dump(doc, f)
    return os.path.join(tmp, "refs")


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


def program_copy(program, name, parts=()):
    """A case's first word: a copy of `program` at tmp/name, run from there
    (an output given that path is the running program), with copies of the
    `parts` beside it (paths relative to its folder in the build)."""
    def make(tmp):
        if not os.access(program, os.X_OK):
            pytest.skip(f"{program} is not built")
        shutil.copy(program, os.path.join(tmp, name))
        for part in parts:
            os.makedirs(os.path.dirname(os.path.join(tmp, part)), exist_ok=True)
            shutil.copy(os.path.join(os.path.dirname(program), part), os.path.join(tmp, part))
        return os.path.join(tmp, name)
    make.program = program  # what the table's coverage test counts
    return make


def hard_linked(tmp, target, name):
    """tmp/name made a hard link to `target` (anywhere); skipped where the
    file system cannot (another device)."""
    path = os.path.join(tmp, name)
    try:
        os.link(target, path)
    except OSError as e:
        pytest.skip(f"cannot hard-link {target} here: {e.strerror}")
    return path


def preloaded_copy(tmp, library="libm.so.6"):
    """A copy of a system library at tmp/library, for LD_PRELOAD: a library
    the program has loaded, whose path an output must never take."""
    shutil.copy(os.path.join("/lib/x86_64-linux-gnu", library), os.path.join(tmp, library))
    return os.path.join(tmp, library)


def history(tmp, folder):
    """A machine folder of the gate's history (history.py page): two per-commit results, c1 and c2."""
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


def run_case(case, tmp_path):
    """Run one case as a user would and hold it to the contract above."""
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
