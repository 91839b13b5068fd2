"""The action (action.yml) as a GitHub runner runs it, from a repository of
the user's own: a throwaway git repository holding no cudabench file, with a
local bare repository as its remote. The example workflows of scripts/ci/
(or a user's copy of one with its own inputs) run through actions_runner,
which evaluates what decides what runs (the event's payload, `if:`,
`runs-on`) as GitHub does; cudabench/cudabench@<commit> resolves to this
checkout, whose build the action uses.

- A pull request from a fork runs nothing on the self-hosted runner; one
  from the same repository, and a push, pass the mode and the inputs to
  the action's script through its environment.
- Mode stack gates two real stacks: the same build, the candidate under a
  CPU quota (scripts/cpu-quota.sh 0.5 with 20 ms periods: a 50 ms
  measurement of two threads needs five periods' quota, so none escapes
  it, as one could fit into a 100 ms period's), caught slower (exit 1).
- Mode code: a fork of cudabench with a family of its own
  (tests/throwaway_family.py) gates the commit that adds it against its
  parent, the new family's row listed as new, and leaves its entries for
  the history job.
- Mode machine appends an entry per run to a history branch of the bare
  repository: a flat history passes; a 15% step in the newest entries fails
  the job with its change point named.
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest
import yaml

import actions_runner as ar
from conftest import BENCH, ROOT
from throwaway_family import FILE, LINE, SOURCE

CI = os.path.join(ROOT, "scripts", "ci")
GPU_RUNNER = {"self-hosted", "linux", "x64", "gpu"}
REPO = "team/gpu-stack"
ROW = "VectorAdd/cpu_scalar/n:65536/real_time"  # one quick single-threaded row: the history's
needs_bench = pytest.mark.skipif(not os.access(BENCH, os.X_OK), reason=f"no bench at {BENCH}: build first")


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout


def user_repo(tmp_path):
    """(bare remote, workspace): the user's repository, one commit of a README, no cudabench file."""
    remote, ws = tmp_path / "remote.git", tmp_path / "workspace"
    git("init", "-q", "--bare", "-b", "main", str(remote))
    git("clone", "-q", str(remote), str(ws))
    (ws / "README.md").write_text("our GPU stack\n")
    git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "start", cwd=ws)
    git("add", "README.md", cwd=ws)
    git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "readme", cwd=ws)
    git("push", "-q", "origin", "HEAD:main", cwd=ws)
    return remote, ws


def payload(event, ws, fork=False):
    sha = git("rev-parse", "HEAD", cwd=ws).strip()
    repo = {"full_name": REPO, "default_branch": "main"}
    if event == "push":
        return {"ref": "refs/heads/main", "after": sha, "repository": repo}
    if event == "pull_request":
        head = {"full_name": "stranger/gpu-stack" if fork else REPO}
        return {"action": "opened", "number": 7, "repository": repo,
                "pull_request": {"number": 7, "head": {"repo": head, "sha": sha, "ref": "feature"},
                                 "base": {"sha": git("rev-parse", "HEAD^", cwd=ws).strip(), "ref": "main"}}}
    return {"schedule": "17 3 * * *", "repository": repo}


def checkout(inputs, ctx):
    """actions/checkout: the workspace is the checkout already; no credentials are to stay in it."""
    assert str(inputs.get("persist-credentials")).lower() == "false", inputs
    return {}


def runner_env():
    """What the runner's service passes on: this machine's PATH, HOME and cudabench settings (its cache)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG") or k.startswith("CUDABENCH_")}
    env.pop("CUDABENCH_BUILD_DIR", None)
    return env


def run(workflow, job, event, ws, action=ROOT, fork=False):
    return ar.run_job(workflow, job, event, payload(event, ws, fork), workspace=str(ws), runner_labels=GPU_RUNNER,
                      env=runner_env(), actions={"actions/checkout": checkout, "cudabench/cudabench": str(action),
                                        "actions/upload-artifact": lambda i, c: {},
                                        "actions/download-artifact": lambda i, c: {}},
                      needs_results={"gate": {"result": "success", "outputs": {}}}, timeout=1200)


def users_copy(ws, example, job, **inputs):
    """The user's copy of an example workflow, with inputs of their own for the cudabench step."""
    doc = yaml.safe_load(open(os.path.join(CI, example)))
    for step in doc["jobs"][job]["steps"]:
        if step.get("uses", "").startswith("cudabench/cudabench@"):
            step["with"].update(inputs)
    path = ws / ".github" / "workflows" / example
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def stub_action(tmp_path):
    """This action.yml with a script that only shows what reached it."""
    d = tmp_path / "stub"
    (d / "scripts" / "ci").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "action.yml"), d / "action.yml")
    (d / "scripts" / "ci" / "action.sh").write_text(
        'echo "mode=$CUDABENCH_MODE rows=$CUDABENCH_ROWS token=${CUDABENCH_TOKEN:+set}" >>"$GITHUB_STEP_SUMMARY"\n'
        'echo "verdict=pass" >>"$GITHUB_OUTPUT"\n')
    return d


def test_a_fork_pull_request_runs_nothing_on_the_self_hosted_runner(tmp_path):
    _, ws = user_repo(tmp_path)
    stub = stub_action(tmp_path)
    for example, job, mode in (("code.yml", "gate", "code"), ("stack.yml", "gate", "stack")):
        wf = os.path.join(CI, example)
        r = run(wf, job, "pull_request", ws, stub, fork=True)
        assert not r.ran and r.reason == "if: false", (example, r.reason)
        for event in ("pull_request", "push"):
            r = run(wf, job, event, ws, stub)
            assert r.ran and r.conclusion == "success", (example, event, r.reason, r.log[-2000:])
            assert f"mode={mode} rows=default token=set" in r.summary, r.summary
            assert r.permissions == {"contents": "read"} and not r.inline_expressions, r.permissions
    # The history job writes from a GitHub-hosted runner, on pushes to main only.
    r = run(os.path.join(CI, "code.yml"), "history", "pull_request", ws, stub)
    assert not r.ran and r.reason == "if: false"
    r = run(os.path.join(CI, "machine.yml"), "track", "pull_request", ws, stub)
    assert not r.ran and r.reason == "event not in on:"


@needs_bench
def test_the_stack_mode_catches_the_candidate_stack_slower(tmp_path):
    quota = subprocess.run(["bash", os.path.join(ROOT, "scripts", "cpu-quota.sh"), "0.5", "true"], capture_output=True,
                           text=True, timeout=60)
    if quota.returncode == 3:
        pytest.skip(f"no CPU quota here: {quota.stderr.strip()}")
    _, ws = user_repo(tmp_path)
    wf = users_copy(ws, "stack.yml", "gate", rows="^VectorAdd/cpu_omp_simd/n:4194304/", budget="120",
                    **{"a-wrap": "", "b-wrap": f"env CPU_QUOTA_PERIOD_MS=20 {ROOT}/scripts/cpu-quota.sh 0.5"})
    r = run(wf, "gate", "push", ws)
    assert r.ran and r.exit_code == 1 and r.conclusion == "failure", r.log[-4000:]
    assert r.steps[-1]["outputs"].get("verdict") == "regression", r.steps[-1]
    assert "## cudabench (stack): regression" in r.summary, r.summary[-3000:]
    line = next(x for x in r.summary.splitlines() if "cpu_omp_simd/n:4194304" in x)
    assert "slower" in line, line


def branch_file(remote, branch, name):
    return json.loads(git("show", f"{branch}:{name}", cwd=remote))


def seed(ws, branch, first, older, newer):
    """Entries made from `first` (a real run's entry), its samples scaled by
    each level: `older` dated in the hours before it, `newer` in the hours
    after now (so this run's own entry, noisy as one run is, falls between
    the history and the injected newest entries)."""
    entries = ws.parent / f"seed-{branch}"
    machine = os.path.dirname(first[0])
    now, then = time.time(), first[1]["cudabench_history"]["time"]
    times = [then - 3600 * (len(older) - k) for k in range(len(older))] + [now + 3600 * (k + 1) for k in range(len(newer))]
    for k, (level, when) in enumerate(zip(list(older) + list(newer), times)):
        doc = json.loads(json.dumps(first[1]))
        for b in doc["benchmarks"]:
            for key in ("real_time", "cpu_time"):
                if key in b:
                    b[key] *= level
        doc["cudabench_history"].update(run=f"seed{k}", commit=f"seed{k}", time=int(when))
        (entries / machine).mkdir(parents=True, exist_ok=True)
        (entries / machine / f"seed{k}.json").write_text(json.dumps(doc))
    py = os.path.join(os.environ.get("CUDABENCH_VENV", os.path.expanduser("~/.cache/cudabench/venv")), "bin", "python")
    r = subprocess.run([py if os.access(py, os.X_OK) else "python3", os.path.join(ROOT, "scripts", "history.py"),
                        "push", "--no-page", "--repo", str(ws), "--branch", branch, "--entries", str(entries)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def nightly(ws, tmp_path, branch):
    """The nightly workflow as GitHub runs it: its track job on the GPU
    runner, its artifact, then its history job on a GitHub-hosted runner,
    where the runner's CUDABENCH_VENV and cache are a spy's: the job that
    holds the write token must run nothing of theirs. The history job's result."""
    wf = users_copy(ws, "machine.yml", "track", rows=f"^{ROW.split('real_time')[0]}", budget="20", reference="false")
    kept = tmp_path / f"artifact-{branch}"
    shutil.rmtree(kept, ignore_errors=True)
    upload = lambda inputs, ctx: shutil.copytree(inputs["path"], kept) and {}
    r = ar.run_job(wf, "track", "schedule", payload("schedule", ws), workspace=str(ws), runner_labels=GPU_RUNNER,
                   env=runner_env(), actions={"actions/checkout": checkout, "cudabench/cudabench": ROOT,
                                              "actions/upload-artifact": upload}, timeout=1200)
    assert r.ran and r.exit_code == 0 and kept.is_dir(), r.log[-4000:]

    def download(inputs, ctx):
        shutil.rmtree(ws / inputs["path"], ignore_errors=True)
        shutil.copytree(kept, ws / inputs["path"])
        return {}
    spy = tmp_path / "cache" / "venv" / "bin" / "python"
    spy.parent.mkdir(parents=True, exist_ok=True)
    spy.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'spy-ran'}\nexit 0\n")
    spy.chmod(0o755)
    env = dict(runner_env(), CUDABENCH_CACHE=str(tmp_path / "cache"), CUDABENCH_VENV=str(spy.parent.parent),
               RUNNER_ENVIRONMENT="github-hosted")
    doc = yaml.safe_load(open(wf))
    doc["jobs"]["history"]["steps"][-1]["with"]["history-branch"] = branch
    (ws / ".github" / "workflows" / "machine.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = ar.run_job(wf, "history", "schedule", payload("schedule", ws), workspace=str(ws),
                   runner_labels={"ubuntu-latest"}, env=env,
                   actions={"actions/checkout": checkout, "cudabench/cudabench": ROOT,
                            "actions/download-artifact": download},
                   needs_results={"track": {"result": "success", "outputs": {}}}, timeout=1200)
    assert r.ran and r.permissions == {"contents": "write"}, r.reason
    assert not (tmp_path / "spy-ran").exists()
    return r


@needs_bench
def test_the_machine_mode_keeps_each_run_and_fails_on_a_step_in_the_newest_entries(tmp_path):
    remote, ws = user_repo(tmp_path)
    r = nightly(ws, tmp_path, "flat")
    assert r.exit_code == 0, r.log[-4000:]
    files = [f for f in git("ls-tree", "-r", "--name-only", "flat", cwd=remote).split() if f.endswith(".json")]
    assert len(files) == 1, files
    first = (files[0], branch_file(remote, "flat", files[0]))
    # Six runs before at this level, within 2% of it, and two injected newest ones at it: flat.
    jitter = (1.02, 0.99, 1.01, 0.98, 1.0, 1.01)
    seed(ws, "flat", first, jitter, (1.0, 1.0))
    r = nightly(ws, tmp_path, "flat")
    assert r.exit_code == 0, r.log[-4000:]
    assert "no slowdown among the newest 3 entries" in r.summary, r.summary[-3000:]
    runs = [f for f in git("ls-tree", "-r", "--name-only", "flat", cwd=remote).split() if f.endswith(".json")]
    assert len(runs) == 10, runs  # keyed by run: both runs of this one commit are kept
    # The six runs before 15% faster than the newest entries: a step up, named, at 1/1.15 = 0.87x.
    seed(ws, "step", first, [j / 1.15 for j in jitter], (1.0, 1.0))
    r = nightly(ws, tmp_path, "step")
    assert r.exit_code == 1 and r.steps[-1]["outputs"].get("verdict") == "regression", r.log[-4000:]
    assert re.search(f"{ROW.split('/real_time')[0]} slower from \\S+ on: speed 0\\.[78]\\dx", r.summary), r.summary[-3000:]


@needs_bench
def test_a_fork_with_a_family_of_its_own_gates_its_commit(tmp_path):
    fork = tmp_path / "fork"
    git("clone", "-q", ROOT, str(fork))
    (fork / "bench" / "families" / FILE).write_text(SOURCE)
    with open(fork / "bench" / "CMakeLists.txt", "a") as f:
        f.write(LINE)
    git("add", "-A", cwd=fork)
    git("-c", "user.name=f", "-c", "user.email=f@x", "commit", "-q", "-m", "a family of our own", cwd=fork)
    wf = users_copy(fork, "code.yml", "gate", rows="^(Throwaway/|VectorAdd/cpu_scalar/n:65536/)", budget="40")
    kept = tmp_path / "artifact"
    upload = lambda inputs, ctx: shutil.copytree(inputs["path"], kept) and {}
    r = ar.run_job(wf, "gate", "push", payload("push", fork), workspace=str(fork), runner_labels=GPU_RUNNER,
                   env=runner_env(), actions={"actions/checkout": checkout, "cudabench/cudabench": ROOT,
                                              "actions/upload-artifact": upload}, timeout=1400)
    assert r.ran and r.exit_code == 0, r.log[-5000:]
    assert "## cudabench (code): pass" in r.summary, r.summary[-3000:]
    row = next(x for x in r.summary.splitlines() if "Throwaway/cpu_sum/n:4096" in x)
    assert "new" in row, row
    head = git("rev-parse", "HEAD", cwd=fork).strip()
    assert [p.name for p in kept.glob(f"*/{head}.json")] == [f"{head}.json"], list(kept.rglob("*"))


def test_a_bad_input_ends_the_job_with_exit_2_and_one_line_naming_it(tmp_path):
    _, ws = user_repo(tmp_path)
    for inputs, said in (({"budget": "soon"}, "budget: 'soon': expected seconds"),
                         ({"fail-on-undecided": "maybe"}, "fail-on-undecided: 'maybe': expected true or false"),
                         ({"mode": "nightly"}, "mode: 'nightly': expected code, stack, machine or history")):
        r = run(users_copy(ws, "stack.yml", "gate", **inputs), "gate", "push", ws)
        assert r.exit_code == 2 and r.steps[-1]["outputs"].get("verdict") == "bad-input", r.log[-2000:]
        assert f"cudabench action: {said}" in r.log, r.log[-2000:]
    # Mode history holds the write token: never on a self-hosted runner (one that says it is not GitHub's).
    r = ar.run_job(os.path.join(CI, "machine.yml"), "history", "schedule", payload("schedule", ws), workspace=str(ws),
                   runner_labels={"ubuntu-latest"}, env=dict(runner_env(), RUNNER_ENVIRONMENT="self-hosted"),
                   actions={"actions/checkout": checkout, "cudabench/cudabench": ROOT,
                            "actions/download-artifact": lambda i, c: {}},
                   needs_results={"track": {"result": "success", "outputs": {}}}, timeout=300)
    assert r.exit_code == 2 and "mode history holds the write token: run its job on a GitHub-hosted runner" in r.log
    # Mode code needs a fork of cudabench: this repository is not one.
    r = run(users_copy(ws, "code.yml", "gate"), "gate", "push", ws)
    assert r.exit_code == 2 and "has no scripts/regress.sh: mode stack compares two stacks" in r.log, r.log[-2000:]


@needs_bench
def test_no_program_the_action_runs_sees_the_token(tmp_path):
    """Both sides' bench is a spy that keeps its environment, then is a fake
    Google Benchmark program: the token reached the step, and none of them."""
    _, ws = user_repo(tmp_path)
    spy = tmp_path / "spy-bench"
    spy.write_text(f"#!/bin/sh\nenv >> {tmp_path / 'seen'}\n"
                   f"exec {os.path.join(ROOT, 'tests', 'fakes', 'fake_gbench.py')} \"$@\"\n")
    spy.chmod(0o755)
    wf = users_copy(ws, "stack.yml", "gate", rows=".", budget="20",
                    **{"a-bench": str(spy), "b-bench": str(spy), "a-wrap": "", "b-wrap": ""})
    r = run(wf, "gate", "push", ws)
    assert r.ran and r.exit_code == 0, r.log[-3000:]
    seen = (tmp_path / "seen").read_text()
    assert "GITHUB_WORKSPACE=" in seen and ar.TOKEN not in seen and "CUDABENCH_TOKEN" not in seen
