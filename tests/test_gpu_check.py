"""scripts/gpu-check.sh's step machinery, rehearsed here with --dry-run (the
GPU steps are reported skipped) against this build: exit codes, a step that
fails or overruns its limit, a preflight or a configure that stops the run
before the build, the snapshot written after each step, old results moved
aside. Faults come from CUDABENCH_TEST_GPU_CHECK_FAULT=STEP:hang|fail.
"""
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")
BUILD = os.environ.get("CUDABENCH_BUILD_DIR") or os.path.join(ROOT, "build")
STEPS = ["preflight", "build", "env", "bench", "train", "mnist", "flush-ab", "ddp", "tests", "sanitize"]
GPU_STEPS = {"env", "bench", "train", "mnist", "flush-ab", "ddp", "sanitize"}

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(BUILD, "CMakeCache.txt")),
                                reason=f"{BUILD} is not a configured build")


def command(tmp_path, *extra):
    return ["bash", SCRIPT, "--dry-run", "--build-dir", BUILD, "--results", str(tmp_path / "res"), *extra,
            str(tmp_path / "out")]


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDABENCH_GPU_CHECK", "CUDABENCH_TEST_GPU"))}
    env.pop("CUDACXX", None)
    return dict(env, **extra)


def gpu_check(tmp_path, *extra, timeout=240, **env):
    start = time.monotonic()
    r = subprocess.run(command(tmp_path, *extra), capture_output=True, text=True, timeout=timeout,
                       env=environment(**env))
    return r, time.monotonic() - start


def steps(tmp_path):
    """{step: (result, detail)} from the results folder's steps.txt (the logs
    of the steps go to stderr, for a failing test's report)."""
    logs = tmp_path / "res" / "logs"
    for log in sorted(logs.glob("*.log")) if logs.is_dir() else []:
        print(f"== {log.name}\n{log.read_text(errors='replace')[-2000:]}", file=sys.stderr)
    out = {}
    for line in (tmp_path / "res" / "steps.txt").read_text().splitlines():
        name, result, _, _, *detail = line.split()
        out[name] = (result, " ".join(detail))
    return out


def summary(tmp_path):
    return (tmp_path / "out" / "summary.txt").read_text()


def test_a_dry_run_starts_clean_skips_the_gpu_steps_and_says_so_with_exit_4(tmp_path):
    # Last run's results, summary and tarball in the results folder, which is
    # also the output folder here (no OUT_DIR, no $OUT).
    res = tmp_path / "res"
    res.mkdir()
    (res / "train_cuda.json").write_text('{"per_epoch": [{"seconds": 0.1, "images_per_second": 1}],'
                                         ' "final_test_accuracy": 0.9}')
    (res / "summary.txt").write_text("last run's summary\n")
    env = environment()
    env.pop("OUT", None)
    r = subprocess.run(command(tmp_path)[:-1], capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 4, r.stderr
    s = steps(tmp_path)
    assert list(s) == STEPS
    for name in STEPS:
        want = ("skipped", "dry run: no GPU") if name in GPU_STEPS else ("ok", "")
        assert s[name] == want, name
    assert "MISSING" not in (res / "logs" / "preflight.log").read_text()
    # The old files moved aside, and nothing of them summarised.
    assert not (res / "train_cuda.json").exists()
    assert (tmp_path / "res.previous" / "train_cuda.json").exists()
    text = (res / "summary.txt").read_text()
    assert "Status: exit 4 (a step was skipped)" in text
    assert "last run's summary" not in text and "train_cuda" not in text
    assert [l for l in text.splitlines() if "epochs, batch 64, eager" in l][0].lstrip().startswith("-")
    # The tarball holds what the summary was made from, and never itself.
    with tarfile.open(res / "gpu-check.tar.gz") as t:
        names = t.getnames()
        assert "res/steps.txt" in names and "res/ctest.log" in names
        assert not [n for n in names if "gpu-check.tar.gz" in n or "summary.txt" in n], names
        assert t.extractfile("res/steps.txt").read().decode().count("\n") == len(STEPS)


def test_a_failed_step_is_exit_3_with_its_code_and_log_in_the_summary(tmp_path):
    r, _ = gpu_check(tmp_path, CUDABENCH_TEST_GPU_CHECK_FAULT="tests:fail")
    assert r.returncode == 3, r.stderr
    assert steps(tmp_path)["tests"] == ("failed", "exit 7")
    text = summary(tmp_path)
    assert "Status: exit 3" in text and "| injected: fails" in text
    assert "| injected: fails" in r.stderr


def test_a_step_past_its_limit_is_stopped_and_the_rest_are_skipped(tmp_path):
    r, took = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_BUDGET="6", CUDABENCH_TEST_GPU_CHECK_FAULT="preflight:hang")
    assert r.returncode == 3, r.stderr
    assert took < 30
    s = steps(tmp_path)
    assert s["preflight"] == ("timed-out", "stopped at its 6 s limit")
    assert all(s[n] == ("skipped", "not run: preflight did not pass") for n in STEPS[1:])
    assert "Status: exit 3" in summary(tmp_path)


def test_a_step_that_does_not_fit_the_budget_is_skipped(tmp_path):
    r, _ = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_BUDGET="100")
    assert r.returncode == 4, r.stderr
    result, detail = steps(tmp_path)["build"]
    assert result == "skipped" and detail.startswith("needs ~200 s,") and "of the 100 s budget left" in detail


def test_a_missing_tool_stops_the_run_before_the_build_with_exit_3(tmp_path):
    r, _ = gpu_check(tmp_path, CUDACXX="/nonexistent/nvcc")
    assert r.returncode == 3, r.stderr
    assert "MISSING  nvcc: CUDACXX=/nonexistent/nvcc is not an executable" in r.stderr
    assert steps(tmp_path)["build"] == ("skipped", "not run: preflight did not pass")
    assert not (tmp_path / "res" / "configure.log").exists()
    assert "| MISSING  nvcc: CUDACXX=/nonexistent/nvcc" in summary(tmp_path)


def test_a_build_without_cuda_stops_after_configuring_with_exit_3(tmp_path):
    build = tmp_path / "build"
    r = subprocess.run(["bash", SCRIPT, "--dry-run", "--build-dir", str(build), "--results", str(tmp_path / "res"),
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                       env=environment(CUDABENCH_GPU_CHECK_CMAKE_ARGS="-DCUDABENCH_ENABLE_CUDA=OFF"))
    assert r.returncode == 3, r.stderr
    assert steps(tmp_path)["build"] == ("failed", "exit 3")
    assert "the build has no CUDA: -- cudabench: CUDA OFF" in (tmp_path / "res" / "logs" / "build.log").read_text()
    assert not (build / "bench").exists() and not (tmp_path / "res" / "build.log").exists()


def test_the_snapshot_follows_each_step_and_a_signal_stops_the_running_one(tmp_path):
    p = subprocess.Popen(command(tmp_path), env=environment(CUDABENCH_TEST_GPU_CHECK_FAULT="tests:hang"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        hang = tmp_path / "res" / "logs" / "tests.log"
        # The hanging step has started (the snapshot after ddp, the step
        # before it, is made by then; processes of that snapshot would not do).
        while time.monotonic() < deadline and not (hang.exists() and "injected: hangs" in hang.read_text()):
            time.sleep(0.2)
        text = summary(tmp_path)
        assert "  build      ok" in text and "  ddp " in text and "  tests " not in text
        assert processes_of(tmp_path)  # the hanging step
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == -signal.SIGTERM
    assert steps(tmp_path)["tests"] == ("stopped", "by SIGTERM")
    assert "  tests      stopped" in summary(tmp_path)
    # Nothing of the step's group is left (the sleep of the injected hang).
    time.sleep(0.5)
    assert not processes_of(tmp_path)


def processes_of(tmp_path):
    """The pids of processes that run for this results folder (GC_RES in their environment)."""
    mark = f"GC_RES={tmp_path / 'res'}".encode()
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_a_tree_without_git_records_the_revision_vendor_deps_wrote(tmp_path):
    def revision(source, deps):
        r = subprocess.run(["cmake", f"-DSOURCE_DIR={source}", f"-DDEPS_DIR={deps}", "-P",
                            os.path.join(ROOT, "cmake", "Revision.cmake")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stderr.strip()

    deps = tmp_path / ".deps"
    deps.mkdir()
    assert revision(tmp_path, deps) == "unknown"
    (deps / "REVISION").write_text("abc1234-dirty\n")
    assert revision(tmp_path, deps) == "abc1234-dirty"
    # With .git, git's answer wins.
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if git.returncode == 0:
        assert revision(ROOT, deps) == git.stdout.strip()
