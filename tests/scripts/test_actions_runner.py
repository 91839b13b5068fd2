"""The driver that runs a GitHub Actions job here (tests/scripts/actions_runner.py):
its expression language, what decides whether a job and a step run, the files a
step talks to the runner through, composite actions, and the loud refusal of
what it does not implement. Each workflow is a tiny one written for the test."""
import json
import os
import textwrap

import pytest

if os.environ.get("CUDABENCH_REQUIRE_TEST_TOOLS") == "1":
    import yaml  # noqa: F401  (fails here, loudly, where the test tools must be there)
pytest.importorskip("yaml", reason="PyYAML reads the workflows (it is not in this venv)")

import actions_runner as ar  # noqa: E402

REPO = {"full_name": "me/proj", "default_branch": "main"}
PUSH = {"ref": "refs/heads/main", "after": "a" * 40, "repository": REPO, "sender": {"login": "me"}}


def pull_request(head_repo="me/proj", action="opened", title="a title"):
    return {"action": action, "number": 7, "repository": REPO,
            "pull_request": {"number": 7, "title": title,
                             "head": {"sha": "b" * 40, "ref": "topic", "repo": {"full_name": head_repo}},
                             "base": {"sha": "c" * 40, "ref": "main", "repo": {"full_name": "me/proj"}}}}


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(tmp_path, workflow, event="push", payload=PUSH, job="j", labels=("ubuntu-latest",), **kw):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ar.run_job(write(tmp_path / "wf.yml", workflow), job, event, payload,
                      workspace=str(ws), runner_labels=set(labels), **kw)


def ev(src, **contexts):
    return ar.evaluate(src, contexts)


# ---- expressions ----------------------------------------------------------------
@pytest.mark.parametrize("src, want", [
    ("1 == 1.0", True), ("'abc' == 'ABC'", True), ("'1' == 1", True), ("null == 0", True),
    ("null == false", True), ("true == 1", True), ("'' == 0", True), ("' 2 ' == 2", True),
    ("'abc' == 0", False), ("0x10 == 16", True), ("-1 < 0", True), ("'a' != 'b'", True),
    ("'a' < 'B'", True), ("2 >= 2", True), ("'10' > 9", True), ("'it''s'", "it's"),
    ("'a' && 'b'", "b"), ("0 && 'b'", 0), ("'' || 'x'", "x"), ("null || 0", 0), ("!''", True),
    ("!'a'", False), ("!(1 == 2) && 3", 3), ("1 == 1 || x", True), ("1.5e1", 15.0),
    ("fromJSON('[1]') == fromJSON('[1]')", False),
])
def test_operators_coercion_and_values(src, want):
    got = ev(src, x=None)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("src, want", [
    ("contains('Hello World', 'WORLD')", True), ("contains('abc', 'd')", False),
    ("contains(fromJSON('[\"a\", 2]'), 'A')", True), ("contains(fromJSON('[\"a\", 2]'), '2')", True),
    ("contains(fromJSON('[\"a\"]'), 'b')", False), ("startsWith('refs/heads/main', 'REFS/')", True),
    ("endsWith('file.TXT', '.txt')", True), ("endsWith('file.txt', 'file')", False),
    ("format('{0}-{{1}}-{1}', 'a', 2)", "a-{1}-2"), ("format('{0}', null)", ""),
    ("join(fromJSON('[\"a\", \"b\"]'), '+')", "a+b"), ("join(fromJSON('[1, true]'))", "1,true"),
    ("join('x')", "x"),
    ("toJSON(fromJSON('{\"a\": [1]}'))", '{\n  "a": [\n    1\n  ]\n}'), ("fromJSON('{\"a\": 2}').a", 2),
    ("github.event.pull_request.head.repo.full_name", None), ("github['EVENT_NAME']", "push"),
    ("github.Event_Name", "push"), ("github.list[1]", "y"), ("github.list[5]", None), ("github.event_name.x", None),
])
def test_functions_and_property_access(src, want):
    assert ev(src, github={"event_name": "push", "event": {}, "list": ["x", "y"]}) == want


def test_values_in_text_are_written_as_github_writes_them():
    ctx = {"github": {"n": 3, "f": 1.5, "t": True, "z": None}}
    got = ar.interpolate("${{ github.n }} ${{ github.f }} ${{ github.t }} [${{ github.z }}] ${{ 2.0 }} ${{ 1e20 }}",
                         ctx)
    assert got == "3 1.5 true [] 2 1E+20"
    assert ar.interpolate("${{ github.n }}", ctx) == 3  # exactly one ${{ }}: its value
    assert ar.interpolate("${{ format('}}{0}', 'x') }}!", ctx) == "}x!"  # }} inside a string is not the end
    with pytest.raises(ar.Unsupported):
        ar.interpolate("x ${{ github }}", ctx)  # an object in text: GitHub prints 'Object'


@pytest.mark.parametrize("src", ["hashFiles('**/x')", "github.*", "github.event.commits.*.id", "github[*]",
                                 "vars.NAME", "frobnicate(1)", "matrix.os"])
def test_what_the_driver_does_not_implement_raises(src):
    with pytest.raises(ar.Unsupported):
        ev(src, github={})


@pytest.mark.parametrize("src", ["1 ==", "(1", "'unterminated", "a b", "contains('a')", "1 = 1", "a.", "",
                                 "format('{0')", "format('{1}', 'a')", "fromJSON('{')", "success()", "env.X"])
def test_bad_expressions_raise(src):
    with pytest.raises(ar.ExpressionError):
        ev(src, a={})


@pytest.mark.parametrize("cond, status, want", [
    (None, "success", True), (None, "failure", False), ("true", "failure", False), ("always()", "failure", True),
    ("failure()", "failure", True), ("failure()", "success", False), ("${{ !cancelled() }}", "failure", True),
    ("cancelled()", "failure", False), ("${{ success() }}", "success", True), (False, "success", False),
    ("${{ false }} == true", "success", True),  # text around ${{ }}: a non-empty string, as on GitHub
    ("github.x == 'y'", "success", True), ("${{ github.x == 'z' }}", "success", False),
])
def test_if_conditions(cond, status, want):
    assert ar.condition(cond, {"github": {"x": "Y"}}, status) is want


# ---- whether the job runs -----------------------------------------------------------
FORKS = """
on:
  push:
    branches: [main, 'release/**', 'topic/*']
  pull_request:
permissions:
  contents: read
jobs:
  j:
    if: github.event_name == 'push' || github.event.pull_request.head.repo.full_name == github.repository
    runs-on: ubuntu-latest
    steps:
      - run: echo "ran for $GITHUB_EVENT_NAME at $GITHUB_REF"
"""


@pytest.mark.parametrize("event, payload, ran, reason", [
    ("push", PUSH, True, ""),
    ("push", dict(PUSH, ref="refs/heads/release/1.2"), True, ""),
    ("push", dict(PUSH, ref="refs/heads/topic"), False, "filtered out"),
    ("push", dict(PUSH, ref="refs/heads/topic/a"), True, ""),
    ("push", dict(PUSH, ref="refs/heads/topic/a/b"), False, "filtered out"),  # * stops at /, ** does not
    ("push", dict(PUSH, ref="refs/tags/v1"), False, "not a branch"),
    ("pull_request", pull_request(), True, ""),
    ("pull_request", pull_request(head_repo="stranger/proj"), False, "if: false"),
    ("pull_request", pull_request(action="closed"), False, "types"),
    ("workflow_dispatch", dict(PUSH), False, "event not in on:"),
])
def test_the_fork_excluding_job_runs_for_push_and_same_repo_pull_requests(tmp_path, event, payload, ran, reason):
    r = run(tmp_path, FORKS, event, payload)
    assert (r.ran, r.conclusion) == ((True, "success") if ran else (False, "skipped"))
    assert reason in r.reason and (reason or not r.reason)
    assert r.permissions == {"contents": "read"}
    if ran:
        assert f"ran for {event} at {'refs/pull/7/merge' if event == 'pull_request' else payload['ref']}" in r.log


def test_runs_on_names_the_missing_label(tmp_path):
    wf = "on: push\njobs:\n  j:\n    runs-on: [self-hosted, GPU]\n    steps:\n      - run: 'true'\n"
    r = run(tmp_path, wf, labels={"self-hosted", "linux"})
    assert not r.ran and "GPU" in r.reason and "self-hosted" not in r.reason
    assert run(tmp_path, wf, labels={"self-hosted", "linux", "gpu"}).conclusion == "success"
    with pytest.raises(ar.Unsupported, match="runs-on"):
        run(tmp_path, wf.replace("[self-hosted, GPU]", "{group: big}"))


@pytest.mark.parametrize("fragment, match", [
    ("on:\n  push:\n    paths: ['src/**']\n", "paths"), ("on:\n  push:\n    tags: [v1]\n", "tags"),
    ("on: push\nfoo: 1\n", "foo"), ("on: push\nx-strategy: 1\n", "x-strategy"),
])
def test_unknown_triggers_and_keys_raise(tmp_path, fragment, match):
    with pytest.raises(ar.Unsupported, match=match):
        run(tmp_path, fragment + "jobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: 'true'\n")


@pytest.mark.parametrize("job_yaml, match", [
    ("    strategy: {matrix: {a: [1]}}\n", "strategy"), ("    container: debian\n", "container"),
    ("    steps:\n      - run: 'true'\n        shell: python\n", "shell"),
    ("    defaults: {run: {shell: sh}}\n", "sh"), ("    steps:\n      - run: 'true'\n        foo: 1\n", "foo"),
])
def test_unknown_job_and_step_syntax_raises(tmp_path, job_yaml, match):
    steps = "" if "steps:" in job_yaml else "    steps:\n      - run: 'true'\n"
    with pytest.raises(ar.Unsupported, match=match):
        run(tmp_path, "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n" + job_yaml + steps)


NEEDS = """
on: push
jobs:
  j:
    needs: build
    if: IF
    runs-on: ubuntu-latest
    steps:
      - run: echo "got ${{ needs.build.outputs.v }}" >> "$GITHUB_STEP_SUMMARY"
"""


@pytest.mark.parametrize("cond, result, ran", [
    ("true", "success", True), ("true", "failure", False), ("failure()", "failure", True),
    ("failure()", "success", False), ("always()", "skipped", True), ("success()", "skipped", False),
    ("failure()", "skipped", False),
    ("needs.build.result == 'success'", "success", True),
])
def test_needs_results_decide_the_job(tmp_path, cond, result, ran):
    r = run(tmp_path, NEEDS.replace("IF", cond), needs_results={"build": {"result": result, "outputs": {"v": "42"}}})
    assert r.ran is ran and (r.summary == "got 42\n" if ran else r.reason == "if: false")


def test_needs_results_must_be_given(tmp_path):
    with pytest.raises(ar.WorkflowError, match="build"):
        run(tmp_path, NEEDS.replace("IF", "true"))


# ---- steps and the runner's files ---------------------------------------------------
PLUMBING = r"""
on: push
env:
  WF: workflow
  YES: yes
permissions: read-all
jobs:
  j:
    runs-on: ubuntu-latest
    permissions:
      contents: write
    env:
      JOB: job-${{ github.ref_name }}
    outputs:
      single: ${{ steps.out.outputs.single }}
      lines: ${{ steps.out.outputs.lines }}
    steps:
      - id: out
        run: |
          echo "single=one value" >> "$GITHUB_OUTPUT"
          { echo 'lines<<EOF_1'; echo 'first'; echo 'second=2'; echo 'EOF_1'; } >> "$GITHUB_OUTPUT"
          echo "LATER=from-env-file" >> "$GITHUB_ENV"
          mkdir -p "$RUNNER_TEMP/bin" && printf '#!/bin/sh\necho tool ran\n' > "$RUNNER_TEMP/bin/mytool"
          chmod +x "$RUNNER_TEMP/bin/mytool" && echo "$RUNNER_TEMP/bin" >> "$GITHUB_PATH"
          echo "## part one" >> "$GITHUB_STEP_SUMMARY"
      - name: Use ${{ steps.out.outputs.single }}
        env:
          STEP: ${{ steps.out.outputs.lines }}
        run: |
          echo "seen: $WF $JOB $YES $LATER ${{ env.LATER }} [$STEP] $(mytool)"
          echo "CI=$CI GITHUB_ACTIONS=$GITHUB_ACTIONS sha=$GITHUB_SHA repo=$GITHUB_REPOSITORY" \
            "ws=$GITHUB_WORKSPACE pwd=$PWD"
          echo "event: $(cat "$GITHUB_EVENT_PATH")"
          echo "token: [${GITHUB_TOKEN:-unset}]"
          echo "part two" >> "$GITHUB_STEP_SUMMARY"
      - run: exit 3
      - name: skipped after the failure
        run: echo SHOULD-NOT-RUN
      - name: runs on failure
        if: failure() && steps.out.outcome == 'success'
        run: echo "failure step ran"
      - name: runs always
        if: always()
        run: echo "always step ran"
"""


def test_outputs_env_path_and_summary_files_and_a_failing_step(tmp_path):
    r = run(tmp_path, PLUMBING)
    assert (r.ran, r.conclusion, r.exit_code) == (True, "failure", 3)
    assert r.outputs == {"single": "one value", "lines": "first\nsecond=2"}
    assert "seen: workflow job-main yes from-env-file from-env-file [first\nsecond=2] tool ran" in r.log
    ws = str(tmp_path / "ws")
    assert f"CI=true GITHUB_ACTIONS=true sha={'a' * 40} repo=me/proj ws={ws} pwd={ws}" in r.log
    assert '"ref": "refs/heads/main"' in r.log and "token: [unset]" in r.log
    assert r.summary == "## part one\npart two\n"
    assert r.permissions == {"contents": "write"}
    assert "SHOULD-NOT-RUN" not in r.log and "failure step ran" in r.log and "always step ran" in r.log
    got = [(s["name"], s["outcome"], s["exit_code"]) for s in r.steps]
    assert got == [("Run echo \"single=one value\" >> \"$GITHUB_OUTPUT\"", "success", 0),
                   ("Use one value", "success", 0), ("Run exit 3", "failure", 3),
                   ("skipped after the failure", "skipped", None), ("runs on failure", "success", 0),
                   ("runs always", "success", 0)]
    assert r.steps[0]["outputs"] == {"single": "one value", "lines": "first\nsecond=2"}
    assert r.inline_expressions == ["${{ env.LATER }}"]


SHELLS = """
on: push
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - name: default
        id: default
        continue-on-error: true
        run: false | true
      - name: bash
        id: bash
        continue-on-error: true
        shell: bash
        run: false | true
      - if: steps.bash.outcome == 'failure' && steps.bash.conclusion == 'success' && steps.default.outcome == 'success'
        run: echo "as the runner"
"""


def test_default_shell_is_bash_e_and_shell_bash_adds_pipefail(tmp_path):
    r = run(tmp_path, SHELLS)
    assert (r.conclusion, r.exit_code) == ("success", 0)
    assert [s["outcome"] for s in r.steps] == ["success", "failure", "success"] and "as the runner" in r.log


def test_bad_output_file_lines_raise(tmp_path):
    wf = "on: push\njobs:\n  j:\n    runs-on: x\n    steps:\n      - run: echo 'v<<EOF' >> $GITHUB_OUTPUT\n"
    with pytest.raises(ar.WorkflowError, match="EOF"):
        run(tmp_path, wf, labels={"x"})


def test_the_deadline_stops_the_job(tmp_path):
    wf = ("on: push\njobs:\n  j:\n    runs-on: x\n    timeout-minutes: 0.1\n    steps:\n"
          "      - run: echo started; sleep 60\n      - if: always()\n        run: echo after\n")
    r = run(tmp_path, wf, labels={"x"})
    assert (r.conclusion, r.exit_code) == ("failure", 124) and "timed out" in r.reason
    assert "started" in r.log and "after" not in r.log


# ---- actions ---------------------------------------------------------------------------
ACTION = """
name: tiny
inputs:
  token:
    default: ${{ github.token }}
  who:
    required: true
outputs:
  greeting:
    value: ${{ steps.hi.outputs.greeting }}
runs:
  using: composite
  steps:
    - id: hi
      shell: bash
      env:
        WHO: ${{ inputs.who }}
        TOKEN: ${{ inputs.token }}
      run: |
        echo "greeting=hello $WHO" >> "$GITHUB_OUTPUT"
        echo "token=$TOKEN from=${{ github.action_path }} env=$GITHUB_ACTION_PATH outer=$OUTER"
    - if: inputs.who == 'nobody'
      shell: bash
      run: echo NOBODY
"""
USES = """
on: push
jobs:
  j:
    runs-on: ubuntu-latest
    outputs:
      greeting: ${{ steps.tiny.outputs.greeting }}
    steps:
      - uses: owner/actions/tiny@v1
        id: tiny
        env:
          OUTER: outer-value
        with:
          who: WHO
      - uses: actions/checkout@v5
        id: co
        with:
          fetch-depth: 0
      - run: echo "checkout said ${{ steps.co.outputs.ref }}"
"""


def test_a_composite_action_with_inputs_outputs_and_a_callable(tmp_path):
    path = tmp_path / "actions"
    write(path / "tiny" / "action.yml", ACTION)
    calls = []

    def checkout(inputs, ctx):
        calls.append((inputs, ctx["github"]["sha"], ctx["workspace"]))
        return {"ref": "main"}
    r = run(tmp_path, USES.replace("WHO", "world"), actions={"owner/actions": str(path), "actions/checkout": checkout})
    assert r.conclusion == "success", r.log
    assert r.outputs == {"greeting": "hello world"} and r.steps[0]["outputs"] == {"greeting": "hello world"}
    assert f"token={ar.TOKEN} from={path / 'tiny'} env={path / 'tiny'} outer=outer-value" in r.log
    assert "NOBODY" not in r.log and [s["outcome"] for s in r.steps[0]["steps"]] == ["success", "skipped"]
    assert calls == [({"fetch-depth": "0"}, "a" * 40, str(tmp_path / "ws"))] and "checkout said main" in r.log
    assert r.inline_expressions == ["${{ github.action_path }}", "${{ steps.co.outputs.ref }}"]


def test_a_failing_action_fails_its_step(tmp_path):
    path = tmp_path / "actions"
    write(path / "tiny" / "action.yml", ACTION.replace('echo "greeting', 'exit 9 #'))

    def checkout(inputs, ctx):
        raise RuntimeError("no network")
    r = run(tmp_path, USES.replace("WHO", "x"), actions={"owner/actions": str(path), "actions/checkout": checkout})
    assert (r.conclusion, r.exit_code) == ("failure", 9)
    assert [s["outcome"] for s in r.steps] == ["failure", "skipped", "skipped"]
    wf = "on: push\njobs:\n  j:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v5\n"
    r = run(tmp_path, wf, labels={"x"}, actions={"actions/checkout": checkout})
    assert (r.conclusion, r.exit_code) == ("failure", 1) and "no network" in r.log


@pytest.mark.parametrize("in_action, in_workflow, error, match", [
    (("shell: bash\n      env:", "env:"), ("", ""), ar.Unsupported, "shell"),
    (("using: composite", "using: node20"), ("", ""), ar.Unsupported, "node20"),
    (("", ""), ("who: WHO", "whom: x"), ar.WorkflowError, "who"),
    (("", ""), ("        with:\n          fetch-depth", "        shell: bash\n        with:\n          fetch-depth"),
     ar.WorkflowError, "shell"),
])
def test_composite_actions_refuse_what_github_refuses(tmp_path, in_action, in_workflow, error, match):
    path = tmp_path / "actions"
    write(path / "tiny" / "action.yml", ACTION.replace(*in_action))
    wf = USES.replace(*in_workflow).replace("WHO", "x")
    with pytest.raises(error, match=match):
        run(tmp_path, wf, actions={"owner/actions": str(path), "actions/checkout": lambda i, c: {}})


@pytest.mark.parametrize("uses", ["actions/setup-python@v5", "./local/action", "docker://alpine:3"])
def test_an_action_not_given_raises_naming_it(tmp_path, uses):
    wf = f"on: push\njobs:\n  j:\n    runs-on: x\n    steps:\n      - uses: {uses}\n"
    with pytest.raises(ar.Unsupported, match=uses.split("@")[0]):
        run(tmp_path, wf, labels={"x"}, actions={"actions/checkout": lambda i, c: {}})


# ---- script injection ------------------------------------------------------------------
INJECT = """
on: pull_request
jobs:
  j:
    runs-on: x
    steps:
      - run: echo "title=${{ github.event.pull_request.title }}"
      - env:
          TITLE: ${{ github.event.pull_request.title }}
        run: echo "title=$TITLE"
"""


def test_inline_expressions_in_scripts_are_recorded_and_substituted_as_github_does(tmp_path):
    title = 'x"; touch pwned; echo "'
    r = run(tmp_path, INJECT, "pull_request", pull_request(title=title), labels={"x"})
    assert r.inline_expressions == ["${{ github.event.pull_request.title }}"]
    assert (tmp_path / "ws" / "pwned").exists()  # the inline form lets the title run a command
    (tmp_path / "ws" / "pwned").unlink()
    r = run(tmp_path, INJECT.replace("      - run: echo \"title=${{ github.event.pull_request.title }}\"\n", ""),
            "pull_request", pull_request(title=title), labels={"x"})
    assert r.inline_expressions == [] and not (tmp_path / "ws" / "pwned").exists()
    assert f"title={title}" in r.log
