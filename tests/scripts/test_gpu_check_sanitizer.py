"""The GPU check's sanitizer steps (memcheck, sanitize in
scripts/gpu-check-steps.sh) against a fake compute-sanitizer, without a GPU:
a tool must catch its canary (an error planted in SanitizerCanary.*) before
its runs count. One that refuses the device ("Device not supported",
whatever its exit code) or misses its canary skips the step with the
reason; never ok, never WRONG. Once the canary is caught, a finding is a
wrong result. The fake does not run the programs it is given, so the build
folder is empty.
"""
import os
import subprocess
import sys

import pytest

from conftest import ROOT


STEPS = os.path.join(ROOT, "scripts", "gpu-check-steps.sh")
CANARY = {"memcheck": "SanitizerCanary.DISABLED_OutOfBoundsWrite", "sanitize": "SanitizerCanary.DISABLED_UninitialisedRead"}
TOOL = {"memcheck": "memcheck", "sanitize": "initcheck"}  # the step's first tool
RACECHECK_CANARY = "SanitizerCanary.DISABLED_SharedMemoryRace"


def fake_sanitizer(tmp_path, canary, runs, refuse=False):
    """A compute-sanitizer that exits `canary` on a canary and `runs` on the
    other programs, in the real one's format (results/archive/gpu-check/nvidia-h200/
    sanitizer.txt): a finding (86) reports one error. Each call's arguments
    go to calls.txt."""
    script = tmp_path / "compute-sanitizer"
    script.write_text(f"""#!/bin/sh
echo "$*" >> "{tmp_path}/calls.txt"
case "$*" in *--version*) echo "NVIDIA (R) Compute Sanitizer"; exit 0 ;; esac
case "$*" in *SanitizerCanary.*) rc={canary} ;; *) rc={runs} ;; esac
echo "========= COMPUTE-SANITIZER"
{'echo "========= Device not supported"' if refuse else ''}
if [ "$rc" = 86 ]; then
  echo "========= Invalid __global__ write of size 4 bytes"
  echo "========= ERROR SUMMARY: 1 error"
elif [ "$rc" = 255 ]; then
  echo "========= Error: Target application terminated before first instrumented API call"
else
  echo "========= ERROR SUMMARY: 0 errors"
fi
exit "$rc"
""")
    script.chmod(0o755)
    return script


def step(tmp_path, name, sanitizer):
    """scripts/gpu-check-steps.sh NAME on a GPU machine (GC_DRY_RUN=0) whose
    preflight found `sanitizer`: (exit code, its output, sanitizer.txt, the calls)."""
    res = tmp_path / "res"
    res.mkdir(exist_ok=True)
    (res / "preflight.env").write_text(f"SANITIZER={sanitizer}\nGPU_COUNT=1\n")
    (tmp_path / "build").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDABENCH_TEST_GPU", "GC_"))}
    env.update(CUDABENCH_ROOT=ROOT, GC_RES=str(res), GC_BUILD=str(tmp_path / "build"), GC_DRY_RUN="0", GC_QUICK="0")
    r = subprocess.run(["bash", STEPS, name], capture_output=True, text=True, timeout=60, env=env)
    print(r.stdout, r.stderr, file=sys.stderr)
    calls = (tmp_path / "calls.txt").read_text().splitlines() if (tmp_path / "calls.txt").exists() else []
    return r.returncode, r.stdout, (res / "sanitizer.txt").read_text(), [c for c in calls if "--version" not in c]


def summary(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu_summary.py"), str(tmp_path / "res")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def skipped_line(out):
    return [l for l in out.splitlines() if l.startswith("skipped: ")][-1]


@pytest.mark.parametrize("name", ["memcheck", "sanitize"])
@pytest.mark.parametrize("code", [0, 86, 255])
def test_a_sanitizer_that_refuses_the_device_skips_the_step_whatever_its_exit_code(tmp_path, name, code):
    rc, out, _, calls = step(tmp_path, name, fake_sanitizer(tmp_path, code, code, refuse=True))
    assert rc == 4, out
    assert skipped_line(out) == (f"skipped: compute-sanitizer {TOOL[name]} does not work here: "
                                 f"Device not supported (exit {code} on its canary)")
    assert len(calls) == 1 and CANARY[name] in calls[0], calls  # nothing after the canary
    assert "the tool does not work here (device not supported)" in summary(tmp_path)


@pytest.mark.parametrize("name", ["memcheck", "sanitize"])
def test_a_sanitizer_that_misses_its_canary_skips_the_step(tmp_path, name):
    rc, out, _, calls = step(tmp_path, name, fake_sanitizer(tmp_path, 0, 0))
    assert rc == 4, out
    line = skipped_line(out)
    assert line.startswith(f"skipped: compute-sanitizer {TOOL[name]} does not work here: it missed the canary's ")
    assert line.endswith("(exit 0)")
    assert len(calls) == 1
    assert "missed (0 errors): the tool proves nothing here" in summary(tmp_path)


def test_a_canary_that_cannot_run_skips_the_step(tmp_path):
    rc, out, _, _ = step(tmp_path, "memcheck", fake_sanitizer(tmp_path, 255, 0))
    assert rc == 4, out
    assert skipped_line(out).endswith("does not work here: its canary ended with exit 255, not a finding (sanitizer.txt)")


@pytest.mark.parametrize("name", ["memcheck", "sanitize"])
def test_a_sanitizer_that_catches_its_canary_and_finds_nothing_else_passes(tmp_path, name):
    rc, out, text, calls = step(tmp_path, name, fake_sanitizer(tmp_path, 86, 0))
    assert rc == 0, out
    # The canary first, alone, disabled tests included; then the real runs.
    assert f"--gtest_also_run_disabled_tests --gtest_filter={CANARY[name]}" in calls[0]
    # sanitize proves both its tools before either counts: initcheck's canary, racecheck's, then their runs.
    tools = [TOOL[name]] * 3 if name == "memcheck" else ["initcheck", "racecheck", "initcheck", "racecheck"]
    assert len(calls) == len(tools), calls
    for c, tool in zip(calls, tools):
        assert c.startswith(f"--tool {tool} --error-exitcode 86 ") and "--target-processes application-only" in c
    assert f"== {TOOL[name]}: canary {CANARY[name]}" in text
    s = summary(tmp_path)
    assert f"  {TOOL[name]}: canary {CANARY[name]}" in s and "(exit 86): caught (1 errors)" in s
    assert f"  {TOOL[name]}: test_vector_add_gpu (exit 0): 0 errors" in s
    if name == "sanitize":  # cuda_v8 stages its tiles in shared memory: racecheck, proven first, on the kernels
        assert f"--gtest_filter={RACECHECK_CANARY}" in calls[1] and "GpuVectorAdd" in calls[3]
        assert f"  racecheck: canary {RACECHECK_CANARY}" in s and "  racecheck: the kernel tests (exit 0): 0 errors" in s


def test_a_finding_stands_when_a_later_run_refuses_the_device(tmp_path):
    """initcheck finds an error; racecheck's run then says "Device not supported": a wrong result, not a skip."""
    script = fake_sanitizer(tmp_path, 86, 86)
    text = script.read_text().replace('case "$*" in *SanitizerCanary.*) rc=86 ;; *) rc=86 ;; esac',
                                      'case "$*" in *SanitizerCanary.*) rc=86 ;; *racecheck*) rc=0; refuse=1 ;; '
                                      '*) rc=86 ;; esac')
    text = text.replace('echo "========= COMPUTE-SANITIZER"',
                        'echo "========= COMPUTE-SANITIZER"\n[ -z "${refuse:-}" ] || echo "========= Device not supported"')
    script.write_text(text)
    rc, out, _, calls = step(tmp_path, "sanitize", script)
    assert len(calls) == 4 and "racecheck" in calls[3], calls
    assert rc == 1, out


@pytest.mark.parametrize("name", ["memcheck", "sanitize"])
@pytest.mark.parametrize("code, want", [(86, 1), (1, 1), (255, 3)])
def test_once_the_canary_is_caught_a_finding_is_wrong_and_a_run_that_breaks_is_not(tmp_path, name, code, want):
    # 86: the sanitizer's finding; 1: the program's own wrong result; 255:
    # the sanitizer lost the program (the first GPU run's bench).
    rc, out, _, _ = step(tmp_path, name, fake_sanitizer(tmp_path, 86, code))
    assert rc == want, out
    assert "skipped: " not in out
