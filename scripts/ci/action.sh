#!/usr/bin/env bash
# The GitHub Action's one step (action.yml): cudabench run from the
# action's own folder for the user's repository. Its inputs come as
# CUDABENCH_* environment variables (never through ${{ }} in a script);
# the runner's as GITHUB_* and RUNNER_TEMP. docs/regression-tracking.md
# tells each mode from the user's side.
#
#   code     the workspace is a fork of cudabench: its scripts/regress.sh
#            gates this commit against CUDABENCH_BASE, a pull request's
#            merge base, or the parent; its entries are left for the
#            history job (output `entries`).
#   stack    two stacks on this runner, in interleaved processes (ab.py
#            run): CUDABENCH_A_WRAP/B_WRAP and CUDABENCH_A_BENCH/B_BENCH.
#   machine  this runner's default rows (samples.py), held against its
#            kind's reference (CUDABENCH_REFERENCE), and, with a
#            CUDABENCH_HISTORY_BRANCH, kept as an entry keyed by the run for
#            the history job (output `entries`).
#   history  appends the entries a gate or a machine run left
#            (CUDABENCH_ENTRIES, a folder inside the workspace) to the
#            history branch and remakes its page; with CUDABENCH_CHECK=true
#            it fails on a slowdown among their machines' newest entries
#            (history.py push --check). The only mode that pushes, and the
#            only one that gets the token: it runs the action's own code
#            with a venv it makes for this job, nothing a pull request on a
#            shared runner could have written.
#
# Writes the outputs verdict, report and entries to GITHUB_OUTPUT and the
# report to GITHUB_STEP_SUMMARY. Exit codes: the tools' (0 pass; 1 slower
# beyond the bar or a wrong result; 2 bad input; 3 broken; 5 inconclusive:
# other load, or with CUDABENCH_FAIL_UNDECIDED=true rows it could not tell).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
stop_jobs_on_signal  # a signal stops the running tool's whole process group
# The token pushes to the history branch and goes nowhere else: not into
# the environment of anything the action runs (set-up, builds, benches, a
# fork's scripts), only into git's, for that push (with_token).
token="${CUDABENCH_TOKEN:-}"
unset CUDABENCH_TOKEN
work="${RUNNER_TEMP:-$(mktemp -d)}/cudabench"
mkdir -p "$work"
report="" entries=""
say() { echo "cudabench action: $*" >&2; }
bad() { say "$*"; finish 2; }
is_true() { case "${1,,}" in true|1|yes) return 0 ;; false|0|no|"") return 1 ;; *) bad "$2: '$1': expected true or false" ;; esac; }

# The inputs every mode reads, checked before anything is built or run.
check_inputs() {
  [ -n "${GITHUB_WORKSPACE:-}" ] || bad "GITHUB_WORKSPACE is unset: the action runs in a GitHub job"
  is_true "${CUDABENCH_FAIL_UNDECIDED:-false}" fail-on-undecided || true
  is_true "${CUDABENCH_REFERENCE:-true}" reference || true
  is_true "${CUDABENCH_CHECK:-false}" check || true
  [[ "${CUDABENCH_BUDGET:-150}" =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "${CUDABENCH_BUDGET:-150}" != 0 ] \
    || bad "budget: '${CUDABENCH_BUDGET:-}': expected seconds, e.g. 150"
}

# Every mode's end: the outputs, the job summary, the exit code.
finish() {
  local rc="$1" verdict
  case "$rc" in 0) verdict=pass ;; 1) verdict=regression ;; 2) verdict=bad-input ;; 5) verdict=inconclusive ;; *) verdict=broken ;; esac
  CUDABENCH_MODE="${CUDABENCH_MODE:-none}"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf 'verdict=%s\nreport=%s\nentries=%s\n' "$verdict" "$report" "$entries" >>"$GITHUB_OUTPUT"
  fi
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    { echo "## cudabench ($CUDABENCH_MODE): $verdict"; echo
      if [ -f "$report" ]; then cat "$report"; fi; } >>"$GITHUB_STEP_SUMMARY"
  fi
  exit "$rc"
}

# The action's own build: set up (idempotent) and built; a failure is exit 3.
build_here() {
  bash "$CUDABENCH_ROOT/scripts/setup.sh" || finish $?
  CUDABENCH_BUILD_TARGET=programs configure_and_build "$CUDABENCH_ROOT/build" >/dev/null || { say "the build failed"; finish 3; }
}

rows() {  # the rows: CUDABENCH_ROWS, or the families' KIND rows (status 3 when there are none)
  if [ "${CUDABENCH_ROWS:-default}" = default ]; then family_rows "$1"; else echo "$CUDABENCH_ROWS"; fi
}

# A push to the history branch with the token as git's own configuration,
# from the environment (never in a command line or a remote's URL).
with_token() {
  local header
  if [ -z "$token" ]; then "$@"; return; fi
  header="$(printf 'x-access-token:%s' "$token" | base64 -w0)"
  echo "::add-mask::$header"  # the runner hides it in every log line
  # Only the repository's own git configuration besides it: no user's or system's (hooks, helpers, insteadOf).
  GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=1 \
    GIT_CONFIG_KEY_0="http.${GITHUB_SERVER_URL:-https://github.com}/.extraheader" \
    GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $header" "$@"
}

mode_code() {
  local ws="$GITHUB_WORKSPACE" base="${CUDABENCH_BASE:-}" args=() rc=0
  [ -f "$ws/scripts/regress.sh" ] || bad "mode code gates a fork of cudabench, and $ws has no scripts/regress.sh: mode stack compares two stacks, mode machine tracks a runner"
  if [ -z "$base" ] && [ "${GITHUB_EVENT_NAME:-}" = pull_request ]; then
    base="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pull_request"]["base"]["sha"])' "$GITHUB_EVENT_PATH")" \
      || bad "the pull request's event has no base sha"
    base="$(git -C "$ws" merge-base "$base" HEAD)" || bad "no merge base with $base (check out with fetch-depth: 0)"
  fi
  [ -z "$base" ] || args+=(--base "$base")
  [ "${CUDABENCH_ROWS:-default}" = default ] || args+=(--rows "$CUDABENCH_ROWS")
  [ "${CUDABENCH_BUDGET:-150}" = 150 ] || args+=(--seconds "$CUDABENCH_BUDGET")  # (a fork's older regress.sh has none)
  ! is_true "${CUDABENCH_FAIL_UNDECIDED:-false}" fail-on-undecided || args+=(--fail-undecided)
  entries="$(mktemp -d "$work/entries.XXXXXX")"  # fresh: nothing left there before is pushed
  report="$ws/build/regress/report.md"
  CUDABENCH_HISTORY="$entries" run_job bash "$ws/scripts/regress.sh" "${args[@]}" || rc=$?
  finish "$rc"
}

mode_stack() {
  local py args=() rc=0 filter
  [ -n "${CUDABENCH_A_WRAP:-}${CUDABENCH_B_WRAP:-}${CUDABENCH_A_BENCH:-}${CUDABENCH_B_BENCH:-}" ] \
    || bad "mode stack needs what differs: a-wrap and b-wrap, or a-bench and b-bench"
  build_here
  py="$(project_python)" || finish 3
  filter="$(rows gate)" || finish 3
  args=(run --a "${CUDABENCH_A_BENCH:-$CUDABENCH_ROOT/build/bench}" --b "${CUDABENCH_B_BENCH:-$CUDABENCH_ROOT/build/bench}"
        --labels "${CUDABENCH_LABELS:-before,after}" --filter "$filter" --seconds "${CUDABENCH_BUDGET:-150}"
        --min-time 0.05 --alpha 0.01 --out "$work/stack")
  [ -z "${CUDABENCH_A_WRAP:-}" ] || args+=(--a-wrap "$CUDABENCH_A_WRAP")
  [ -z "${CUDABENCH_B_WRAP:-}" ] || args+=(--b-wrap "$CUDABENCH_B_WRAP")
  ! is_true "${CUDABENCH_FAIL_UNDECIDED:-false}" fail-on-undecided || args+=(--fail-undecided)
  report="$work/stack/report.md"
  run_job "$py" "$CUDABENCH_ROOT/scripts/ab.py" "${args[@]}" || rc=$?
  finish "$rc"
}

mode_machine() {
  local py machine filter out="$work/machine" rc=0 crc=0
  machine="$(machine_label)" || finish $?
  build_here
  py="$(project_python)" || finish 3
  filter="$(rows default)" || finish 3
  mkdir -p "$out"
  run_job "$py" "$CUDABENCH_ROOT/scripts/samples.py" run --bench "$CUDABENCH_ROOT/build/bench" --filter "$filter" \
    --seconds "${CUDABENCH_BUDGET:-150}" --label "$machine" --out "$out/latest.json" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || finish "$rc"
  report="$out/report.md"
  if is_true "${CUDABENCH_REFERENCE:-true}" reference; then
    run_job "$py" "$CUDABENCH_ROOT/scripts/compare.py" "$out/latest.json" --reference --if-any --markdown "$report" || crc=$?
  fi
  if [ -n "${CUDABENCH_HISTORY_BRANCH:-}" ]; then  # the entry, for the history job to push (with the token)
    entries="$(mktemp -d "$work/entries.XXXXXX")"
    run_job "$py" "$CUDABENCH_ROOT/scripts/history.py" record "$out/latest.json" --entries "$entries" --machine "$machine" \
      --run-id "${GITHUB_RUN_ID:-local}-${GITHUB_RUN_ATTEMPT:-1}" --commit "${CUDABENCH_ACTION_REF:-}" >/dev/null || finish $?
  fi
  for r in "$rc" "$crc"; do [ "$r" != 1 ] || finish 1; done  # a slowdown or a wrong result first
  for r in "$rc" "$crc"; do [ "$r" = 0 ] || finish "$r"; done
  finish 0
}

mode_history() {
  local given="${CUDABENCH_ENTRIES:-}" ws dir args=() rc=0
  [ -n "${CUDABENCH_HISTORY_BRANCH:-}" ] || bad "history-branch: empty"
  # A self-hosted runner keeps what a pull request's job wrote (its home's
  # git and pip configuration, caches): the token never goes there.
  [ "${RUNNER_ENVIRONMENT:-}" = github-hosted ] \
    || bad "mode history holds the write token: run its job on a GitHub-hosted runner (runs-on: ubuntu-latest), not on '${RUNNER_ENVIRONMENT:-an unknown runner}'"
  ws="$(realpath -e -- "$GITHUB_WORKSPACE")" || bad "GITHUB_WORKSPACE: '$GITHUB_WORKSPACE' is no folder"
  case "$given" in /*) ;; *) given="$ws/$given" ;; esac
  if [ -z "${CUDABENCH_ENTRIES:-}" ] || [ ! -e "$given" ] || [ -z "$(ls -A "$given" 2>/dev/null)" ]; then
    say "no history entries in '${CUDABENCH_ENTRIES:-}' (the gate ran on uncommitted changes, or failed before measuring)"
    finish 0
  fi
  dir="$(realpath -e -- "$given")"
  # The artifact, downloaded into this job's workspace: a plain folder there (history.py checks each entry).
  [ ! -L "$given" ] && [ -d "$dir" ] && [[ "$dir" == "$ws/"* ]] \
    || bad "entries: '$CUDABENCH_ENTRIES' is not a folder inside the workspace (download the artifact there)"
  ! is_true "${CUDABENCH_CHECK:-false}" check || args+=(--check)
  history_python
  report="$work/history.md"
  with_token run_job "$HISTORY_PY" "$CUDABENCH_ROOT/scripts/history.py" push --repo "$GITHUB_WORKSPACE" \
    --branch "$CUDABENCH_HISTORY_BRANCH" --entries "$dir" "${args[@]}" >"$work/history.txt" 2>&1 || rc=$?
  cat "$work/history.txt" >&2
  { echo "### History ($CUDABENCH_HISTORY_BRANCH)"; echo; sed 's/^/    /' "$work/history.txt"; } >"$report"
  finish "$rc"
}

# HISTORY_PY, the history job's Python: a venv made for this job in its own
# temporary folder from scripts/requirements.txt (pinned), never the
# runner's cache, which a pull request's gate on a shared runner can write
# (mode_history runs only on a fresh GitHub-hosted runner), with no pip
# configuration at all (--isolated).
history_python() {
  local v="$work/history-venv"
  { timeout 120 python3 -I -m venv "$v" &&
    timeout 900 "$v/bin/python" -I -m pip install -q --isolated -r "$CUDABENCH_ROOT/scripts/requirements.txt"; } \
    || { say "could not make the history's venv in $v"; finish 3; }
  export CUDABENCH_VENV="$v"
  HISTORY_PY="$v/bin/python"
}

case "${CUDABENCH_MODE:-}" in
  code|stack|machine|history) check_inputs; "mode_$CUDABENCH_MODE" ;;
  *) CUDABENCH_MODE="${CUDABENCH_MODE:-none}"; bad "mode: '$CUDABENCH_MODE': expected code, stack, machine or history" ;;
esac
