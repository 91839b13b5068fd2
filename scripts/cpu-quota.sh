#!/usr/bin/env bash
# Run a command under a CPU quota: a genuine, known slowdown for the A/B
# runner's power check (scripts/ab.py --b-wrap "scripts/cpu-quota.sh 0.9").
#
#   scripts/cpu-quota.sh [-h|--help] FRACTION COMMAND [ARGS...]
#
# FRACTION of all the machine's cores (0.9 on 2 cores: 180 ms of CPU time per
# 100 ms period), through a cgroup of its own: cgroup v1's
# cpu.cfs_quota_us/cpu.cfs_period_us, or cgroup v2's cpu.max. A process that
# keeps every core busy then runs about 1/FRACTION times longer; a
# single-threaded one is not slowed. CPU_QUOTA_PERIOD_MS (1 to 1000, default
# 100) sets the period: a measurement much longer than it is slowed evenly,
# one that fits in a period's quota may not be slowed at all (the action's
# test takes 20 for 50 ms measurements). Needs root (or a delegated cgroup). The
# cgroup is removed when the command ends. Exit: the command's, 2 for a bad
# FRACTION, 3 when no cgroup can be made.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
script_start "$@"
frac="${1:-}"
if ! [[ "$frac" =~ ^(0?\.[0-9]+|1(\.0*)?)$ ]] || [ $# -lt 2 ]; then
  echo "cpu-quota: usage: cpu-quota.sh FRACTION COMMAND [ARGS...] (FRACTION in (0, 1], got '${frac}')" >&2
  exit 2
fi
shift
ms="${CPU_QUOTA_PERIOD_MS:-100}"
[[ "$ms" =~ ^[1-9][0-9]{0,3}$ ]] && [ "$ms" -le 1000 ] || {
  echo "cpu-quota: CPU_QUOTA_PERIOD_MS '$ms': expected milliseconds from 1 to 1000" >&2; exit 2; }
period=$((ms * 1000))
# All the machine's cores: nproc --all, since plain nproc follows
# OMP_NUM_THREADS and this process's affinity.
quota="$(awk -v f="$frac" -v n="$(nproc --all)" -v p="$period" 'BEGIN { printf "%d", f * n * p }')"
if [ "$quota" -lt 1000 ]; then
  echo "cpu-quota: FRACTION '$frac' is too small (the kernel takes 1 ms per period at least)" >&2
  exit 2
fi
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cg="/sys/fs/cgroup/cudabench-quota-$$"
  { mkdir "$cg" && echo "$quota $period" > "$cg/cpu.max"; } 2>/dev/null || {
    rmdir "$cg" 2>/dev/null || true
    echo "cpu-quota: cannot make a cgroup with cpu.max under /sys/fs/cgroup (root, and the cpu controller in cgroup.subtree_control)" >&2
    exit 3; }
elif [ -d /sys/fs/cgroup/cpu ]; then
  cg="/sys/fs/cgroup/cpu/cudabench-quota-$$"
  { mkdir "$cg" && echo "$period" > "$cg/cpu.cfs_period_us" && echo "$quota" > "$cg/cpu.cfs_quota_us"; } 2>/dev/null || {
    rmdir "$cg" 2>/dev/null || true
    echo "cpu-quota: cannot make a cgroup under /sys/fs/cgroup/cpu (needs root)" >&2
    exit 3; }
else
  echo "cpu-quota: no cgroup file system at /sys/fs/cgroup" >&2
  exit 3
fi
# Join the cgroup in a child shell, so this shell can leave it and remove it.
child=""
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
pass_on() { [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true; }  # it ends, then so do we
on_ending_signals pass_on
bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' cpu-quota "$cg" "$@" &
child=$!
rc=0
wait "$child" || rc=$?
# A trapped signal interrupts wait: wait for the child itself to end.
while kill -0 "$child" 2>/dev/null; do wait "$child" || rc=$?; done
exit "$rc"
