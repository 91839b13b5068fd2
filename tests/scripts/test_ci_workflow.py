"""The action (action.yml) and the three workflows to copy (scripts/ci/:
code.yml, stack.yml, machine.yml) pass actionlint and zizmor (both
installed by set-up's test requirements, wheels that carry their binary),
and keep their inputs out of scripts. What they do when they run is
tests/scripts/test_action.py's."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

WORKFLOWS = sorted(glob.glob(os.path.join(ROOT, "scripts", "ci", "*.yml")))
ACTION = os.path.join(ROOT, "action.yml")
CONFIG = os.path.join(ROOT, "scripts", "ci", "actionlint.yaml")


def tool(name):
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.access(here, os.X_OK) else shutil.which(name)
    if not found:
        if os.environ.get("CUDABENCH_REQUIRE_TEST_TOOLS") == "1":
            pytest.fail(f"{name} is missing: scripts/setup.sh --tests installs it (scripts/requirements-test.txt)")
        pytest.skip(f"no {name} here (scripts/setup.sh --tests installs it)")
    return found


def test_the_three_workflows_are_there():
    assert [os.path.basename(w) for w in WORKFLOWS] == ["code.yml", "machine.yml", "stack.yml"]


def test_the_workflows_pass_actionlint():
    r = subprocess.run([tool("actionlint"), "-config-file", CONFIG, *WORKFLOWS], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_action_and_the_workflows_pass_zizmor():
    # Offline: no audit that needs GitHub's API. The default persona finds
    # nothing at any severity; the auditor persona's only findings at medium
    # are the self-hosted runners themselves, which a GPU runner is.
    zz = tool("zizmor")
    r = subprocess.run([zz, "--offline", "--no-progress", ACTION, *WORKFLOWS], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "No findings" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([zz, "--offline", "--no-progress", "--persona", "auditor", "--min-severity", "medium",
                        "--format", "plain", ACTION, *WORKFLOWS], capture_output=True, text=True, timeout=120)
    audits = set(re.findall(r"^\w+\[([a-z-]+)\]", r.stdout, re.M))
    assert audits <= {"self-hosted-runner"}, r.stdout


def test_no_input_reaches_a_script_through_an_expression():
    """GitHub's guidance: ${{ }} in a run: is pasted into the script before
    it runs; inputs go through env: instead."""
    for path in [ACTION, *WORKFLOWS]:
        doc = yaml.safe_load(open(path))
        jobs = doc.get("jobs") or {"action": {"steps": doc["runs"]["steps"]}}
        for name, job in jobs.items():
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), (path, name, step)


def test_every_action_is_pinned_to_a_commit():
    for path in [*WORKFLOWS]:
        for uses in re.findall(r"uses:\s*(\S+)", open(path).read()):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), (path, uses)


def test_the_examples_call_a_commit_of_this_repository_that_has_the_action():
    pins = {u.split("@")[1] for w in WORKFLOWS for u in re.findall(r"uses:\s*(cudabench/cudabench@\S+)", open(w).read())}
    assert len(pins) == 1, pins  # one commit of the action, in all three
    pin = pins.pop()
    known = subprocess.run(["git", "cat-file", "-e", f"{pin}^{{commit}}"], cwd=ROOT, capture_output=True)
    if known.returncode:
        pytest.skip(f"{pin} is not in this clone (a shallow one)")
    # The action at that commit is the action here, as the tests run it (its inputs, its script).
    r = subprocess.run(["git", "diff", "--quiet", pin, "--", "action.yml", "scripts/ci/action.sh"], cwd=ROOT)
    assert r.returncode == 0, f"action.yml or scripts/ci/action.sh changed since {pin}: pin the examples to a newer commit"


def test_nothing_force_pushes_the_history():
    for path in [ACTION, os.path.join(ROOT, "scripts", "ci", "action.sh"), *WORKFLOWS]:
        assert not re.search(r"push\s+(-f|--force)|\+bench-history|\+refs/heads", open(path).read()), path


def test_a_write_token_is_held_only_by_a_fresh_hosted_job_that_says_what_it_allows():
    """A job with `contents: write` runs on a GitHub-hosted runner (never the
    self-hosted one, which pull requests' gates share), keeps no credentials
    in its checkout, and its comment says what the permission allows."""
    writers = 0
    for path in WORKFLOWS:
        text = open(path).read()
        for name, job in yaml.safe_load(text)["jobs"].items():
            perms = job.get("permissions") or {}
            assert perms != "write-all" and "write" not in {v for k, v in perms.items() if k != "contents"}, (path, name)
            if perms.get("contents") != "write":
                continue
            writers += 1
            assert str(job["runs-on"]).startswith("ubuntu-"), (path, name, job["runs-on"])
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False, (path, name)
            comment = text[:text.index("contents: write", text.index(f"  {name}:"))].rsplit("permissions:", 1)[1]
            assert "any branch or" in comment and "tag" in comment and "releases" in comment, (path, name, comment)
            assert "nothing else" not in comment
    assert writers == 2  # code.yml's history job and machine.yml's
