"""A fleet run as the report reads it: its machines (a node's unit), their
status, results and environment, and the group each is compared in."""
import functools
import glob
import json
import os
import re
from dataclasses import dataclass, field

from ...base.errors import BadInput, one_line
from ...base.files import read_json
from ...results.gbench import Run, load_doc
from ...results.stats import median


NO_STATUS = "missing, though the node's results are there"


@dataclass
class Machine:
    host: str
    unit: str
    device: int = -1
    status: list = field(default_factory=list)
    result: object = None  # ResultFile with every task's samples
    env: dict = None
    docs: list = field(default_factory=list)
    group: str = ""

    @property
    def key(self):
        return f"{self.host}/{self.unit}"

    @property
    def context(self):
        return self.result.context if self.result else {}

    def env_doc(self):
        if isinstance(self.env, dict):
            return self.env
        e = self.context.get("cudabench_env")
        return e if isinstance(e, dict) else {}

    # Computed once, when the report first asks: load_run has merged every
    # task's samples by then, and nothing changes them after.
    @functools.cached_property
    def medians(self):
        if not self.result:
            return {}
        return {n: median(r.samples) for n, r in self.result.runs.items() if r.samples and not r.error}

    @functools.cached_property
    def errors(self):
        return {n: r.error for n, r in self.result.runs.items() if r.error} if self.result else {}


def check_name(x, what, path):
    if not isinstance(x, str) or not re.fullmatch(r"[A-Za-z0-9._-]+", x):
        raise BadInput(f"{path}: '{what}' is {json.dumps(x)}: expected a name")
    return x


def unreadable(run_dir, path, e):
    """A file of the run that cannot be used: {machine, file, error}, the
    file relative to the run folder (its node first) and why."""
    rel = os.path.relpath(path, run_dir)
    why = one_line(e)
    why = why[len(path):].lstrip(": ") if why.startswith(path) else why
    node, _, name = rel.partition(os.sep)
    unit = re.sub(r"(\.status|\.env)?\.json$", "", name)
    return {"machine": f"{node}/{unit}" if name else "-", "file": rel, "error": why}


def read_status(path):
    """A status file, checked: an object with names where names go (they become paths)."""
    st = read_json(path)
    if not isinstance(st, dict):
        raise BadInput(f"{path}: expected an object")
    for key in ("host", "unit"):
        check_name(st.get(key), key, path)
    for key in ("results", "env"):
        if st.get(key):
            check_name(st[key], key, path)
    return st


def machine_for(machines, st):
    """The machine a status belongs to: a unit's name for another GPU (its PCI bus id) is another machine."""
    host, unit = st["host"], st["unit"]
    bus = st.get("pci_bus_id") if isinstance(st.get("pci_bus_id"), str) else ""
    prior = machines.get((host, unit))
    if prior and bus and any(x.get("pci_bus_id") not in (None, "", bus) for x in prior.status):
        unit = f"{unit}@{bus}"  # the same name for another GPU: never merged with it
    m = machines.setdefault((host, unit), Machine(host, unit))
    dev = st.get("device", -1)
    if m.device < 0 and isinstance(dev, int) and not isinstance(dev, bool):
        m.device = dev  # the first GPU recorded; a later failure record has none
    m.status.append(st)
    return m


def add_results(m, rpath):
    """A task's results into its machine (another task on the same unit: more processes)."""
    doc = read_json(rpath)
    rf = load_doc(doc, rpath)
    m.docs.append(doc)
    if m.result is None:
        m.result = rf
        return
    for n, r in rf.runs.items():
        mine = m.result.runs.setdefault(n, Run(n))
        mine.samples += r.samples
        mine.throttled += r.throttled
        mine.error = mine.error or r.error
    m.result.benchmarks += rf.benchmarks


def without_status(run_dir, used):
    """Results or environment reports that no status file names (a task
    that ended before it recorded how): named, left out."""
    out = {}
    for path in sorted(glob.glob(os.path.join(glob.escape(run_dir), "*", "*.json"))):
        stem = re.sub(r"(\.env)?\.json$", "", path)
        if path.endswith(".status.json") or path in used or os.path.exists(stem + ".status.json"):
            continue
        out.setdefault(stem + ".status.json", []).append(os.path.relpath(path, run_dir))
    return [dict(unreadable(run_dir, st, ""), error=f"{NO_STATUS} ({', '.join(rels)}): the task did not record how "
                 "it ended; they are left out of the report") for st, rels in out.items()]


def load_run(run_dir):
    """(run.json, the machines, the files that could not be used: each
    named with why, for the report to name, never to stop it)."""
    if not os.path.isdir(run_dir):
        raise BadInput(f"{run_dir}: no such run folder")
    meta, lost = {}, []
    if os.path.exists(os.path.join(run_dir, "run.json")):
        try:
            meta = read_json(os.path.join(run_dir, "run.json"))
            if not isinstance(meta, dict):
                raise BadInput("expected an object")
        except BadInput as e:
            meta = {}
            lost.append(unreadable(run_dir, os.path.join(run_dir, "run.json"), e))
    machines, used = {}, set()
    for path in sorted(glob.glob(os.path.join(glob.escape(run_dir), "*", "*.status.json"))):
        try:
            st = read_status(path)
        except BadInput as e:
            lost.append(unreadable(run_dir, path, e))
            continue
        m = machine_for(machines, st)
        for key in ("results", "env"):
            fpath = os.path.join(os.path.dirname(path), st[key]) if st.get(key) else None
            used.add(fpath)
            try:
                if key == "results" and fpath:
                    add_results(m, fpath)
                elif fpath and m.env is None:
                    e = read_json(fpath)
                    m.env = e if isinstance(e, dict) else None
            except BadInput as e:
                lost.append(dict(unreadable(run_dir, fpath, e), machine=m.key))
    lost += without_status(run_dir, used)
    if not machines and not meta and not lost:
        raise BadInput(f"{run_dir}: no fleet results (no <host>/<unit>.status.json and no run.json)")
    out = list(machines.values())
    for m in out:
        m.group = group_of(m)
    return meta, out, lost


def gpu_of(m):
    """The environment report's entry for the machine's GPU ({} for a CPU unit)."""
    if not m.unit.startswith("gpu"):
        return {}
    for g in m.env_doc().get("gpus", []) or []:
        if isinstance(g, dict) and g.get("index") == m.device:
            return g
    return {}


def group_of(m):
    c = m.context
    if not m.result and not m.env:
        return "no results"
    if m.unit.startswith("gpu"):
        name = gpu_of(m).get("name") or c.get("gpu_name")
        return f"GPU: {name}" if name and name != "none" else "GPU: unknown"
    host = m.env_doc().get("host", {}) or {}
    model = c.get("host_cpu_model") or host.get("cpu_model")
    threads = c.get("host_threads") or host.get("threads") or c.get("num_cpus")
    return f"CPU: {model} x{threads}" if model else "CPU: unknown"
