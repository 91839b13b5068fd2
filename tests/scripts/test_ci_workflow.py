"""The CI job to copy (scripts/ci/benchmarks.yml): it passes actionlint
(installed by set-up's test requirements, a wheel that carries the binary),
runs the gate and not the test suite, holds the least privilege, keeps one
history writer at a time, and never force-pushes."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

WORKFLOW = os.path.join(ROOT, "scripts", "ci", "benchmarks.yml")
CONFIG = os.path.join(ROOT, "scripts", "ci", "actionlint.yaml")


def actionlint():
    here = os.path.join(os.path.dirname(sys.executable), "actionlint")
    found = here if os.access(here, os.X_OK) else shutil.which("actionlint")
    if not found:
        if os.environ.get("CUDABENCH_REQUIRE_TEST_TOOLS") == "1":
            pytest.fail("actionlint is missing: scripts/setup.sh --tests installs it (scripts/requirements-test.txt)")
        pytest.skip("no actionlint here (scripts/setup.sh --tests installs it)")
    return found


def test_the_workflow_passes_actionlint():
    r = subprocess.run([actionlint(), "-config-file", CONFIG, WORKFLOW], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def jobs(text):
    """{job: its text} of the workflow's jobs."""
    body = text.split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([a-z-]+):\n", body, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_workflow_gates_with_least_privilege_and_appends_its_history():
    text = open(WORKFLOW).read()
    top = text.split("\njobs:\n", 1)[0]
    assert re.search(r"^permissions:\n  contents: read$", top, re.M), top
    j = jobs(text)
    assert set(j) == {"gate", "history"}
    assert "contents: read" in j["gate"] and "write" not in j["gate"]
    assert "scripts/regress.sh" in j["gate"] and "scripts/test.sh" not in text
    assert "git merge-base" in j["gate"] and "fetch-depth: 0" in j["gate"]
    # Only the history job may write, only contents, one writer at a time, and never with force.
    assert re.search(r"permissions:\n\s+contents: write", j["history"]) and "group: bench-history" in j["history"]
    assert "refs/heads/main" in j["history"] and "scripts/history.py push" in j["history"]
    assert not re.search(r"push\s+(-f|--force)|\+bench-history", text)
    # The runner's needs are written down where the user copies from.
    for need in ("sudo", "disk", "/usr/local/cuda"):
        assert need in top, need
