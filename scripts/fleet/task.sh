#!/usr/bin/env bash
# One array task of a fleet run (scripts/fleet/fleet.sh submits it; it is not
# meant to be run by hand). On the node Slurm gave it:
#   1. the build for this node's environment (common.sh: fleet_build), or
#      the one --build named;
#   2. its units: with CUDABENCH_FLEET_MODE=node, "cpu" (the CPU rows) and
#      "gpu<i>" for every usable GPU (the GPU rows, --devices i); with
#      CUDABENCH_FLEET_MODE=gpu, the one GPU Slurm gave it (gpu<its global
#      index, from SLURM_JOB_GPUS>, run as device 0, the only one it sees);
#   3. for each unit, bench --env=json into <host>/<unit>.env.json, then
#      CUDABENCH_FLEET_PROCESSES bench processes (units interleaved), each with
#      CUDABENCH_FLEET_REPS repetitions, merged into <host>/<unit>.json (one
#      sample per process: its median), and <host>/<unit>.status.json (what
#      ran, each process's exit code and first error line).
# <host> is the Slurm node name (SLURMD_NODENAME). A second task that lands
# on a node already measured in this run (Slurm placed two there) writes
# <unit>.task<K>.json beside it; the collect merges them as more processes.
#
# Exit codes: 0 the outcome is recorded, whatever it was (a failed check, a
# build that failed here: the collect reports it); 3 nothing could be
# recorded (the shared folder cannot be written), so the collect job, which
# waits with afterok, is cancelled and fleet.sh names this task.
set -uo pipefail
: "${CUDABENCH_ROOT:?set by fleet.sh}" "${CUDABENCH_FLEET_RUN:?set by fleet.sh}"
. "$CUDABENCH_ROOT/scripts/lib.sh"
. "$CUDABENCH_ROOT/scripts/fleet/common.sh"
run="$CUDABENCH_FLEET_RUN"
mode="${CUDABENCH_FLEET_MODE:-node}"
host="${SLURMD_NODENAME:-$(hostname -s)}"
task="${SLURM_ARRAY_TASK_ID:-0}"
out="$run/$host"
mkdir -p "$out/processes" || { echo "fleet task $task: cannot write $out" >&2; exit 3; }
py="$(project_python)"
[ -x "$py" ] || py=python3
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

# A status file for a unit that ran nothing: why, in one line.
record_failure() {  # unit, why
  "$py" "$CUDABENCH_ROOT/scripts/fleet/fleet.py" merge --host "$host" --unit "$1" --task "$task" \
    --status-out "$out/$1.status.json" --started "$started" --error "$2" || exit 3
}

if [ -n "${CUDABENCH_FLEET_BUILD:-}" ]; then
  build="$CUDABENCH_FLEET_BUILD"
  fingerprint="given"
else
  fingerprint="$(fleet_fingerprint)"
  if ! build="$(fleet_build 2>"$out/processes/build.task$task.log")"; then
    record_failure "$([ "$mode" = gpu ] && echo "gpu${SLURM_JOB_GPUS%%,*}" || echo cpu)" \
      "the build for environment $fingerprint failed on $host: $(tail -n 1 "$out/processes/build.task$task.log")"
    exit 0
  fi
fi
bench="$build/bench"

# Units: name, device (-1: none), filter.
units=() devices=() filters=()
if [ "$mode" = gpu ]; then
  unit="gpu${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-0}}"
  unit="${unit%%,*}"
  if ! "$bench" --env --require-gpu >/dev/null 2>&1; then
    why="$("$bench" --env=json 2>/dev/null | "$py" -c 'import json, sys; print(json.load(sys.stdin).get("gpu_unusable_reason", ""))' 2>/dev/null)"
    record_failure "$unit" "the GPU Slurm gave this task (SLURM_JOB_GPUS=${SLURM_JOB_GPUS:-unset}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}) is not usable: ${why:-bench --env says so}"
    exit 0
  fi
  units+=("$unit"); devices+=(0); filters+=("$CUDABENCH_FLEET_GPU_FILTER")
else
  units+=(cpu); devices+=(-1); filters+=("$CUDABENCH_FLEET_CPU_FILTER")
  if "$bench" --env --require-gpu >/dev/null 2>&1; then
    for i in $("$bench" --env=json 2>/dev/null | "$py" -c 'import json, sys
for g in json.load(sys.stdin)["gpus"]:
    if g.get("nvml", {}).get("compute_mode") != 2: print(g["index"])'); do
      units+=("gpu$i"); devices+=("$i"); filters+=("$CUDABENCH_FLEET_GPU_FILTER")
    done
  fi
fi

# File names: <unit> or, when this run already measured that unit here, <unit>.task<K>.
names=()
for u in "${units[@]}"; do
  if [ -e "$out/$u.status.json" ]; then names+=("$u.task$task"); else names+=("$u"); fi
done

for k in "${!units[@]}"; do
  dev=()
  [ "${devices[$k]}" -ge 0 ] && dev=(--devices "${devices[$k]}")
  "$bench" --env=json --env-out="$out/${names[$k]}.env.json" "${dev[@]}" 2>"$out/processes/${names[$k]}.env.err" >/dev/null || true
  : >"$out/processes/${names[$k]}.list"
done
# Each process: a line "<exit code> TAB <json> TAB <stderr>" in <name>.list.
for p in $(seq "${CUDABENCH_FLEET_PROCESSES:-3}"); do
  for k in "${!units[@]}"; do
    dev=()
    [ "${devices[$k]}" -ge 0 ] && dev=(--devices "${devices[$k]}")
    base="$out/processes/${names[$k]}.p$p"
    "$bench" --benchmark_filter="${filters[$k]}" --benchmark_repetitions="${CUDABENCH_FLEET_REPS:-3}" \
      --benchmark_min_time="${CUDABENCH_FLEET_MIN_TIME:-0.1}" --benchmark_out="$base.json" \
      --benchmark_out_format=json "${dev[@]}" >/dev/null 2>"$base.err"
    printf '%s\t%s\t%s\n' "$?" "$base.json" "$base.err" >>"$out/processes/${names[$k]}.list"
  done
done
for k in "${!units[@]}"; do
  "$py" "$CUDABENCH_ROOT/scripts/fleet/fleet.py" merge --host "$host" --unit "${units[$k]}" --task "$task" \
    --device "${devices[$k]}" --build "$build" --fingerprint "$fingerprint" --started "$started" \
    --env "$out/${names[$k]}.env.json" --processes "$out/processes/${names[$k]}.list" \
    --out "$out/${names[$k]}.json" --status-out "$out/${names[$k]}.status.json" || exit 3
done
exit 0
