"""The fleet's small steps around Slurm, for fleet.sh and task.sh (which
carried them as inline Python): the submit's checks, the GPUs each node's
gres lists, the run's parameters (run.json), a task's usable GPUs, and the
report's exit code."""
import json
import math
import os
import re
import sys

from ...base.errors import BadInput
from ...base.files import write_whole

GRES_GPUS = re.compile(r"gpu(?::[^:(]+)?:(\d+)")  # gpu:8, gpu:h200:8(S:0-1)


def check_submit(min_time, threshold):
    """fleet.sh's numbers, refused in one line each (2)."""
    def number(text):
        try:
            x = float(text)
        except ValueError:
            return math.nan
        return x
    if not 0 < number(min_time) <= 60:
        raise BadInput(f"--min-time {min_time}: expected seconds in (0, 60], e.g. 0.1")
    if not 0 < number(threshold) < 1:
        raise BadInput(f"--threshold {threshold}: expected a relative change in (0, 1), e.g. 0.10")


def gres_gpus(lines):
    """{node: GPUs} from sinfo's "%N|%G|%t" lines: what the report checks each node's GPU results against."""
    out = {}
    for line in lines:
        node, gres = (line.split("|") + [""])[:2]
        for g in gres.split(","):
            m = GRES_GPUS.match(g.strip())
            if m:
                out[node] = out.get(node, 0) + int(m.group(1))
    return out


def run_json(path, array_job, collect_job, e=os.environ):
    """The run's parameters, from fleet.sh's environment, for the collect: written whole."""
    doc = {"run_id": e["FLEET_RUN_ID"], "mode": e["CUDABENCH_FLEET_MODE"], "tasks": int(e["FLEET_TASKS"]),
           "expected_nodes": [n for n in e["FLEET_EXPECTED"].split("\n") if n],
           "skipped_nodes": [n for n in e["FLEET_SKIPPED"].split("\n") if n],
           "expected_gpus": json.loads(e["FLEET_GPUS"]),
           "submitted": e["FLEET_SUBMITTED"], "submit_host": e["FLEET_SUBMIT_HOST"], "source": e["FLEET_SOURCE"],
           "partition": e.get("FLEET_PARTITION") or None, "build": e.get("CUDABENCH_FLEET_BUILD") or None,
           "builds": e["CUDABENCH_FLEET_BUILDS"], "cpu_filter": e["CUDABENCH_FLEET_CPU_FILTER"],
           "gpu_filter": e["CUDABENCH_FLEET_GPU_FILTER"], "processes": int(e["CUDABENCH_FLEET_PROCESSES"]),
           "repetitions": int(e["CUDABENCH_FLEET_REPS"]), "min_time": float(e["CUDABENCH_FLEET_MIN_TIME"]),
           "threshold": float(e["CUDABENCH_FLEET_THRESHOLD"]),
           "array_job": array_job or None, "collect_job": collect_job or None}
    write_whole(path, json.dumps(doc, indent=1))


def task_gpus(env_text, host, gres=None):
    """For task.sh, from bench --env=json: "why <the reason none is usable>",
    "gpu N" per GPU bench can use (not in compute mode Prohibited), and
    "listed N", the GPUs the node's gres lists (CUDABENCH_FLEET_GPUS)."""
    gres = json.loads(gres or os.environ.get("CUDABENCH_FLEET_GPUS") or "{}")
    try:
        e = json.loads(env_text)
    except ValueError:
        e = {"gpu_unusable_reason": "bench --env=json gave no report"}
    out = [f"why {e.get('gpu_unusable_reason') or ''}"]
    out += [f"gpu {g['index']}" for g in (e.get("gpus", []) if e.get("gpu_usable") else [])
            if g.get("nvml", {}).get("compute_mode") != 2]
    return out + [f"listed {gres.get(host, 0)}"]


def report_exit_code(path):
    """The report's exit code as fleet.json records it; 3 when it cannot be read."""
    try:
        with open(path) as f:
            return int(json.load(f).get("exit_code", 3))
    except (OSError, ValueError, AttributeError, TypeError):
        return 3


def cmd_slurm(a):
    """fleet.py's small steps: each prints its answer on stdout."""
    if a.cmd == "check-submit":
        check_submit(a.min_time, a.threshold)
    elif a.cmd == "gres":
        gpus = gres_gpus(sys.stdin)
        print(sum(gpus.values()) if a.total else json.dumps(gpus))
    elif a.cmd == "run-json":
        run_json(a.path, a.array_job, a.collect_job)
    elif a.cmd == "task-gpus":
        print("\n".join(task_gpus(sys.stdin.read(), a.host)))
    elif a.cmd == "exit-code":
        print(report_exit_code(a.fleet_json))
    return 0
