#!/usr/bin/env bash
# The collect job of a fleet run (scripts/fleet/fleet.sh submits it with
# --dependency=afterok on the array job): merges RESULTS/<run-id>/<node>/*
# and writes fleet.json, fleet.md and fleet-<group>.png there
# (scripts/fleet.py report). Its exit code is the report's: 0 no
# machine off, 1 a machine off, 3 an incomplete run (0 with --report-only).
#   scripts/fleet/collect.sh    with CUDABENCH_ROOT and CUDABENCH_FLEET_RUN from fleet.sh
set -uo pipefail
# Slurm runs a copy of this file: lib.sh is found through CUDABENCH_ROOT.
. "${CUDABENCH_ROOT:-$(dirname "${BASH_SOURCE[0]}")/../..}/scripts/lib.sh"
script_start "$@"
: "${CUDABENCH_ROOT:?set by fleet.sh}" "${CUDABENCH_FLEET_RUN:?set by fleet.sh}"
py="$(project_python)"
[ -x "$py" ] || py=python3
args=(report "$CUDABENCH_FLEET_RUN" --threshold "${CUDABENCH_FLEET_THRESHOLD:-0.10}")
[ "${CUDABENCH_FLEET_REPORT_ONLY:-0}" = 1 ] && args+=(--report-only)
[ "${CUDABENCH_FLEET_NO_PLOTS:-0}" = 1 ] && args+=(--no-plots)
exec "$py" "$CUDABENCH_ROOT/scripts/fleet.py" "${args[@]}"
