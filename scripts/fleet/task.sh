#!/usr/bin/env bash
# One array task of a fleet run (scripts/fleet/fleet.sh submits it; it is not
# meant to be run by hand). On the node Slurm gave it:
#   1. the build for this node's environment (common.sh: fleet_build), or
#      the one --build named;
#   2. its units: with CUDABENCH_FLEET_MODE=node, "cpu" (the CPU rows) and
#      "gpu<i>" for every usable GPU (the GPU rows, --devices i; i is Slurm's
#      global index when --exclusive gave the task the node's GPUs, else the
#      CUDA ordinal in PCI order), and "gpu-unusable" when Slurm gave GPUs
#      that bench cannot use; with CUDABENCH_FLEET_MODE=gpu, the one GPU Slurm
#      gave it (gpu<its global index, from SLURM_JOB_GPUS>);
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
#   scripts/fleet/task.sh    with CUDABENCH_ROOT, CUDABENCH_FLEET_* from fleet.sh
set -uo pipefail
# Slurm runs a copy of this file: lib.sh is found through CUDABENCH_ROOT.
. "${CUDABENCH_ROOT:-$(dirname "${BASH_SOURCE[0]}")/../..}/scripts/lib.sh"
script_start "$@"
: "${CUDABENCH_ROOT:?set by fleet.sh}" "${CUDABENCH_FLEET_RUN:?set by fleet.sh}"
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

# CUDA numbers GPUs in PCI bus order, as nvidia-smi and Slurm's gres do
# (its default puts the fastest first).
export CUDA_DEVICE_ORDER=PCI_BUS_ID
IFS=, read -r -a slurm_gpus <<<"${SLURM_JOB_GPUS:-}"

# The file name for a unit: <unit>, or <unit>.task<K> when this run already
# measured it on this node (Slurm placed a second task here).
name_for() {
  if [ -e "$out/$1.status.json" ]; then echo "$1.task$task"; else echo "$1"; fi
}
# A status file for a unit that ran nothing: why, in one line.
record_failure() {  # unit, why
  "$py" "$CUDABENCH_ROOT/scripts/fleet.py" merge --host "$host" --unit "$1" --task "$task" \
    --status-out "$out/$(name_for "$1").status.json" --started "$started" --error "$2" || exit 3
}
# The unit a failure before the units are known is filed under.
if [ "$mode" = gpu ]; then first_unit="gpu${slurm_gpus[0]:-}"; else first_unit=cpu; fi

if [ -n "${CUDABENCH_FLEET_BUILD:-}" ]; then
  build="$CUDABENCH_FLEET_BUILD"
  fingerprint="given"
else
  fingerprint="$(fleet_fingerprint)"
  if ! build="$(fleet_build 2>"$out/processes/build.task$task.log")"; then
    record_failure "$first_unit" \
      "the build for environment $fingerprint failed on $host: $(tail -n 1 "$out/processes/build.task$task.log")"
    exit 0
  fi
fi
bench="$build/bench"
# One driver check for every bench process of this task (lib.sh).
check_driver_once "$build" || true

# The GPUs bench can use here (CUDA ordinals, PCI order; none in compute
# mode Prohibited), and why not when it can use none.
gpu_facts="$(probe 60 "$bench" --env=json 2>/dev/null | "$py" "$CUDABENCH_ROOT/scripts/fleet.py" task-gpus "$host" 2>/dev/null)"
mapfile -t usable < <(echo "$gpu_facts" | sed -n 's/^gpu //p')
why="$(echo "$gpu_facts" | sed -n 's/^why //p')"
given="SLURM_JOB_GPUS=${SLURM_JOB_GPUS:-unset}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"

# Units: name, device (-1: none), filter. A GPU is named by Slurm's global
# index when Slurm gave this task GPUs and bench sees as many, else by its
# CUDA ordinal.
units=() devices=() filters=()
if [ "$mode" = gpu ]; then
  if [ "${#usable[@]}" -eq 0 ]; then
    record_failure "$first_unit" "the GPU Slurm gave this task ($given) is not usable: ${why:-bench sees none}"
    exit 0
  fi
  dev="${usable[0]}"
  if [ "${#usable[@]}" -gt 1 ]; then
    # The task sees more GPUs than Slurm gave it (gres without File=, no
    # ConstrainDevices): run on the one Slurm named, in PCI order, or say so.
    dev=""
    for u in "${usable[@]}"; do [ "$u" = "${slurm_gpus[0]:-}" ] && dev="$u"; done
    if [ -z "$dev" ]; then
      record_failure "$first_unit" "this task sees ${#usable[@]} GPUs and cannot tell which one Slurm gave it ($given): give gres.conf File= lines, or ConstrainDevices=yes"
      exit 0
    fi
  fi
  units+=("gpu${slurm_gpus[0]:-$dev}"); devices+=("$dev"); filters+=("$CUDABENCH_FLEET_GPU_FILTER")
else
  units+=(cpu); devices+=(-1); filters+=("$CUDABENCH_FLEET_CPU_FILTER")
  for k in "${!usable[@]}"; do
    if [ "${#slurm_gpus[@]}" -eq "${#usable[@]}" ]; then units+=("gpu${slurm_gpus[$k]}"); else units+=("gpu${usable[$k]}"); fi
    devices+=("${usable[$k]}"); filters+=("$CUDABENCH_FLEET_GPU_FILTER")
  done
  # GPUs that Slurm gave, or that the node's gres lists, and bench cannot
  # use: said, not skipped in silence.
  listed="$(echo "$gpu_facts" | sed -n 's/^listed //p')"
  if [ "${#slurm_gpus[@]}" -gt "${#usable[@]}" ]; then
    record_failure gpu-unusable "Slurm gave this task ${#slurm_gpus[@]} GPU(s) ($given); bench can use ${#usable[@]}${why:+: $why}"
  elif [ "${listed:-0}" -gt "${#usable[@]}" ]; then
    record_failure gpu-unusable "the node's gres lists $listed GPU(s) and Slurm gave this task none ($given); bench can use ${#usable[@]}${why:+: $why}"
  fi
fi

names=()
for u in "${units[@]}"; do names+=("$(name_for "$u")"); done

for k in "${!units[@]}"; do
  dev=()
  [ "${devices[$k]}" -ge 0 ] && dev=(--devices "${devices[$k]}")
  probe 60 "$bench" --env=json --env-out="$out/${names[$k]}.env.json" "${dev[@]}" 2>"$out/processes/${names[$k]}.env.err" >/dev/null || true
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
  "$py" "$CUDABENCH_ROOT/scripts/fleet.py" merge --host "$host" --unit "${units[$k]}" --task "$task" \
    --device "${devices[$k]}" --build "$build" --fingerprint "$fingerprint" --started "$started" \
    --env "$out/${names[$k]}.env.json" --processes "$out/processes/${names[$k]}.list" \
    --out "$out/${names[$k]}.json" --status-out "$out/${names[$k]}.status.json" || exit 3
done
exit 0
