#!/usr/bin/env bash
# The fleet mode: run cudabench on every node, or every GPU, of a Slurm
# cluster, and name the machine that is off.
#
#   scripts/fleet/fleet.sh [submit] [options]      submit a fleet run
#   scripts/fleet/fleet.sh collect RUN_DIR [--threshold X] [--report-only] [--no-plots]
#   scripts/fleet/fleet.sh fingerprint             this machine's build environment
#
# submit, from a login node, in a clone on a filesystem every node shares:
#   1. the build: one per distinct environment (source revision, CPU
#      architecture, OS, glibc, compiler, nvcc, LibTorch, Google Benchmark),
#      in --builds (default build-fleet/<fingerprint>); made here for this
#      host's environment, and by the first task on any node whose
#      environment differs (under a lock, the others wait). See
#      docs/fleet.md, "Builds", for why.
#   2. an array job (scripts/fleet/task.sh): one task per node (--exclusive),
#      or with --per-gpu one per GPU (--gpus-per-task=1). Each runs bench
#      --env=json and --processes bench processes of --repetitions each: the
#      CPU rows on every node, the GPU rows on every GPU, and writes
#      RESULTS/<run-id>/<node>/<cpu|gpuN>.json (+ .env.json, .status.json).
#   3. a collect job, --dependency=afterok on the array
#      (scripts/fleet/collect.sh: fleet.py report): RESULTS/<run-id>/fleet.md,
#      fleet.json and fleet-<group>.png.
# Options:
#   --per-gpu            one task per GPU instead of one per node
#   --tasks N            how many array tasks (default: the partition's nodes
#                        that are up, or with --per-gpu their GPUs, from sinfo)
#   --partition P        the partition (default: $SBATCH_PARTITION, else Slurm's
#                        default); its nodes are counted, both jobs go there
#   --results DIR        the shared results folder (default results/fleet)
#   --run-id ID          the run's folder name (default: UTC time and source revision)
#   --builds DIR         where the per-environment builds go (default build-fleet)
#   --build DIR          use this one build on every node instead
#   --cpu-filter REGEX   the CPU rows (default: the families' gate rows, bench --rows=gate-cpu)
#   --gpu-filter REGEX   the GPU rows (default: bench --rows=gate-gpu)
#   --processes N        bench processes per machine (default 3): the samples
#   --repetitions N      repetitions in each process (default 3)
#   --min-time S         --benchmark_min_time (default 0.1)
#   --threshold X        how far from the group median is off (default 0.10)
#   --time T             each job's time limit (default 01:00:00)
#   --sbatch-arg ARG     one more sbatch argument for both jobs (repeatable),
#                        e.g. --sbatch-arg=--account=perf (not the partition,
#                        the array, the dependency or the placement: fleet.sh
#                        sets those)
#   --report-only        the collect exits 0 whatever it finds
#   --no-plots           no PNG (the collect then needs no matplotlib)
#   --wait               wait for the collect job, print its findings, and
#                        exit with its code
#
# Exit codes: 0 submitted (with --wait: no machine is off); 1 (--wait) a
# machine is off: slower than its group, on the slow side of a bimodal
# group, or a wrong result; 2 bad usage or input, one line naming it; 3
# Slurm is missing or refused the jobs, the build failed, or (--wait) a task
# failed so the collect never ran, or the run is incomplete; 128+N signal N.
set -uo pipefail
CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export CUDABENCH_ROOT
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
. "$CUDABENCH_ROOT/scripts/fleet/common.sh"
here="$CUDABENCH_ROOT/scripts/fleet"
die() { echo "fleet: $2" >&2; exit "$1"; }
array_job="" collect_job=""
on_signal() {  # jobs already submitted go on: say which
  [ -z "$array_job" ] || echo "fleet: stopped; the jobs go on (scancel $array_job $collect_job to stop them)" >&2
  exit "$(exit_status_of "$1")"
}
on_ending_signals on_signal

case "${1:-}" in
  submit) shift ;;
  collect)
    shift
    [ $# -ge 1 ] || die 2 "collect needs the run folder (RESULTS/<run-id>)"
    py="$(project_python)"; [ -x "$py" ] || py=python3
    exec "$py" "$here/../fleet.py" report "$@" ;;
  fingerprint) fleet_environment; echo "fingerprint $(fleet_fingerprint)"; exit 0 ;;
esac

per_gpu=0 tasks="" partition="" results="" run_id="" builds="" build="" wait=0 report_only=0 no_plots=0
cpu_filter="" gpu_filter=""  # default: the families' gate rows, from the build
processes=3 reps=3 min_time=0.1 threshold=0.10 time_limit=01:00:00
sbatch_args=()
need() { [ $# -ge 2 ] || die 2 "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  arg="$1"
  if [[ "$arg" == --*=* ]]; then set -- "${arg%%=*}" "${arg#*=}" "${@:2}"; arg="$1"; fi
  case "$arg" in
    -h|--help) usage_from_header; exit 0 ;;
    --per-gpu) per_gpu=1; shift ;;
    --wait) wait=1; shift ;;
    --report-only) report_only=1; shift ;;
    --no-plots) no_plots=1; shift ;;
    --tasks) need "$@"; tasks="$2"; shift 2 ;;
    --partition) need "$@"; partition="$2"; shift 2 ;;
    --results) need "$@"; results="$2"; shift 2 ;;
    --run-id) need "$@"; run_id="$2"; shift 2 ;;
    --builds) need "$@"; builds="$2"; shift 2 ;;
    --build) need "$@"; build="$2"; shift 2 ;;
    --cpu-filter) need "$@"; [ -n "$2" ] || die 2 "--cpu-filter: empty (expected a regular expression)"
                  cpu_filter="$2"; shift 2 ;;
    --gpu-filter) need "$@"; [ -n "$2" ] || die 2 "--gpu-filter: empty (expected a regular expression)"
                  gpu_filter="$2"; shift 2 ;;
    --processes) need "$@"; processes="$2"; shift 2 ;;
    --repetitions) need "$@"; reps="$2"; shift 2 ;;
    --min-time) need "$@"; min_time="$2"; shift 2 ;;
    --threshold) need "$@"; threshold="$2"; shift 2 ;;
    --time) need "$@"; time_limit="$2"; shift 2 ;;
    --sbatch-arg)
      need "$@"
      case "$2" in
        -p*|--partition*) die 2 "--sbatch-arg $2: give the partition with --partition (the nodes are counted in it)" ;;
        --array*|--dependency*|--exclusive*|--gpus-per-task*) die 2 "--sbatch-arg $2: fleet.sh sets this itself" ;;
      esac
      sbatch_args+=("$2"); shift 2 ;;
    *) die 2 "unknown argument $arg (see --help)" ;;
  esac
done

# ---- check everything before anything is built or submitted ----
command -v python3 >/dev/null || die 3 "the fleet mode needs python3, which is not on PATH"
count_ok() { [[ "$2" =~ ^[1-9][0-9]{0,3}$ ]] || die 2 "$1 $2: expected a whole number from 1 to 9999"; }
[ -z "$tasks" ] || count_ok --tasks "$tasks"
count_ok --processes "$processes"
count_ok --repetitions "$reps"
fleet_step() { python3 "$CUDABENCH_ROOT/scripts/fleet.py" "$@"; }  # fleet.py's small steps (slurm.py)
fleet_step check-submit --min-time "$min_time" --threshold "$threshold" || exit
if [ -z "$run_id" ]; then
  run_id="$(date -u +%Y%m%d-%H%M%S)-$(git -C "$CUDABENCH_ROOT" rev-parse --short HEAD 2>/dev/null || echo norev)"
fi
[[ "$run_id" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die 2 "--run-id $run_id: expected letters, digits, '.', '_' or '-'"
results="${results:-$(fleet_default_results)}"
run="$results/$run_id"
[ ! -e "$run" ] || die 2 "--run-id $run_id: $run already exists"
if [ -n "$build" ]; then
  [ -x "$build/bench" ] || die 2 "--build $build: no bench executable there"
  build="$(cd "$build" && pwd)"
fi
for b in sbatch sinfo scontrol; do
  command -v "$b" >/dev/null 2>&1 || die 3 "$b not found: the fleet mode needs Slurm's client commands (slurm-client)"
done

# ---- how many tasks, on which nodes ----
# Nodes that can take a job: idle, mixed, allocated or completing, and not
# drained, down or not responding (sinfo -t idle would list "drain" too;
# "~" is a powered-down node Slurm powers up for the job).
# Without --partition, the jobs go to Slurm's default partition: count its
# nodes only (sinfo lists every partition's).
# sbatch takes $SBATCH_PARTITION too; the partition found is the one both
# sinfo and sbatch are given, and run.json records.
partition="${partition:-${SBATCH_PARTITION:-}}"
[ -n "$partition" ] || partition="$(sinfo -h -o '%P' 2>/dev/null | sed -n 's/\*$//p' | head -n1)"
part=()
[ -z "$partition" ] || part=(--partition="$partition")
sinfo_out="$(sinfo -h -N "${part[@]}" -o '%N|%G|%t' 2>&1)" || die 3 "sinfo failed: $(echo "$sinfo_out" | head -n1)"
FLEET_SKIPPED="$(echo "$sinfo_out" | grep -vE '\|(idle|mix|alloc|comp)~?$' | awk -F'|' 'NF == 3 {print $1 " (" $3 ")"}' | sort -u)"
sinfo_out="$(echo "$sinfo_out" | grep -E '\|(idle|mix|alloc|comp)~?$' || true)"
mapfile -t nodes < <(echo "$sinfo_out" | cut -d'|' -f1 | sed '/^$/d' | sort -u)
[ "${#nodes[@]}" -gt 0 ] || die 3 "no node can take a job${partition:+ in partition $partition} (sinfo lists none idle, mixed or allocated and not drained)"
expected_nodes=()
# {node: GPUs} from the nodes' gres (gpu:8, gpu:h200:8(S:0-1)): what the
# report checks each node's GPU results against.
FLEET_GPUS="$(echo "$sinfo_out" | sort -u | fleet_step gres)" || die 3 "cannot read the nodes' gres"
if [ "$per_gpu" = 1 ]; then
  gpus="$(echo "$sinfo_out" | sort -u | fleet_step gres --total)" || die 3 "cannot read the nodes' gres"
  [ "$gpus" -gt 0 ] || [ -n "$tasks" ] || die 2 "--per-gpu: no node${partition:+ of partition $partition} lists a gpu gres (see docs/fleet.md: gres.conf)"
  tasks="${tasks:-$gpus}"
else
  if [ -z "$tasks" ]; then tasks="${#nodes[@]}"; expected_nodes=("${nodes[@]}"); fi
fi

# ---- the build ----
export CUDABENCH_FLEET_BUILDS
CUDABENCH_FLEET_BUILDS="$(mkdir -p "${builds:-$(fleet_default_builds)}" && cd "${builds:-$(fleet_default_builds)}" && pwd)" \
  || die 2 "--builds ${builds:-$(fleet_default_builds)}: cannot create it"
if [ -z "$build" ]; then
  local_build="$(fleet_build)" || die 3 "the build for this host's environment ($(fleet_fingerprint)) failed"
else
  local_build="$build"
fi
[ -n "$cpu_filter" ] || cpu_filter="$(family_rows gate-cpu "$local_build")" || die 3 "no gate rows from $local_build/bench"
if [ -z "$gpu_filter" ] && ! gpu_filter="$(family_rows gate-gpu "$local_build" 2>/dev/null)"; then
  gpu_filter='^$'  # matches no row
  echo "fleet: $local_build was built without GPU families: no GPU rows (--gpu-filter names them)" >&2
fi
if [ "$per_gpu" = 0 ]; then
  "$local_build/bench" --benchmark_list_tests --benchmark_filter="$cpu_filter" >/dev/null 2>&1 \
    || die 2 "--cpu-filter $cpu_filter: matches no benchmark of $local_build/bench (see bench --benchmark_list_tests)"
fi

mkdir -p "$run/logs" || die 2 "--results $results: cannot create $run"
write_run_json() {  # the run's parameters, for the collect; with the job ids once known
  fleet_step run-json "$run/run.json" "$@" || die 3 "cannot write $run/run.json"
}
run="$(cd "$run" && pwd)"
mode="$([ "$per_gpu" = 1 ] && echo gpu || echo node)"
source_rev="$(git -C "$CUDABENCH_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$CUDABENCH_ROOT" diff --quiet HEAD 2>/dev/null || source_rev+="+changes"
# What the jobs read (sbatch --export=ALL passes this environment on).
export CUDABENCH_FLEET_RUN="$run" CUDABENCH_FLEET_MODE="$mode"
export CUDABENCH_FLEET_BUILD="$build" CUDABENCH_FLEET_CPU_FILTER="$cpu_filter" CUDABENCH_FLEET_GPU_FILTER="$gpu_filter"
export CUDABENCH_FLEET_PROCESSES="$processes" CUDABENCH_FLEET_REPS="$reps" CUDABENCH_FLEET_MIN_TIME="$min_time"
export CUDABENCH_FLEET_THRESHOLD="$threshold" CUDABENCH_FLEET_REPORT_ONLY="$report_only" CUDABENCH_FLEET_NO_PLOTS="$no_plots"
export CUDABENCH_FLEET_GPUS="$FLEET_GPUS"
# What run.json records.
FLEET_EXPECTED="$(printf '%s\n' "${expected_nodes[@]}")"
FLEET_SUBMITTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
FLEET_SUBMIT_HOST="$(hostname)"
export FLEET_RUN_ID="$run_id" FLEET_TASKS="$tasks" FLEET_EXPECTED FLEET_SKIPPED FLEET_GPUS FLEET_SUBMITTED FLEET_SUBMIT_HOST
export FLEET_PARTITION="$partition" FLEET_SOURCE="$source_rev"
write_run_json "" ""

# ---- submit ----
common=(--parsable "${part[@]}" --time="$time_limit" --export=ALL "${sbatch_args[@]}")
if [ "$per_gpu" = 1 ]; then placement=(--ntasks=1 --gpus-per-task=1); else placement=(--nodes=1 --ntasks=1 --exclusive); fi
# sbatch --parsable prints "<id>" or "<id>;<cluster>" as its last line of
# stdout; warnings (a job_submit plugin's) go to stderr, kept apart.
submit() {  # what, sbatch arguments...
  local what="$1" err id; shift
  err="$(mktemp)"
  id="$(sbatch "$@" 2>"$err" | tail -n1)"
  id="${id%%;*}"
  if ! [[ "$id" =~ ^[0-9]+$ ]]; then
    echo "fleet: sbatch refused the $what: $(tail -n1 "$err")" >&2
    rm -f "$err"; return 1
  fi
  rm -f "$err"; echo "$id"
}
array_job="$(submit "array job" "${common[@]}" --job-name=cudabench-fleet --array="0-$((tasks - 1))" \
  "${placement[@]}" --output="$run/logs/task-%a.out" "$here/task.sh")" || exit 3
collect_job="$(submit "collect job" "${common[@]}" --job-name=cudabench-fleet-collect \
  --dependency="afterok:$array_job" --kill-on-invalid-dep=yes --nodes=1 --ntasks=1 \
  --output="$run/logs/collect.out" "$here/collect.sh")" || {
  scancel "$array_job" 2>/dev/null
  die 3 "the array job $array_job is cancelled"
}
write_run_json "$array_job" "$collect_job"
what="$([ "$per_gpu" = 1 ] && echo "one per GPU" || echo "one per node")"
echo "fleet: run $run_id: array job $array_job ($tasks tasks, $what), collect job $collect_job (afterok); results in $run" >&2
[ "$wait" = 1 ] || exit 0

# ---- wait for the collect job ----
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | head -n1; }
# scontrol forgets a job MinJobAge after it ends ("Invalid job id"); any
# other failure (slurmctld busy) is retried for 5 minutes.
state="" failures=0 err="$(mktemp)"
start_progress "fleet: run $run_id" "array tasks"
while :; do
  ended="$(scontrol show job -o "$array_job" 2>/dev/null | grep -cE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) ' || true)"
  say_progress "${ended:-0}" "$tasks"
  line="$(scontrol show job -o "$collect_job" 2>"$err" | grep -m1 'JobState=' || true)"
  state="$(echo " $line" | field JobState)"
  case "$state" in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) break ;;
    "")
      if grep -qi "invalid job id" "$err"; then break; fi
      failures=$((failures + 1))
      [ "$failures" -lt 150 ] || die 3 "scontrol gives no state for job $collect_job ($(head -n1 "$err")); the jobs go on: scancel $array_job $collect_job" ;;
    *) failures=0 ;;
  esac
  sleep 2
done
stop_progress
rm -f "$err"
if [ -f "$run/logs/collect.out" ]; then cat "$run/logs/collect.out"; fi
case "$state" in
  COMPLETED) exit 0 ;;
  FAILED)
    rc="$(echo " $line" | field ExitCode)"; rc="${rc%%:*}"
    case "$rc" in 1) exit 1 ;; *) exit 3 ;; esac ;;
  "")
    # scontrol forgot the job (MinJobAge): the report says how it ended.
    if [ -f "$run/fleet.json" ]; then
      rc="$(fleet_step exit-code "$run/fleet.json" 2>/dev/null || echo 3)"
      [ "$report_only" = 1 ] && rc=0
      exit "$rc"
    fi
    die 3 "the collect job $collect_job is gone and left no report in $run" ;;
esac
# The collect never ran: name the tasks that did not end well.
echo "fleet: the collect job ended $state: an array task did not complete" >&2
scontrol show job -o "$array_job" 2>/dev/null | while read -r t; do
  s="$(echo " $t" | field JobState)"
  [ "$s" = COMPLETED ] && continue
  echo "fleet: task $(echo " $t" | field ArrayTaskId) on $(echo " $t" | field NodeList): $s, exit $(echo " $t" | field ExitCode): see $run/logs/task-$(echo " $t" | field ArrayTaskId).out" >&2
done
exit 3
