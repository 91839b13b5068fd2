"""fleet merge: one unit's bench processes into one Google Benchmark JSON
and a status file (each array task runs it)."""
import os
import re
import socket
import time


from ...base.errors import EXIT_OK, BadInput, one_line
from ...base.files import check_writable, read_bytes, read_json, refuse_inputs_as_outputs, write_json
from ...results.gbench import load_doc
from ...results import merged


ERROR_TAIL = 64 << 10  # bytes of a stderr file read for its last words


def error_line(path):
    """The line that says why a bench process failed: its last 'bench:'
    line, else its last line; read from the end of a regular file only (a
    FIFO or /dev/zero in the list must not hold the merge)."""
    try:
        text = read_bytes(path, "a log", tail=ERROR_TAIL).decode("utf-8", "replace")
    except BadInput:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("bench:")]
    return (said or lines or [""])[-1][:300]


def read_process_list(path):
    out = []
    try:
        text = read_bytes(path, "a process list").decode("utf-8")
    except BadInput as e:
        raise BadInput(f"--processes {e}")
    except UnicodeDecodeError:
        raise BadInput(f"--processes {path}: not UTF-8 text")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the last line's end, or an empty file
    for i, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) != 3 or not re.fullmatch(r"-?\d+", parts[0]):
            raise BadInput(f"{path}:{i}: expected '<exit code> TAB <json> TAB <stderr>'")
        out.append((int(parts[0]), parts[1], parts[2]))
    return out


def slurm_facts():
    keys = {"job_id": "SLURM_JOB_ID", "array_job_id": "SLURM_ARRAY_JOB_ID", "array_task_id": "SLURM_ARRAY_TASK_ID",
            "node": "SLURMD_NODENAME", "cluster": "SLURM_CLUSTER_NAME", "partition": "SLURM_JOB_PARTITION",
            "job_gpus": "SLURM_JOB_GPUS", "cuda_visible_devices": "CUDA_VISIBLE_DEVICES"}
    return {k: os.environ[v] for k, v in keys.items() if v in os.environ}


def cmd_merge(a):
    procs = read_process_list(a.processes) if a.processes else []
    refuse_inputs_as_outputs([("--out", a.out), ("--status-out", a.status_out)],
                                     [a.processes, a.env] + [js for _, js, _ in procs])
    for flag, path in (("--out", a.out), ("--status-out", a.status_out)):
        if path:
            check_writable(path, flag)  # before any work: exit 2
    docs, processes = [], []
    for rc, js, err in procs:
        entry = {"exit_code": rc, "error": "" if rc == 0 else error_line(err) or f"exit {rc}, no message"}
        if os.path.isfile(js):
            try:
                doc = read_json(js)
                load_doc(doc, js)  # the same checks the report makes
                docs.append(doc)
                entry["results"] = os.path.basename(js)
            except BadInput as e:
                entry["error"] = entry["error"] or one_line(e)
        processes.append(entry)
    status = {"host": a.host, "unit": a.unit, "device": a.device, "task": a.task, "hostname": socket.gethostname(),
              "build": a.build, "fingerprint": a.fingerprint, "started": a.started,
              "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "slurm": slurm_facts(),
              "processes": processes, "results": None, "env": None, "error": a.error or ""}
    if a.env and os.path.isfile(a.env):
        try:
            env = read_json(a.env)
            if isinstance(env, dict):
                status["env"] = os.path.basename(a.env)
                for g in env.get("gpus", []) or []:
                    if isinstance(g, dict) and g.get("index") == a.device:
                        status["pci_bus_id"] = g.get("pci_bus_id", "")
        except BadInput:
            pass
    if docs and a.out:
        doc = merged.merge(docs, a.unit, {"tool": "fleet", "host": a.host, "unit": a.unit, "device": a.device})
        write_json(a.out, doc)
        status["results"] = os.path.basename(a.out)
    write_json(a.status_out, status)
    return EXIT_OK
