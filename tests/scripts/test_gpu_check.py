"""scripts/gpu-check.sh's step machinery, rehearsed here with --dry-run (the
GPU steps are reported skipped) against this build: exit codes, a step that
fails or overruns its limit, a preflight or a configure that stops the run
before the build, a step whose tools are absent, the plan and its
estimates against the budget (a step that cannot finish in the time left
is skipped, not started), the snapshot written after each step, old
results moved aside.
Faults come from CUDABENCH_TEST_GPU_CHECK_FAULT=STEP:hang|fail. The real
(not dry) preflight meets fake drivers: a libcuda whose cuInit fails with
802, an nvidia-smi that never answers.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import BUILD, ROOT


SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")
STEPS = ["preflight", "build", "tests", "memcheck", "sanitize", "env", "headline", "bench", "train", "train-py",
         "mnist", "ddp", "flush-ab"]
GPU_STEPS = {"memcheck", "env", "headline", "bench", "flush-ab", "train", "train-py", "mnist", "ddp", "sanitize"}
SANITIZER_STEPS = {"memcheck", "sanitize"}


def planned():
    """{step: (estimate, cap)} from STEPS in the planner."""
    text = open(os.path.join(ROOT, "scripts", "cudabench", "commands", "gpu_check.py")).read()
    table = re.search(r'^STEPS = """\n(.*?)^"""', text, flags=re.M | re.S)[1]
    return {name: (int(est), int(cap)) for name, est, cap, _ in (row.split() for row in table.splitlines())}

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
    # The driver checked once, after the build, for every step (lib.sh).
    assert r.stderr.count("the driver checked once for every step") == 1, r.stderr
    for name in STEPS:
        want = ("skipped", "dry run: no GPU") if name in GPU_STEPS else ("ok", "")
        if name in SANITIZER_STEPS and s[name][1].startswith("needs sanitizer: "):
            want = (want[0], s[name][1])  # this machine has no compute-sanitizer: said first
        assert s[name] == want, name
    assert "MISSING" not in (res / "logs" / "preflight.log").read_text()
    # The old files moved aside, and nothing of them summarised.
    assert not (res / "train_cuda.json").exists()
    assert (tmp_path / "res.previous" / "train_cuda.json").exists()
    text = (res / "summary.txt").read_text()
    assert "Status: exit 4 (a step was skipped)" in text
    # The plan against the budget: the estimates fit, with a reserve.
    total = sum(est for est, _ in planned().values())
    assert total + 20 < 540
    assert (f"  Plan: estimates sum to {total} s of the 540 s budget ({540 - total} s reserve: 20 s kept for the end, "
            f"{520 - total} s for steps slower than estimated)") in text
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


def test_a_measuring_step_beside_other_load_is_loaded_exit_5_not_failed(tmp_path):
    """samples.py's exit 5: the rows were checked but ran beside other load.
    The step is "loaded", the run exits 5 (worse than a skip, better than a
    failure), and the summary says so."""
    r, _ = gpu_check(tmp_path, CUDABENCH_TEST_GPU_CHECK_FAULT="tests:loaded")
    assert r.returncode == 5, r.stderr
    assert steps(tmp_path)["tests"] == ("loaded", "checked, but its rows ran beside other load: not a measurement")
    assert "Status: exit 5 (a step's rows ran beside other load)" in summary(tmp_path)


def test_a_step_past_its_limit_is_stopped_and_the_rest_are_skipped(tmp_path):
    # A step that fits by its estimate can still hang. 35 s: 20 kept for the
    # end, so the preflight (estimated 5 s, 11 with its margin) gets 15.
    assert planned()["preflight"][0] * 5 // 4 + 5 <= 13
    r, took = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_BUDGET="35", CUDABENCH_TEST_GPU_CHECK_FAULT="preflight:hang")
    assert r.returncode == 3, r.stderr
    assert took < 43
    s = steps(tmp_path)
    # Whole seconds: the start may fall just before one ticks over.
    assert s["preflight"] in (("timed-out", "stopped at its 15 s limit"), ("timed-out", "stopped at its 14 s limit"))
    assert all(s[n] == ("skipped", "not run: preflight did not pass") for n in STEPS[1:])
    # The summary lists them too, each with why.
    text = summary(tmp_path)
    assert "Status: exit 3" in text and "not-reached" not in text
    for name in STEPS[1:]:
        assert f"  {name:<10s} skipped      0 s  not run: preflight did not pass" in text, name


def test_a_step_that_does_not_fit_the_budget_is_skipped(tmp_path):
    est = planned()["build"][0]
    r, _ = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_BUDGET="40")
    assert r.returncode == 4, r.stderr
    result, detail = steps(tmp_path)["build"]
    assert result == "skipped" and detail.startswith(f"needs ~{est * 5 // 4 + 5} s ({est} s estimated + 25% + 5 s),")
    assert "of the 40 s budget left (20 s kept for the end)" in detail
    assert not (tmp_path / "res" / "logs" / "build.log").exists()


def test_a_step_that_fits_by_its_estimate_but_not_its_margin_is_skipped_not_cut_off(tmp_path):
    # The last run's tests took 100 s, so they need 130 with the margin; a
    # 150 s budget leaves them 130 s less what the preflight and the build
    # took: more than 100, less than 130. Started, they would be cut off.
    res = tmp_path / "res"
    res.mkdir()
    (res / "plan.txt").write_text("# dry run 1, quick 0\n")
    (res / "steps.txt").write_text("tests      ok         100 s\n")
    r, _ = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_BUDGET="150")
    assert r.returncode == 4, r.stderr
    s = steps(tmp_path)
    assert s["preflight"][0] == "ok" and s["build"][0] == "ok"
    m = re.fullmatch(r"needs ~130 s \(100 s estimated \+ 25% \+ 5 s\), (\d+) s of the 150 s budget left "
                     r"\(20 s kept for the end\)", s["tests"][1])
    assert s["tests"][0] == "skipped" and m, s["tests"]
    assert 100 <= int(m[1]) < 130, "the preflight and the build took over 30 s: the old rule would skip it too"
    assert not (res / "logs" / "tests.log").exists()  # never started


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
        assert "  build      ok" in text and "  tests      not-reached" in text and "  ddp        not-reached" in text
        assert processes_of(tmp_path)  # the hanging step
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == -signal.SIGTERM
    assert steps(tmp_path)["tests"] == ("stopped", "by SIGTERM")
    text = summary(tmp_path)
    assert "  tests      stopped" in text and "  sanitize   not-reached" in text
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


def test_a_python_without_torch_builds_what_it_can_and_skips_the_torch_steps(tmp_path):
    r, _ = gpu_check(tmp_path, CUDABENCH_GPU_CHECK_PYTHON="/usr/bin/python3")
    assert r.returncode == 4, r.stderr
    s = steps(tmp_path)
    assert s["preflight"][0] == "ok" and s["build"][0] == "ok" and s["tests"][0] == "ok"
    for name in ("train", "mnist", "ddp"):
        assert s[name] == ("skipped", "needs torch: /usr/bin/python3 has no torch module"), name
    assert "absent   torch: /usr/bin/python3 has no torch module" in (tmp_path / "res" / "logs" / "preflight.log").read_text()


def test_a_run_plans_with_the_last_runs_times(tmp_path):
    r, _ = gpu_check(tmp_path)
    assert r.returncode == 4, r.stderr
    took = {name: int(line.split()[2]) for line in (tmp_path / "res" / "steps.txt").read_text().splitlines()
            for name in [line.split()[0]]}
    r, _ = gpu_check(tmp_path)
    assert r.returncode == 4, r.stderr
    plan = {l.split()[0]: l.split(None, 4) for l in (tmp_path / "res" / "plan.txt").read_text().splitlines()
            if not l.startswith("#")}
    assert list(plan) == STEPS
    for name in ("preflight", "build"):  # they passed: their time, and whence
        assert int(plan[name][1]) == took[name], plan[name]
        assert plan[name][4] == f"last run: {took[name]} s"
    # Skipped last time: STEPS'.
    assert tuple(map(int, plan["headline"][1:3])) == planned()["headline"] and plan["headline"][4] == "STEPS"
    assert "[estimate " in summary(tmp_path)


# The real preflight on this machine, whose driver is a fake: nvidia-smi a
# script in `bin`, libcuda the tests' fake describing `machine`.
def real_run(tmp_path, nvidia_smi, machine=None, **env):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\n" + nvidia_smi)
    (bin_dir / "nvidia-smi").chmod(0o755)
    extra = {"PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    if machine is not None:
        (tmp_path / "machine.json").write_text(machine)
        fakes = os.path.join(BUILD, "fakes")
        extra.update(CUDABENCH_FAKE_GPU=str(tmp_path / "machine.json"),
                     LD_LIBRARY_PATH=f"{fakes}/cuda:{fakes}/nvml:{os.environ.get('LD_LIBRARY_PATH', '')}")
    start = time.monotonic()
    r = subprocess.run(["bash", SCRIPT, "--build-dir", str(tmp_path / "build"), "--results", str(tmp_path / "res"),
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=environment(**extra))
    return r, time.monotonic() - start


CSV = ("index, name, pci.bus_id, driver_version, memory.total [MiB], compute_cap, mig.mode.current, clocks.current.sm "
       "[MHz], clocks.current.memory [MHz], clocks.max.sm [MHz], power.limit [W], persistence_mode\n"
       "0, NVIDIA H200, 00000000:19:00.0, 580.95.05, 143771 MiB, 9.0, Disabled, 345 MHz, 3201 MHz, 1980 MHz, "
       "700.00 W, Enabled\n")


def test_a_driver_that_fails_cuinit_stops_the_run_before_the_build_in_the_doctors_words(tmp_path):
    smi = f"case \"$*\" in *query-gpu*) printf '%s' '{CSV}' ;; *) echo 'GPU 00000000:19:00.0' ;; esac\n"
    r, took = real_run(tmp_path, smi, '{"driver": {"cuda_version": 13000, "init_result": 802}, "gpus": []}')
    assert r.returncode == 3, r.stderr
    assert took < 60
    s = steps(tmp_path)
    assert s["preflight"][0] == "failed" and s["build"] == ("skipped", "not run: preflight did not pass")
    assert not (tmp_path / "res" / "configure.log").exists() and not (tmp_path / "build").exists()
    log = (tmp_path / "res" / "logs" / "preflight.log").read_text()
    assert "ok       nvidia-smi: 0, NVIDIA H200" in log
    missing = [l for l in log.splitlines() if l.startswith("MISSING")]
    assert len(missing) == 1, log
    assert "cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)" in missing[0]
    assert "fabric manager is not running" in missing[0] and "systemctl enable --now nvidia-fabricmanager" in missing[0]
    assert "| MISSING  a working driver: cuInit failed" in summary(tmp_path)


def test_an_nvidia_smi_that_never_answers_ends_the_run_within_its_deadline(tmp_path):
    r, took = real_run(tmp_path, "exec sleep 3600\n", CUDABENCH_PROBE_SECONDS="2")
    assert r.returncode == 3, r.stderr
    assert took < 30
    log = (tmp_path / "res" / "logs" / "preflight.log").read_text()
    assert "MISSING  a working driver: nvidia-smi did not answer in 2 s" in log
    # The machine's name falls back to the CPU's, within the same deadline.
    start = time.monotonic()
    env = environment(PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", CUDABENCH_PROBE_SECONDS="2")
    env.pop("CUDABENCH_MACHINE", None)
    label = subprocess.run(["bash", "-c", f". {ROOT}/scripts/lib.sh; machine_label"], capture_output=True, text=True,
                           timeout=60, env=env)
    assert label.returncode == 0 and label.stdout.startswith("cpu-"), label
    assert time.monotonic() - start < 10


@pytest.mark.parametrize("step", ["headline", "bench"])
@pytest.mark.parametrize("gpus", [1, 4])
def test_the_rows_a_measuring_step_expects_are_the_rows_its_filter_selects(tmp_path, step, gpus):
    # With several GPUs (the preflight counted them), a row is expected on each.
    (tmp_path / "preflight.env").write_text(f"GPU_COUNT={gpus}\n")
    steps_env = environment(CUDABENCH_ROOT=ROOT, GC_RES=str(tmp_path), GC_BUILD=BUILD, GC_DRY_RUN="0", GC_QUICK="0")
    steps_env.pop("CUDA_VISIBLE_DEVICES", None)
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu-check-steps.sh"), "rows", step], env=steps_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    selected, *patterns = r.stdout.splitlines()
    # Four fake H200s: bench lists every row the step would run on them.
    fakes = os.path.join(BUILD, "fakes")
    listed = subprocess.run([os.path.join(BUILD, "bench"), "--devices", "all", "--benchmark_list_tests",
                             f"--benchmark_filter={selected}"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, LD_LIBRARY_PATH=f"{fakes}/cuda:{fakes}/nvml",
                                     CUDABENCH_FAKE_GPU=os.path.join(ROOT, "tests", "fixtures", "gpus", "h200x4.json")))
    names = [l for l in listed.stdout.splitlines() if l.count("/") >= 2]
    if not names:
        pytest.skip("bench lists no GPU rows on the fake GPU (a build without CUDA)")
    assert not [p for p in patterns if not any(re.match(p, n) for n in names)], "expected, never run"
    assert not [n for n in names if not any(re.match(p, n) for p in patterns)], "run, never expected"
    assert all(p.endswith("/dev:3/") for p in patterns[3::4]) if gpus == 4 else "/dev:" not in "".join(patterns)


def test_ncclh_is_found_beside_the_nccl_of_a_wheel_a_conda_env_or_a_container(tmp_path):
    def nccl_include(torch_dir, *system):
        r = subprocess.run(["cmake", f"-DTORCH_DIR={torch_dir}", f"-DSYSTEM_PREFIXES={';'.join(map(str, system))}",
                            "-P", os.path.join(ROOT, "cmake", "NcclHeader.cmake")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stderr.strip()

    def touch(path, text=""):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    header = "#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n"
    torch = "torch/share/cmake/Torch"
    wheel = tmp_path / "venv/lib/python3.12/site-packages"
    touch(wheel / "nvidia/nccl/include/nccl.h", header)
    assert nccl_include(wheel / torch) == str(wheel / "nvidia/nccl/include")
    conda = tmp_path / "conda/envs/x"
    touch(conda / "include/nccl.h", header)
    touch(conda / "lib/libnccl.so.2.21.5")
    assert nccl_include(conda / "lib/python3.11/site-packages" / torch) == str(conda / "include")
    # An NGC-style container: torch under /usr/local, NCCL from libnccl-dev.
    usr = tmp_path / "usr"
    touch(usr / "include/nccl.h", header)
    container_torch = usr / "local/lib/python3.10/dist-packages" / torch
    assert nccl_include(container_torch, usr) == ""  # no library of its version beside it
    touch(usr / "lib/x86_64-linux-gnu/libnccl.so.2.19.3")
    assert nccl_include(container_torch, usr) == ""  # another NCCL's: not this header's
    touch(usr / "lib/x86_64-linux-gnu/libnccl.so.2.21.5")
    assert nccl_include(container_torch, usr) == str(usr / "include")


def test_a_driver_too_old_for_the_toolkit_stops_the_run_before_the_build(tmp_path):
    smi = f"case \"$*\" in *query-gpu*) printf '%s' '{CSV}' ;; *) echo 'GPU 00000000:19:00.0' ;; esac\n"
    r, _ = real_run(tmp_path, smi, '{"driver": {"cuda_version": 12020}, "gpus": [{"name": "NVIDIA H200"}]}')
    assert r.returncode == 3, r.stderr
    log = (tmp_path / "res" / "logs" / "preflight.log").read_text()
    missing = [l for l in log.splitlines() if l.startswith("MISSING")]
    assert len(missing) == 1 and "the driver runs CUDA 12.2 (cuDriverGetVersion 12020), the toolkit builds for CUDA" \
        in missing[0], log


def test_a_measuring_step_stopped_at_its_limit_keeps_its_finished_processes(tmp_path):
    """As gpu-check.sh runs a step (timeout -k 15 CAP): the headline's
    samples.py is a job of the step, so the limit's TERM is passed on and
    waited for, and the step's file holds the process that finished, marked
    partial, before the step has ended (and the snapshot is taken)."""
    build, res = tmp_path / "build", tmp_path / "res"
    build.mkdir()
    res.mkdir()
    # A bench of two rows whatever the step's filter asks.
    (build / "bench").write_text(f'#!/bin/bash\nexec {sys.executable} {ROOT}/tests/fakes/fake_gbench.py '
                                 '"${@/--benchmark_filter=*/--benchmark_filter=.}"\n')
    (build / "bench").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDABENCH_TEST_GPU", "GC_"))}
    env.update(CUDABENCH_ROOT=ROOT, GC_RES=str(res), GC_BUILD=str(build), GC_DRY_RUN="0", GC_QUICK="0",
               FAKE_GBENCH_SLEEP="60", FAKE_GBENCH_SLEEP_FROM="1", FAKE_GBENCH_LOG=str(tmp_path / "log"),
               FAKE_GBENCH_PGID=str(tmp_path / "pgid"))
    r = subprocess.run(["timeout", "-k", "15", "8", "bash", os.path.join(ROOT, "scripts", "gpu-check-steps.sh"),
                        "headline"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 124, r.stdout + r.stderr
    doc = json.loads((res / "vector_add_headline.json").read_text())
    assert doc["cudabench_samples"]["partial"] == {"processes": 1, "planned": 2, "stopped_by": "SIGTERM"}
    assert "partial: 1 of 2 processes ran before SIGTERM" in (res / "vector_add_headline.txt").read_text()
