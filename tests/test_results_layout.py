"""results/: what the tools read is tracked, what runs write is not, so that
a default run never changes the checkout (`git status --short` stays
empty after scripts/run-bench.sh). results/README.md tells which is which."""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

# Where each script writes by default (one file of each), and what reads it.
WRITTEN = [
    "results/cpu-some-model-2c/cuda-13.0.88/latest.json",  # run-bench.sh
    "results/cpu-some-model-2c/cuda-13.0.88/latest.json.lock",
    "results/matrix/cpu-some-model-2c/cpu/cuda13.0-torch2.11.0.json",  # matrix.sh
    "results/gpu-check/nvidia-h200/summary.txt",  # gpu-check.sh
    "results/gpu-check/nvidia-h200.previous/summary.txt",
    "results/fleet/run-1/node1/cpu.json",  # fleet.sh
    "results/ab-calibration/cpu-some-model-2c/aa/trials.json",  # ab-calibration.sh
    "results/ddp-scaling/scaling.json",  # ddp_scaling.py
    "build/regress/a.json",  # regress.sh
    "scripts/cudabench/__pycache__/x.pyc",
]
READ = ["results/README.md", "results/reference", "results/baselines", "results/archive"]


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, timeout=60)


pytestmark = pytest.mark.skipif(not shutil.which("git") or git("rev-parse", "--git-dir").returncode != 0,
                                reason="not a git checkout")


def test_what_runs_write_is_ignored():
    r = git("check-ignore", *WRITTEN)
    ignored = set(r.stdout.split())
    assert ignored == set(WRITTEN), f"a default output git would show: {sorted(set(WRITTEN) - ignored)}"


def test_what_tools_read_and_what_is_kept_is_tracked():
    for path in READ:
        assert os.path.exists(os.path.join(ROOT, path)), path
        tracked = git("ls-files", path).stdout.split()
        assert tracked, f"{path} is not tracked"
        assert git("check-ignore", *tracked).stdout == "", f"tracked files under {path} would be ignored"
    top = {p.split("/")[1] for p in git("ls-files", "results").stdout.split()}
    assert top == {"README.md", "reference", "baselines", "archive"}, \
        f"results/ holds only the inputs and the archive, not {sorted(top)}"
