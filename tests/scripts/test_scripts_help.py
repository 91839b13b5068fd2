"""The scripts beyond the bad-input tables (tests/*/test_*_bad_input.py):

  - every script's -h and --help prints its usage and does nothing else:
    each script under scripts/ and scripts/fleet/ (found by globbing, so a
    new one is covered), run in place with installers, builders and probes
    on PATH that leave a mark and fail, and with HOME, CUDABENCH_CACHE and
    TMPDIR in empty folders: exit 0, the usage on stdout, nothing on
    stderr, nothing called, nothing written;
  - a probe of another program ends within its deadline even when the
    program hangs, ignores TERM, or leaves a child holding its output
    (lib.sh's probe: machine_label's nvidia-smi, toolkit_label's bench
    --env; driver_probe.run_bounded, which stacks.py's probes use);
  - one configure and build of a folder at a time (lib.sh's
    hold_build_lock): a second run waits, saying for whom, or gives up in
    one line at its deadline;
  - setup.sh --plan past a libcuda that hangs or crashes (the tests' fake,
    tests/fakes): the plan goes on without the GPU and says why in its one
    line.
"""
import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import FAKES, ROOT, SCRIPTS


from cudabench.sampling import driver as driver_probe
from cudabench.commands import stacks

# What --help must never run: installers, builders, probes, Slurm, python.
FORBIDDEN = ("apt-get", "apt", "dpkg-query", "sudo", "pip", "pip3", "cmake", "ctest", "ninja", "make", "ccache",
             "nvcc", "nvidia-smi", "git", "sbatch", "srun", "scontrol", "sinfo", "python", "python3")


def scripts():
    """Every shell script, and every Python entry point (scripts/tool.py and each command's shortcut)."""
    found = sorted(glob.glob(os.path.join(SCRIPTS, "*.sh")) + glob.glob(os.path.join(SCRIPTS, "fleet", "*.sh")))
    found += sorted(glob.glob(os.path.join(SCRIPTS, "*.py")))
    assert len(found) > 25
    return found


def tree(top):
    """Every file and folder under top, with its size and modification time."""
    out = {}
    for folder, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(folder, n)
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_size, st.st_mtime_ns)
    return out


def repo_state():
    """What a script could have written in the checkout, path by path: the
    untracked and ignored entries git sees (build/ aside: other tests write
    there, and the fake cmake and ninja catch a build), and what results/
    and .deps/ hold."""
    try:  # a tree that travelled without .git (or git) has results/ and .deps/ to look at
        git = subprocess.run(["git", "--no-optional-locks", "-C", ROOT, "status", "--porcelain", "--ignored"],
                             capture_output=True, text=True, timeout=60).stdout
    except OSError:
        git = ""
    state = {l[3:]: "new" for l in git.splitlines() if l[:2] in ("??", "!!") and not l[3:].startswith("build/")}
    for top in ("results", ".deps"):
        state.update({f"{top}/{p}": v for p, v in tree(os.path.join(ROOT, top)).items()})
    return state


def changes(before, after):
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


@pytest.fixture
def sandbox(tmp_path):
    """(env, marks): HOME, CUDABENCH_CACHE and TMPDIR in empty folders, and
    PATH led by fakes of FORBIDDEN that leave a mark in `marks` and fail."""
    fakes, marks = tmp_path / "fakes", tmp_path / "marks"
    for d in ("home", "cache", "tmp", "fakes", "marks"):
        (tmp_path / d).mkdir()
    for name in FORBIDDEN:
        (fakes / name).write_text(f'#!/bin/sh\necho "FAKE {name} CALLED: $*" >&2\ntouch "{marks}/{name}"\nexit 97\n')
        (fakes / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDABENCH_")}
    env.update(HOME=str(tmp_path / "home"), CUDABENCH_CACHE=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"),
               PATH=f"{fakes}:{os.environ['PATH']}", PYTHONDONTWRITEBYTECODE="1")
    return env, marks


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("path", scripts(), ids=lambda p: os.path.relpath(p, SCRIPTS))
def test_help_prints_the_usage_and_does_nothing_else(sandbox, tmp_path, path, flag):
    env, marks = sandbox
    cmd = ["bash", path, flag] if path.endswith(".sh") else [sys.executable, path, flag]
    before = repo_state()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert r.returncode == 0, f"exit {r.returncode}; stderr:\n{r.stderr}"
    assert r.stderr == ""
    name = os.path.basename(path).rsplit(".", 1)[0]
    assert name in r.stdout or "usage" in r.stdout.lower(), r.stdout
    assert not os.listdir(marks), f"--help called {os.listdir(marks)}"
    for d in ("home", "cache", "tmp"):
        assert not os.listdir(tmp_path / d), f"--help wrote into {d}: {os.listdir(tmp_path / d)}"
    assert not changes(before, repo_state()), "--help wrote into the checkout"


@pytest.mark.parametrize("stdout", ["/dev/full", "closed"])
@pytest.mark.parametrize("path", scripts(), ids=lambda p: os.path.relpath(p, SCRIPTS))
def test_help_that_cannot_be_written_is_exit_3(sandbox, path, stdout):
    env, _ = sandbox
    cmd = ["bash", path, "--help"] if path.endswith(".sh") else [sys.executable, path, "--help"]
    out = subprocess.DEVNULL if stdout == "closed" else open(stdout, "w")
    with out if stdout != "closed" else contextlib.nullcontext():
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=60, cwd=ROOT,
                           preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None)
    assert r.returncode == 3, f"exit {r.returncode}; stderr:\n{r.stderr}"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "standard output: cannot write" in lines[0], r.stderr


# ---- probes within their deadline ----

# Fake programs that do not end by themselves. Each writes the pids of its
# children to $PIDS, so that the test ends any that a probe leaves.
HANGING = {
    "sleeps": "exec sleep 60",
    "ignores-term": "trap '' TERM\nsleep 60 & echo $! >> \"$PIDS\"\nwait",
    "child-holds-stdout": "sleep 60 & echo $! >> \"$PIDS\"\nexit 0",
    "child-holds-stdout-and-is-waited-for": "sleep 60 & echo $! >> \"$PIDS\"\nwait",
    "child-in-its-own-session": "setsid sleep 60 & echo $! >> \"$PIDS\"\nexit 0",
}


def fake_program(tmp_path, name, body):
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    (d / name).write_text(f"#!/bin/sh\n{body}\n")
    (d / name).chmod(0o755)
    return d


def end_children(pids_file):
    if pids_file.exists():
        for pid in pids_file.read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def lib(call, tmp_path, **env):
    """`. lib.sh; call` with the fakes first on PATH; (result, seconds)."""
    full = {k: v for k, v in os.environ.items() if k != "CUDABENCH_MACHINE"}
    full.update(PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", CUDABENCH_PROBE_SECONDS="2",
                PIDS=str(tmp_path / "pids"), **env)
    start = time.monotonic()
    try:
        r = subprocess.run(["bash", "-c", f". {SCRIPTS}/lib.sh; {call}"], capture_output=True, text=True,
                           timeout=60, env=full, start_new_session=True)
    finally:
        end_children(tmp_path / "pids")
    return r, time.monotonic() - start


@pytest.mark.parametrize("kind", HANGING)
def test_machine_label_gives_the_cpus_name_when_nvidia_smi_hangs(tmp_path, kind):
    fake_program(tmp_path, "nvidia-smi", HANGING[kind])
    r, took = lib("machine_label", tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("cpu-"), r
    assert took < 8, f"{took:.1f} s"


def test_machine_label_reads_the_gpus_name_from_an_nvidia_smi_that_leaves_a_child(tmp_path):
    fake_program(tmp_path, "nvidia-smi", 'sleep 60 & echo $! >> "$PIDS"\necho "NVIDIA H200"')
    r, took = lib("machine_label", tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "nvidia-h200\n", "")
    assert took < 8


def test_toolkit_label_reads_a_bench_that_leaves_a_child(tmp_path):
    d = fake_program(tmp_path, "bench", 'sleep 60 & echo $! >> "$PIDS"\necho \'{"cuda_toolkit_version": "13.0.88"}\'')
    r, took = lib(f"toolkit_label {d}", tmp_path)
    assert (r.returncode, r.stdout) == (0, "cuda-13.0.88\n"), r
    assert took < 8


def test_probe_says_which_way_a_program_ended(tmp_path):
    fake_program(tmp_path, "stuck", "exec sleep 60")
    fake_program(tmp_path, "stubborn", HANGING["ignores-term"])
    r, took = lib("probe 1 stuck; echo $?; probe 1 stubborn; echo $?; probe 1 no-such-program; echo $?; "
                  "probe 5 sh -c 'echo out; echo err >&2; exit 4'; echo $?", tmp_path)
    assert r.stdout.split() == ["124", "137", "127", "out", "4"] and r.stderr == "err\n", r
    assert took < 10


@pytest.mark.parametrize("trap", ["", "trap 'echo own trap; exit 143' TERM; "])
def test_a_signal_to_the_script_stops_its_probe_at_once(tmp_path, trap):
    fake_program(tmp_path, "stuck", 'echo $$ >> "$PIDS"; exec sleep 60')
    env = {k: v for k, v in os.environ.items() if k != "CUDABENCH_MACHINE"}
    env.update(PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", PIDS=str(tmp_path / "pids"))
    p = subprocess.Popen(["bash", "-c", f". {SCRIPTS}/lib.sh; {trap}x=$(probe 60 stuck); echo after"],
                         stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        for _ in range(100):
            if (tmp_path / "pids").exists():
                break
            time.sleep(0.05)
        stuck = int((tmp_path / "pids").read_text())
        os.killpg(p.pid, signal.SIGTERM)  # the script's group, as a terminal or a scheduler does
        out, _ = p.communicate(timeout=5)
        assert p.returncode == (143 if trap else -signal.SIGTERM) and out == ("own trap\n" if trap else ""), out
        time.sleep(0.2)
        state = open(f"/proc/{stuck}/stat").read().split()[2] if os.path.exists(f"/proc/{stuck}") else "gone"
        assert state in ("gone", "Z"), f"the probed program outlived the script ({state})"
    finally:
        end_children(tmp_path / "pids")


def test_run_bounded_ends_within_its_deadline_whatever_the_program_leaves(tmp_path):
    pids = tmp_path / "pids"
    try:
        start = time.monotonic()
        assert driver_probe.run_bounded(["sh", "-c", f"sleep 60 & echo $! >> {pids}; echo hi"], 30) == (0, "hi\n", "")
        rc, _, _ = driver_probe.run_bounded(["sh", "-c", f"sleep 60 & echo $! >> {pids}; kill -SEGV $$"], 30)
        assert rc == -signal.SIGSEGV
        assert driver_probe.run_bounded(["sh", "-c", "trap '' TERM; sleep 60"], 1)[0] is None
        assert time.monotonic() - start < 10
    finally:
        end_children(pids)


@pytest.mark.parametrize("in_run_tool", [False, True])
def test_a_signal_to_a_python_tool_stops_its_bounded_probe(tmp_path, in_run_tool):
    pids = tmp_path / "pids"
    call = f"driver_probe.run_bounded(['sh', '-c', 'echo $$ >> {pids}; exec sleep 60'], 60)"
    if in_run_tool:  # as cli.run_tool runs a tool: the signal is an exception, exit 128 + 15
        call = f"sys.exit(cli.run_tool('t', lambda: {call}))"
    p = subprocess.Popen([sys.executable, "-c", f"import sys; from cudabench.base import cli; "
                          f"from cudabench.sampling import driver as driver_probe; {call}"], stderr=subprocess.PIPE, text=True,
                         cwd=SCRIPTS)
    try:
        for _ in range(100):
            if pids.exists() and pids.read_text().strip():
                break
            time.sleep(0.05)
        stuck = int(pids.read_text())
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=5)
        assert p.returncode == (128 + signal.SIGTERM if in_run_tool else -signal.SIGTERM), err
        assert "Traceback" not in err
        time.sleep(0.2)
        state = open(f"/proc/{stuck}/stat").read().split()[2] if os.path.exists(f"/proc/{stuck}") else "gone"
        assert state in ("gone", "Z"), f"the probed program outlived the tool ({state})"
    finally:
        end_children(pids)


def test_nvcc_version_reads_an_nvcc_that_leaves_a_child(tmp_path):
    d = fake_program(tmp_path, "nvcc", f'sleep 60 & echo $! >> {tmp_path / "pids"}\n'
                                      "echo 'Cuda compilation tools, release 13.0, V13.0.88'")
    try:
        start = time.monotonic()
        assert stacks.nvcc_version(str(d / "nvcc")) == "13.0.88"
        assert time.monotonic() - start < 10
    finally:
        end_children(tmp_path / "pids")


# ---- setup.sh --plan past a libcuda that hangs or crashes ----

@pytest.mark.parametrize("key,fault,said", [
    ("init_fault", "hang", "hung in cuInit for 2 s"),
    ("init_fault", "crash", "crashed in cuInit (SIGSEGV)"),
    ("version_fault", "hang", "hung in cuDriverGetVersion for 2 s"),
    ("version_fault", "crash", "crashed in cuDriverGetVersion (SIGSEGV)"),
    ("load_fault", "hang", "hung in dlopen libcuda.so.1 for 2 s"),
    ("load_fault", "crash", "crashed in dlopen libcuda.so.1 (SIGSEGV)"),
])
def test_setup_plans_without_a_libcuda_that_hangs_or_crashes(tmp_path, key, fault, said):
    lib_path = os.path.join(FAKES, "cuda", "libcuda.so.1")
    if not os.path.exists(lib_path):
        pytest.skip(f"the fake libcuda is not built in {FAKES}")
    with open(lib_path, "rb") as f:
        if key.encode() not in f.read():
            pytest.skip(f"this build's fake libcuda has no {key} (rebuild the tests)")
    (tmp_path / "machine.json").write_text(json.dumps({"driver": {key: fault}}))
    nvcc = fake_program(tmp_path, "nvcc", "echo 'Cuda compilation tools, release 13.0, V13.0.88'") / "nvcc"
    env = {k: v for k, v in os.environ.items() if k not in ("Torch_DIR", "CUDABENCH_TORCH", "CUDABENCH_NO_TORCH",
                                                             "CUDABENCH_VENV", "CUDABENCH_STACK")}
    env.update(CUDABENCH_FAKE_GPU=str(tmp_path / "machine.json"), CUDABENCH_CACHE=str(tmp_path / "cache"),
               CUDACXX=str(nvcc), CUDABENCH_NVCC_SEARCH="", PATH="/usr/bin:/bin", CUDABENCH_PROBE_SECONDS="2",
               LD_LIBRARY_PATH=f"{FAKES}/cuda:{FAKES}/nvml")
    start = time.monotonic()
    r = subprocess.run(["bash", os.path.join(SCRIPTS, "setup.sh"), "--plan"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert time.monotonic() - start < 15
    assert r.returncode == 0, r.stderr
    line, = r.stderr.splitlines()
    assert line.startswith(f"setup: libcuda {said}: a stuck GPU"), line
    assert "so the GPU is counted out; no NVIDIA driver: the newest, LibTorch" in line
    assert "stack: cuda13.0-torch" in r.stdout


def test_a_second_build_of_one_folder_waits_for_the_first_and_says_so(tmp_path):
    """Two run-bench.sh in one checkout configured build/ over each other
    and both failed: the second now waits for the first's lock."""
    import fcntl
    d = tmp_path / "build"
    d.mkdir()
    with open(d / ".build.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.Popen(["bash", "-c", f". {SCRIPTS}/lib.sh; hold_build_lock {d} && echo got; exec 8>&-"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert p.poll() is None, "it went on while the first build held the folder"
    out, err = p.communicate(timeout=30)  # the first let go
    assert (p.returncode, out) == (0, "got\n") and err.startswith(f"build: waiting for another build or run of {d}"), err
    # It names the holder from /proc (this test), not the lock file's last writer, which may have ended.
    assert f"(held by pid {os.getpid()} (" in err, err


def test_a_build_lock_held_past_its_deadline_is_one_line_and_status_3(tmp_path):
    import fcntl
    d = tmp_path / "build"
    d.mkdir()
    with open(d / ".build.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        r = subprocess.run(["bash", "-c", f". {SCRIPTS}/lib.sh; hold_build_lock {d} && echo got"],
                           capture_output=True, text=True, timeout=30, env=dict(os.environ, CUDABENCH_BUILD_LOCK_SECONDS="1"))
    lines = r.stderr.splitlines()
    assert (r.returncode, r.stdout, len(lines)) == (3, "", 2), r
    assert "another build still held it after 1 s" in lines[1]


def test_the_build_locks_wait_names_the_script_that_holds_it_not_a_waiter_or_flock(tmp_path):
    """As run-bench.sh holds it: a script takes the lock with the flock
    program (which ends at once) and keeps it shared; another script waits.
    A third is told who holds it: the first script, by its pid."""
    d = tmp_path / "build"
    lib = f". {SCRIPTS}/lib.sh"
    holder = subprocess.Popen(["bash", "-c", f"{lib}; hold_build_lock {d} && flock -s 8 && echo held && sleep 30"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    waiter = None
    try:
        assert holder.stdout.readline() == "held\n"
        waiter = subprocess.Popen(["bash", "-c", f"{lib}; hold_build_lock {d}"], stderr=subprocess.DEVNULL,
                                  start_new_session=True, env=dict(os.environ, CUDABENCH_BUILD_LOCK_SECONDS="20"))
        time.sleep(0.5)
        r = subprocess.run(["bash", "-c", f"{lib}; hold_build_lock {d}"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, CUDABENCH_BUILD_LOCK_SECONDS="1"))
    finally:
        for p in (holder, waiter):
            if p:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    first = r.stderr.splitlines()[0]
    assert f"(held by pid {holder.pid} (bash -c {lib}; " in first, first  # (and its sleep, which inherited it)
    assert f"pid {waiter.pid} " not in first and "(gone)" not in first, first
