"""The fleet mode's two Python steps: merge (in each array task) and report
(the collect job).

    fleet.py merge --host H --unit U --status-out FILE [--out FILE] [--processes LIST] [--env FILE] ...
    fleet.py report RUN_DIR [--threshold 0.10] [--report-only] [--no-plots]

merge: one unit's bench processes (LIST: a line "<exit code> TAB <json> TAB
<stderr>" per process) into one Google Benchmark JSON, one entry per
benchmark per process (the process's median: the process is the unit of
sampling, as in scripts/ab.py), and a status file: what ran, each
process's exit code and error line, the build, the Slurm job.

report: reads RUN_DIR/run.json (what fleet.sh submitted) and every
RUN_DIR/<host>/<unit>.status.json with its results and environment, and
writes, each file whole:
  fleet.json         the merged fleet: every machine's medians, ratios,
                     status, context, verdicts, and the findings
  fleet.md           the report (below)
  fleet-<group>.png  each machine's ratio to the fleet median, per benchmark
A machine is a (node, unit) pair: node7/cpu, node7/gpu3. Machines are
compared within their group: the same GPU model, or the same CPU model and
thread count; different hardware is never called an outlier.

For each benchmark of a group, each machine's value is the median of its
process samples, the fleet median is the median of those, and the ratio is
a machine's value over the fleet median (time: above 1 is slower).
  slower / faster  ratio beyond 1 +- the threshold (default 10%) and more
                   than 3.5 robust standard deviations (1.4826 x the median
                   absolute deviation of the log ratios) from the group,
                   so a fleet that is noisy everywhere names nobody;
                   at least 3 machines are needed
  bimodal          the sorted ratios split at a gap wider than the
                   threshold into two sides of at least a quarter of the
                   group (and 2 machines) each
For each slower machine, the likely cause is what differs from the rest of
its group in context and telemetry (driver, toolkit, libcudart, cuBLAS,
cuDNN, LibTorch, measured clocks, application clocks, power limit, PCIe
link, ECC, throttling, persistence, MIG, compute mode, temperature, CPU
governor, huge pages, CPU clock, load, kernel, OS, build), ranked by how
well the benchmarks it can affect match the ones that are slow (PCIe
explains a slow Transfer row, not a slow kernel). For a bimodal split, the
features whose values separate the two sides. The environment verdicts of
every node are grouped: "3 of 16 nodes: ...".

Exit codes: 0 no machine is off; 1 a machine is off: slower than its group
beyond the bar, on the slow side of a bimodal group, or with a wrong result
(a failed check, a kernel fault); 2 bad usage (no such run folder, one
with no fleet results in it, a bad --threshold, a run folder the report
cannot be written in, found before any work); 3 the fleet run is
incomplete (a node with no results, a build that failed, a benchmark that
could not run, a node's file that cannot be read or is missing: the report
is written from the rest, and each such file named in it and in one line on
stderr), or the tool could not run. --report-only exits 0 for 1 and 3.
"""
import argparse
import functools
import glob
import json
import math
import os
import re
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from statistics import NormalDist

from . import samples

from ..base.errors import BadInput, ToolError, one_line
from ..base.files import check_writable, read_bytes, read_json, refuse_inputs_as_outputs, write_whole
from ..base.cli import ArgParser, bounded, ensure_venv, run_tool
from ..base.text import fmt_value, slug, table
from ..results.gbench import COULD_NOT_RUN, Run, finite_number, load_doc
from ..results.stats import median
from ..results.context import context_schema

MIN_MACHINES = 3  # fewer than this: ratios are shown, nobody is named
ROBUST_Z = 3.5  # the least robust z for a machine to be named
FAMILY_ALPHA = 0.005  # the chance that a fleet with nothing off names somebody
EXIT_OK, EXIT_OFF, EXIT_BAD, EXIT_INCOMPLETE = 0, 1, 2, 3
NO_STATUS = "missing, though the node's results are there"


# ---------------------------------------------------------------- merge

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
        merged = samples.merge(docs, a.unit, {"tool": "fleet", "host": a.host, "unit": a.unit, "device": a.device})
        write_whole(a.out, json.dumps(merged, indent=1) + "\n")
        status["results"] = os.path.basename(a.out)
    write_whole(a.status_out, json.dumps(status, indent=1) + "\n")
    return EXIT_OK


# ---------------------------------------------------------------- loading a run

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


# ---------------------------------------------------------------- features

def is_transfer(n):
    return n.startswith("Transfer/")


def uses_cublas(n):
    return "cublas" in n or n.startswith(("MnistTrain/cuda", "MnistEval/cuda"))


def uses_torch(n):
    return n.startswith(("MnistTrain/", "MnistEval/")) or "torch" in n


def on_gpu(m, n):
    return m.unit.startswith("gpu")


def on_device_memory(m, n):
    return m.unit.startswith("gpu") and not is_transfer(n)


def on_host_cpu(m, n):
    return m.unit == "cpu" or uses_torch(n)


def counter_median(m, key):
    xs = [b[key] for b in (m.result.benchmarks if m.result else [])
          if isinstance(b, dict) and finite_number(b.get(key)) and b[key] > 0]
    return median(xs) if xs else None


def nvml(m, key):
    return (gpu_of(m).get("nvml") or {}).get(key)


def lib_path(m, prefix):
    for lib in m.env_doc().get("loaded_libraries", []) or []:
        if isinstance(lib, dict) and str(lib.get("name", "")).startswith(prefix):
            return lib.get("path", "")
    return ""


def pcie(m):
    g = gpu_of(m).get("nvml") or {}
    if not g.get("pcie_width"):
        return None
    return f"gen{g.get('pcie_gen_max')} x{g.get('pcie_width')} of x{g.get('pcie_width_max')}"


def ecc_mode(m):
    cur, pend = nvml(m, "ecc_current"), nvml(m, "ecc_pending")
    if cur is None or cur < 0:
        return None
    s = "on" if cur == 1 else "off"
    return s + (f", {'on' if pend == 1 else 'off'} after the next reset" if pend is not None and pend >= 0 and pend != cur else "")


def ecc_errors(m):
    n = nvml(m, "ecc_volatile_uncorrected")
    return f"{n} uncorrectable ECC errors since the driver loaded" if isinstance(n, int) and n > 0 else None


def loaded(version, path):
    """A loaded library: "<version> from <path>", what of it is known, or None."""
    return " from ".join(x for x in (version, path) if x) or None


def mhz_per_cpu(m):
    mhz = m.context.get("mhz_per_cpu")
    return mhz if finite_number(mhz) else None


def load_per_cpu(m):
    la, n = m.context.get("load_avg"), m.context.get("num_cpus")
    if isinstance(la, list) and la and finite_number(la[0]) and finite_number(n) and n > 0:
        return la[0] / n
    return None


def env_errors(m):
    errs = [v.get("message", "") for v in m.env_doc().get("verdicts", []) or [] if isinstance(v, dict)
            and v.get("level") == "error"]
    return "; ".join(errs) if errs else None


def gpu_only(get):
    return lambda m: get(m) if m.unit.startswith("gpu") else None


def ctx(key):
    return lambda m: (str(m.context[key]) if m.context.get(key) not in (None, "") else None)


@dataclass
class Feature:
    label: str
    kind: str  # "cat": compared by value; "num": by tolerance; "flag": a problem when present
    scope: object  # (machine, benchmark name) -> bool: the benchmarks it can slow down
    get: object  # machine -> value or None (unknown, or does not apply)
    tol: float = 0.0  # num: relative tolerance (abs_tol when set)
    abs_tol: float = 0.0
    unit: str = ""


def every(m, n):
    return True


# A plain context feature's scope in env/context_keys.json: the benchmarks it
# can slow down, and which machines it applies to (gpu: GPU units only).
SCOPES = {"gpu": (on_gpu, gpu_only), "host_cpu": (on_host_cpu, None), "all": (every, None)}


@functools.cache
def features():
    """What is compared between machines, in the order the report lists it.
    The plain context lookups take their label and scope from
    env/context_keys.json (its 'fleet' entries): a key named here has its
    place in this order; one the schema adds and this does not name comes last."""
    plain = {e["key"]: e["fleet"] for e in context_schema() if e.get("fleet")}

    def from_schema(key):
        f = plain.pop(key)
        scope, only = SCOPES[f["scope"]]
        return Feature(f["label"], "cat", scope, only(ctx(key)) if only else ctx(key))

    listed = [
        Feature("driver", "cat", on_gpu, gpu_only(lambda m: m.context.get("cuda_driver_version")
                                                  or m.env_doc().get("driver", {}).get("nvml_driver_version"))),
        from_schema("cuda_toolkit"),
        Feature("libcudart loaded", "cat", on_gpu,
                gpu_only(lambda m: loaded(m.context.get("cuda_runtime_loaded"),
                                          (m.env_doc().get("runtime") or {}).get("loaded_path")))),
        Feature("cuBLAS loaded", "cat", lambda m, n: m.unit.startswith("gpu") and uses_cublas(n),
                gpu_only(lambda m: loaded(m.context.get("cublas"), lib_path(m, "libcublas.so")))),
        Feature("cuDNN loaded", "cat", lambda m, n: m.unit.startswith("gpu") and uses_torch(n),
                gpu_only(lambda m: loaded(m.context.get("cudnn"), lib_path(m, "libcudnn.so")))),
        Feature("LibTorch", "cat", lambda m, n: uses_torch(n),
                lambda m: " CUDA ".join(str(m.context[k]) for k in ("libtorch", "libtorch_cuda") if m.context.get(k))
                or None),
        Feature("SM clock during the runs", "num", on_gpu, gpu_only(lambda m: counter_median(m, "sm_clock_mhz")),
                tol=0.03, unit="MHz"),
        Feature("memory clock during the runs", "num", on_device_memory,
                gpu_only(lambda m: counter_median(m, "mem_clock_mhz")), tol=0.03, unit="MHz"),
        from_schema("gpu_app_clocks_mhz"),
        from_schema("gpu_max_clocks_mhz"),
        Feature("power limit", "num", on_gpu, gpu_only(lambda m: nvml(m, "power_limit_w")), tol=0.02, unit="W"),
        Feature("PCIe link", "cat", lambda m, n: m.unit.startswith("gpu") and is_transfer(n), gpu_only(pcie)),
        Feature("ECC", "cat", on_device_memory, gpu_only(ecc_mode)),
        Feature("ECC errors", "flag", on_gpu, gpu_only(ecc_errors)),
        from_schema("gpu_persistence_mode"),
        from_schema("gpu_mig"),
        from_schema("gpu_compute_mode"),
        Feature("GPU temperature during the runs", "num", on_gpu, gpu_only(lambda m: counter_median(m, "temp_c")),
                abs_tol=10, unit="C"),
        from_schema("host_cpu_governor"),
        from_schema("host_thp"),
        Feature("CPU clock (Google Benchmark's MHz per CPU)", "num", on_host_cpu, mhz_per_cpu, tol=0.03, unit="MHz"),
        Feature("load per CPU when bench started (1-minute average)", "num", on_host_cpu, load_per_cpu, abs_tol=0.25),
        from_schema("host_kernel"),
        from_schema("host_os"),
        from_schema("cxx_compiler"),
        Feature("build (source revision, environment)", "cat", every,
                lambda m: " ".join(x for x in (m.context.get("cudabench_git"),
                                               *(s.get("fingerprint") or "" for s in m.status[:1])) if x) or None),
        Feature("environment errors", "flag", every, env_errors),
    ]
    return listed + [from_schema(k) for k in list(plain)]


def fmt_val(f, v):
    if v is None:
        return "unknown"
    if f.kind == "num":
        return f"{v:.3g} {f.unit}".strip() if abs(v) < 100 else f"{v:.0f} {f.unit}".strip()
    return str(v)


def typical(f, machines):
    """The group's usual value of a feature: the value most machines have
    when more than half have it (cat), the median (num), None otherwise."""
    vals = [f.get(m) for m in machines]
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    if f.kind == "num":
        return median([float(v) for v in vals])
    if f.kind == "flag":
        return None
    v, c = Counter(vals).most_common(1)[0]
    return (v, c) if c * 2 > len(machines) else None


def differs(f, v, typ):
    if v is None:
        return False
    if f.kind == "flag":
        return True
    if typ is None:
        return False
    if f.kind == "num":
        if f.abs_tol:
            return abs(float(v) - typ) > f.abs_tol
        return typ > 0 and abs(float(v) / typ - 1) > f.tol
    return v != typ[0]


def evidence(f, v, typ, n):
    if f.kind == "flag":
        return f"{f.label}: {v}"
    if f.kind == "num":
        change = f"{100 * (float(v) / typ - 1):+.0f}%; " if typ and not f.abs_tol else ""
        return f"{f.label} {fmt_val(f, v)} ({change}fleet median {fmt_val(f, typ)})"
    return f"{f.label} {v} (fleet: {typ[0]} on {typ[1]} of {n})"


# ---------------------------------------------------------------- analysis

@dataclass
class BenchStats:
    name: str
    fleet_median: float
    values: dict  # machine key -> median
    ratios: dict  # machine key -> value / fleet median
    slower: list = field(default_factory=list)
    faster: list = field(default_factory=list)
    split: tuple = None  # (slow keys, fast keys, slow ratio, fast ratio) when bimodal


def z_bar(tests):
    """The robust z a machine must pass to be named: ROBUST_Z, or more when
    a group makes many tests (machines x benchmarks), so that a fleet with
    nothing off names nobody in about 99 of 100 runs (Bonferroni)."""
    return max(ROBUST_Z, NormalDist().inv_cdf(1 - FAMILY_ALPHA / max(tests, 1)))


def within_noise(samples):
    """The standard error of one machine's median, from the noise of the
    process samples: the median over machines of each one's variance of
    log samples (so one erratic machine, a throttling GPU, cannot inflate
    the scale it is judged on), corrected to a variance (the median of a
    chi-square over its k degrees of freedom is about (1 - 2/9k)^3 of its
    mean), times 1.2533 / sqrt(n) for a median of n. The same for 16
    machines or 3; 0 without repeated samples."""
    variances, ns = [], []
    for xs in samples.values():
        if len(xs) >= 2:
            logs = [math.log(x) for x in xs]
            mean = sum(logs) / len(logs)
            variances.append(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
            ns.append(len(xs))
    if not variances:
        return 0.0
    k = median(ns) - 1
    return 1.2533 * math.sqrt(median(variances) / (1 - 2 / (9 * k)) ** 3) / math.sqrt(median(ns))


def bench_stats(name, samples, threshold, zc):
    """One benchmark over a group: {machine: process samples (s)}."""
    values = {k: median(xs) for k, xs in samples.items()}
    fm = median(list(values.values()))
    ratios = {k: v / fm for k, v in values.items()}
    s = BenchStats(name, fm, values, ratios)
    if len(values) < MIN_MACHINES:
        return s
    logs = {k: math.log(r) for k, r in ratios.items()}
    bar = math.log1p(threshold)
    sides = [list(logs)]
    noise = within_noise(samples)
    if len(values) >= 4:
        # Two real sides, not one or two outliers (those are named one by
        # one): the widest gap that leaves a quarter of the group, and at
        # least 2 machines, on each side.
        order = sorted(logs, key=logs.get)
        least = max(2, math.ceil(len(order) / 4))
        gaps = [(logs[order[i + 1]] - logs[order[i]], i) for i in range(least - 1, len(order) - least)]
        if gaps:
            gap, i = max(gaps)
            fast, slow = order[:i + 1], order[i + 1:]
            # The sides' medians must also differ beyond what the machines'
            # own noise gives two groups of that size (at the same z bar).
            apart = median([logs[k] for k in slow]) - median([logs[k] for k in fast])
            if gap > bar and apart > zc * 1.2533 * noise * math.sqrt(1 / len(fast) + 1 / len(slow)):
                s.split = (sorted(slow), sorted(fast), median([ratios[k] for k in slow]),
                           median([ratios[k] for k in fast]))
                sides = [fast, slow]
    # Outliers against their own side (a machine far beyond a bimodal
    # group's slow side is still named), beyond the threshold against the
    # whole group, on a scale of the larger of the side's spread and the
    # machines' own noise.
    for side in sides:
        mid = median([logs[k] for k in side])
        # The median it is measured from is noisy too: pi/2n of a machine's variance.
        sigma = max(1.4826 * median([abs(logs[k] - mid) for k in side]),
                    noise * math.sqrt(1 + math.pi / (2 * len(side))))
        for k in side:
            x = logs[k]
            z = (x - mid) / sigma if sigma > 0 else math.copysign(math.inf, x - mid) if x != mid else 0.0
            if x > bar and z > zc:
                s.slower.append(k)
            elif x < -bar and z < -zc:
                s.faster.append(k)
    return s


def short(name):
    return re.sub(r"/(real_time|manual_time|process_time)$", "", name)


def rank_causes(m, group, off, measured):
    """[(score, text)] of what differs on m from its group, likely causes
    first: a feature's score is how well the benchmarks it can affect
    match the slow ones (precision x recall)."""
    likely, also = [], []
    for f in features():
        v = f.get(m)
        typ = typical(f, group)
        if not differs(f, v, typ):
            continue
        scope = {n for n in measured if f.scope(m, n)}
        hit = scope & set(off)
        text = evidence(f, v, typ, len(group))
        if not hit:
            also.append(text)
            continue
        score = (len(hit) / len(scope)) * (len(hit) / len(off)) if off else 0
        (likely if score >= 0.5 or f.kind == "flag" else also).append((score, text))
    throttled = {n: sorted(set(m.result.runs[n].throttled)) for n in off if m.result.runs[n].throttled}
    if throttled:
        reasons = sorted({r for rs in throttled.values() for r in rs})
        likely.append((2.0, f"the GPU throttled ({', '.join(reasons)}) in {len(throttled)} of the {len(off)} "
                            "slow benchmarks"))
    likely.sort(key=lambda x: -x[0])
    return [t for _, t in likely], also


def separating(group, slow, fast):
    """Features whose values on the slow side of a split never occur on the fast side."""
    by = {m.key: m for m in group}
    out = []
    for f in features():
        if f.kind == "flag":
            vs = [f.get(by[k]) for k in slow]
            vf = [f.get(by[k]) for k in fast]
            if all(v is not None for v in vs) and all(v is None for v in vf):
                out.append(f"{f.label} on every slow machine, on no fast one")
            continue
        vs = [f.get(by[k]) for k in slow]
        vf = [f.get(by[k]) for k in fast]
        if any(v is None for v in vs + vf):
            continue
        if f.kind == "num":
            tol = (lambda a, b: a - b > f.abs_tol) if f.abs_tol else (lambda a, b: a > b * (1 + f.tol))
            if tol(min(vf), max(vs)) or tol(min(vs), max(vf)):
                out.append(f"{f.label}: {fmt_val(f, median(vs))} on the slow side, {fmt_val(f, median(vf))} "
                           "on the fast side (medians)")
        elif not set(vs) & set(vf):
            show = lambda xs: ", ".join(f"{v} ({c})" for v, c in Counter(xs).most_common())
            out.append(f"{f.label}: {show(vs)} on the slow side; {show(vf)} on the fast side")
    return out


def analyse(meta, machines, lost, threshold):
    """The findings as plain data (what fleet.json holds and fleet.md shows);
    lost: the run's files that could not be used (load_run)."""
    findings = {"groups": [], "off": [], "faster": [], "splits": [], "wrong": [], "incomplete": [], "unreadable": lost}
    groups = {}
    for m in machines:
        groups.setdefault(m.group, []).append(m)
    for gname in sorted(groups):
        analyse_group(gname, sorted(groups[gname], key=lambda m: (m.host, m.unit)), threshold, findings)
    for m in sorted(machines, key=lambda m: m.key):
        failures(m, findings)
    findings["incomplete"] += unmeasured_nodes(meta, machines, lost)
    findings["incomplete"] += gpus_short_of_gres(meta, machines)
    findings["incomplete"] += one_gpu_twice(machines)
    findings["incomplete"] += missing_tasks(meta, machines, lost)
    return findings


def group_stats(ms, threshold):
    """(every benchmark name the group's machines measured, first seen first;
    the BenchStats of each), over machines with results."""
    names = []
    for m in ms:
        names += [n for n in m.result.runs if n not in names]
    stats = []
    zc = z_bar(len(ms) * len(names))
    for n in names:
        samples = {m.key: m.result.runs[n].samples for m in ms if n in m.medians}
        if samples:
            stats.append(bench_stats(n, samples, threshold, zc))
    return names, stats


def analyse_group(gname, ms, threshold, findings):
    """One group: its benchmarks, who lacks one, who is off or faster, and its bimodal splits."""
    with_data = [m for m in ms if m.medians]
    names, stats = group_stats(with_data, threshold)
    for m in with_data:
        lacking = [n for n in names if n not in m.result.runs]
        if lacking:
            findings["incomplete"].append({"machine": m.key, "error": "no result for "
                                           + names_list(short(n) for n in lacking)
                                           + ", which others in its group have"})
    findings["groups"].append({"name": gname, "machines": [m.key for m in ms], "benchmarks": stats,
                               "note": "" if len(with_data) >= MIN_MACHINES else
                               f"{len(with_data)} machine(s) with results: at least {MIN_MACHINES} are needed "
                               "to name an outlier"})
    for m in with_data:
        off = [s.name for s in stats if m.key in s.slower]
        fast = [s.name for s in stats if m.key in s.faster]
        measured = [s.name for s in stats if m.key in s.ratios]
        if off:
            likely, also = rank_causes(m, with_data, off, measured)
            findings["off"].append({"machine": m.key, "group": gname, "benchmarks": off,
                                    "ratios": {n: s.ratios[m.key] for s in stats for n in [s.name] if n in off},
                                    "likely": likely, "also": also})
        if fast:
            findings["faster"].append({"machine": m.key, "group": gname, "benchmarks": fast,
                                       "ratios": {s.name: s.ratios[m.key] for s in stats if s.name in fast}})
    findings["splits"] += bimodal_splits(gname, stats, with_data)


def bimodal_splits(gname, stats, group):
    """The group's bimodal benchmarks, one finding per pair of sides, with what separates the sides."""
    splits = {}
    for s in stats:
        if s.split:
            splits.setdefault((tuple(s.split[0]), tuple(s.split[1])), []).append(s)
    return [{"group": gname, "slow": list(slow), "fast": list(fast), "benchmarks": [s.name for s in ss],
             "slow_ratio": median([s.split[2] for s in ss]), "fast_ratio": median([s.split[3] for s in ss]),
             "separating": separating(group, slow, fast)} for (slow, fast), ss in splits.items()]


def failures(m, findings):
    """A machine's failed benchmarks and processes (wrong: a failed check,
    exit 1; incomplete: could not run, another exit code, or no results
    when no status or unreadable file says why)."""
    for n, e in sorted(m.errors.items()):
        (findings["incomplete"] if e.startswith(COULD_NOT_RUN) else findings["wrong"]).append(
            {"machine": m.key, "benchmark": n, "error": e})
    said = any(u["machine"] == m.key for u in findings["unreadable"])  # something says why it has no results
    for st in m.status:
        if st.get("error"):
            findings["incomplete"].append({"machine": m.key, "error": st["error"]})
            said = True
            continue
        for i, p in enumerate(st.get("processes", []) or []):
            rc = p.get("exit_code") if isinstance(p, dict) else None
            said = said or rc not in (0, None)
            if rc == 1 and not m.errors:
                findings["wrong"].append({"machine": m.key, "benchmark": f"process {i + 1}",
                                          "error": p.get("error") or "exit 1"})
            elif rc not in (0, 1):
                findings["incomplete"].append({"machine": m.key, "error": f"process {i + 1} exited {rc}: "
                                               + (p.get("error") or "no message")})
    if not m.result and not said:
        findings["incomplete"].append({"machine": m.key, "error": "no results"})


def unmeasured_nodes(meta, machines, lost):
    """Nodes Slurm listed that left nothing in the run folder (not even a file that cannot be read)."""
    hosts = {m.host for m in machines} | {u["file"].split(os.sep)[0] for u in lost}
    return [{"machine": node, "error": "no task ran on this node (Slurm placed two tasks on another node, or this "
             "one was busy or went away)"}
            for node in meta.get("expected_nodes", []) or [] if isinstance(node, str) and node not in hosts]


def gpus_short_of_gres(meta, machines):
    """Every GPU the nodes' gres list, measured: a node whose task saw fewer
    (a broken GPU, or two per-GPU tasks on one GPU) is named."""
    gres, tasks = meta.get("expected_gpus"), meta.get("tasks")
    if not isinstance(gres, dict) or (meta.get("mode") == "gpu" and tasks != sum(
            n for n in gres.values() if isinstance(n, int))):
        return []
    hosts = {m.host for m in machines}
    out = []
    for node, n in sorted(gres.items()):
        if not isinstance(n, int) or node not in hosts:
            continue
        done = {m.unit for m in machines if m.host == node and m.unit.startswith("gpu") and m.medians}
        if len(done) < n:
            out.append({"machine": node, "error": f"{len(done)} of its {n} GPUs (its gres) measured"})
    return out


def one_gpu_twice(machines):
    """Two units of one node that measured one GPU (a per-GPU task that saw
    every GPU and took the wrong one): the bus ids tell."""
    buses = {}
    for m in machines:
        for st in m.status:
            if st.get("pci_bus_id") and m.medians:
                buses.setdefault((m.host, st["pci_bus_id"]), set()).add(m.key)
    return [{"machine": host, "error": f"{' and '.join(sorted(keys))} measured one GPU (PCI bus {bus})"}
            for (host, bus), keys in sorted(buses.items()) if len(keys) > 1]


def missing_tasks(meta, machines, lost):
    tasks = meta.get("tasks")
    recorded = len({st.get("task") for m in machines for st in m.status})
    recorded += sum(u["file"].endswith(".status.json") and not u["error"].startswith(NO_STATUS) for u in lost)
    if isinstance(tasks, int) and recorded < tasks:
        return [{"machine": "-", "error": f"{recorded} of {tasks} array tasks recorded a result"}]
    return []


def grouped_verdicts(machines):
    """[{level, id, hosts, messages: [(message, fix, [hosts])]}]: each kind
    of environment verdict that is not ok, with the nodes that have it. A
    kind's messages may name node-specific things (a path, a count); they
    are listed under the one kind, each with its nodes."""
    kinds = {}
    for m in machines:
        for v in m.env_doc().get("verdicts", []) or []:
            if isinstance(v, dict) and v.get("level") in ("error", "warning", "info"):
                k = kinds.setdefault((v["level"], str(v.get("id", ""))), {})
                k.setdefault((str(v.get("message", "")), str(v.get("fix", ""))), set()).add(m.host)
    rank = {"error": 0, "warning": 1, "info": 2}
    out = []
    for (lvl, vid), msgs in kinds.items():
        hosts = sorted(set().union(*msgs.values()))
        out.append({"level": lvl, "id": vid, "hosts": hosts,
                    "messages": sorted(((msg, fix, sorted(h)) for (msg, fix), h in msgs.items()),
                                       key=lambda x: (-len(x[2]), x[0]))})
    return sorted(out, key=lambda v: (rank[v["level"]], -len(v["hosts"]), v["id"]))


def context_spread(group):
    """[(feature, [(value, [machines])])] for features whose values differ within a group."""
    out = []
    for f in features():
        if f.kind == "flag":
            continue
        vals = {}
        for m in group:
            v = f.get(m)
            if v is not None:
                vals.setdefault(fmt_val(f, v) if f.kind == "num" else str(v), []).append(m.key)
        if f.kind == "num":
            nums = [float(f.get(m)) for m in group if f.get(m) is not None]
            if not nums or not any(differs(f, x, median(nums)) for x in nums):
                continue
        elif len(vals) < 2:
            continue
        out.append((f.label, sorted(vals.items(), key=lambda kv: -len(kv[1]))))
    return out


# ---------------------------------------------------------------- output

def ratio_text(r, key, s):
    t = f"{r:.2f}"
    return f"**{t} slower**" if key in s.slower else f"*{t} faster*" if key in s.faster else t


def names_list(keys, limit=8):
    keys = list(keys)
    return ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def render(meta, machines, findings, verdicts, threshold, plots):
    L = header(meta, machines, findings, threshold)
    L += ["## Findings", ""] + finding_items(meta, findings, threshold) + [""]
    L += builds(machines)
    by = {m.key: m for m in machines}
    for g in findings["groups"]:
        L += group_section(g, [by[k] for k in g["machines"]], plots)
    L += ["## Environment verdicts across nodes", ""] + verdict_items(verdicts, machines) + [""]
    return "\n".join(L)


def header(meta, machines, findings, threshold):
    L = [f"# Fleet run {meta.get('run_id') or '(no run.json)'}", ""]
    if meta:
        mode = "one per GPU (--gpus-per-task=1)" if meta.get("mode") == "gpu" else "one per node"
        L.append(f"{meta.get('tasks', '?')} array tasks, {mode}, submitted {meta.get('submitted', '?')} from "
                 f"{meta.get('submit_host', '?')}; source {meta.get('source', '?')}; "
                 f"{meta.get('processes', '?')} processes x {meta.get('repetitions', '?')} repetitions per machine.")
    L.append(f"{len(machines)} machines (node/unit) in {len(findings['groups'])} group(s). A machine is off when its "
             f"median is more than {100 * threshold:g}% from its group's median and {ROBUST_Z:g} robust standard "
             "deviations from the rest; ratios are time over the group median (above 1: slower).")
    return L + [""]


def finding_items(meta, findings, threshold):
    """The Findings list: who is off and why, bimodal groups, wrong results,
    faster machines, what is incomplete, and the nodes Slurm left out."""
    items = [off_item(o) for o in findings["off"]] + [split_item(sp) for sp in findings["splits"]]
    items += [f"- **wrong result on {w['machine']}**: {short(w['benchmark'])}: {w['error']}"
              for w in findings["wrong"]]
    items += [f"- {f['machine']} is faster than its group in {len(f['benchmarks'])} benchmark(s) "
              f"({names_list(short(n) for n in f['benchmarks'])}): a different setting is likely; see "
              "the context differences below." for f in findings["faster"]]
    items += [f"- incomplete: {u['machine']}: {u['file']}: {u['error']}" for u in findings["unreadable"]]
    items += [f"- incomplete: {i['machine']}: {i.get('benchmark', '') and short(i['benchmark']) + ': '}{i['error']}"
              for i in findings["incomplete"]]
    items = items or [f"- No machine is off: every machine is within {100 * threshold:g}% of its group's median, "
                      "or within the group's own spread, in every benchmark."]
    skipped = [n for n in meta.get("skipped_nodes", []) or [] if isinstance(n, str)]
    if skipped:
        items.append(f"- Not measured, as Slurm listed them at submit (drained, down or not responding): "
                     f"{names_list(skipped)}.")
    return items


def off_item(o):
    worst = max(o["ratios"].values())
    line = (f"- **{o['machine']} is off**: slower than its group ({o['group']}) in {len(o['benchmarks'])} "
            f"benchmark(s), up to {worst:.2f}x the median ({names_list(short(n) for n in o['benchmarks'])}).")
    if o["likely"]:
        line += " Likely cause: " + "; ".join(o["likely"]) + "."
    else:
        line += (" Nothing in the recorded context or telemetry differs from the group in a way that "
                 "explains it: look at the node itself (other work on it, cooling, a failing part).")
    if o["also"]:
        line += " Also differs: " + "; ".join(o["also"]) + "."
    return line


def split_item(sp):
    line = (f"- **bimodal {sp['group']}**: {len(sp['slow'])} machines at {sp['slow_ratio']:.2f}x "
            f"({names_list(sp['slow'])}) and {len(sp['fast'])} at {sp['fast_ratio']:.2f}x "
            f"({names_list(sp['fast'])}) in {len(sp['benchmarks'])} benchmark(s) "
            f"({names_list(short(n) for n in sp['benchmarks'])}).")
    return line + (" What separates them: " + "; ".join(sp["separating"]) + "." if sp["separating"] else
                   " Nothing recorded separates the two sides.")


def builds(machines):
    """Each environment's build and how many machines ran it (each machine's first status)."""
    count = Counter()
    for m in machines:
        for st in m.status[:1]:
            count[(st.get("fingerprint") or "?", st.get("build") or "?")] += 1
    if not count:
        return []
    return (["## Builds", ""] + [f"- environment {fp}: {b} ({n} machine(s))" for (fp, b), n in sorted(count.items())]
            + [""])


def group_section(g, group, plots):
    """A group: the note, the ratios side by side, its plot, each benchmark's
    spread and outliers, and what differs within the group."""
    L = [f"## {g['name']}: {len(g['machines'])} machine(s)", ""]
    if g["note"]:
        L += [g["note"] + ".", ""]
    stats = g["benchmarks"]
    if stats:
        keys = [k for k in g["machines"] if any(k in s.ratios for s in stats)]
        head = ["machine"] + [short(s.name) for s in stats]
        rows = [["fleet median"] + [fmt_value(s.fleet_median, "time") for s in stats]]
        rows += [[k] + [ratio_text(s.ratios[k], k, s) if k in s.ratios else "-" for s in stats] for k in keys]
        L += ["Side by side: the fleet median, then each machine's ratio to it.", "",
              table(head, rows, True), ""]
        if g["name"] in plots:
            L += [f"![{g['name']}]({plots[g['name']]})", ""]
        rows = []
        for s in stats:
            rs = sorted(s.ratios.items(), key=lambda kv: kv[1])
            rows.append([short(s.name), fmt_value(s.fleet_median, "time"), str(len(rs)),
                         f"{rs[0][1]:.2f} ({rs[0][0]})", f"{rs[-1][1]:.2f} ({rs[-1][0]})",
                         ", ".join(s.slower) or "-", "yes" if s.split else "-"])
        L += [table(["benchmark", "fleet median", "machines", "fastest", "slowest", "slower (off)",
                             "bimodal"], rows, True), ""]
    spread = context_spread(group)
    if spread:
        L += ["What differs within the group:", ""]
        L += [f"- {label}: " + "; ".join(f"{v} on {names_list(ks, 4)}" for v, ks in vals) for label, vals in spread]
        L.append("")
    return L


def verdict_items(verdicts, machines):
    """Each kind of environment verdict, with how many nodes have it (and in which forms)."""
    hosts = sorted({m.host for m in machines})

    def count(hs):
        return f"all {len(hosts)} nodes" if len(hs) == len(hosts) else f"{len(hs)} of {len(hosts)} nodes"

    def said(msg, fix):
        return f"{msg.rstrip('.')}." + (f" Fix: {fix.rstrip('.')}." if fix else "")

    if not verdicts:
        return ["- none: every node's report is clean"]
    L = []
    for v in verdicts:
        whom = "" if len(v["hosts"]) == len(hosts) else f" ({names_list(v['hosts'])})"
        if len(v["messages"]) == 1:
            msg, fix, _ = v["messages"][0]
            L.append(f"- {count(v['hosts'])}: {v['level']}: {said(msg, fix)}{whom}")
            continue
        L.append(f"- {count(v['hosts'])}: {v['level']}: {v['id']}, in {len(v['messages'])} forms{whom}:")
        L += [f"  - {count(hs)}: {said(msg, fix)} ({names_list(hs)})" for msg, fix, hs in v["messages"]]
    return L


def plot_name(group):
    return "fleet-" + slug(group) + ".png"


def plot_groups(findings, out_dir, threshold):
    """fleet-<group>.png: each machine's ratio per benchmark, the band of
    +-threshold, outliers named. Returns {group: file name}."""
    ensure_venv("fleet", ("matplotlib",))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = {}
    for g in findings["groups"]:
        stats = g["benchmarks"]
        if not stats:
            continue
        name = plot_name(g["name"])
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(stats) + 2), 4.2))
        ax.axhspan(1 / (1 + threshold), 1 + threshold, color="tab:green", alpha=0.08, lw=0)
        ax.axhline(1.0, color="gray", lw=0.8)
        for i, s in enumerate(stats):
            keys = sorted(s.ratios)
            xs = [i + (j - (len(keys) - 1) / 2) * min(0.5 / max(len(keys), 1), 0.06) for j in range(len(keys))]
            for x, k in zip(xs, keys):
                off = k in s.slower
                ax.plot(x, s.ratios[k], "o", ms=5 if off else 4,
                        color="tab:red" if off else "tab:orange" if k in s.faster else "tab:blue", alpha=0.85)
                if off or k in s.faster:
                    ax.annotate(k, (x, s.ratios[k]), fontsize=7, xytext=(4, 2), textcoords="offset points")
        ax.set_xticks(range(len(stats)))
        ax.set_xticklabels([short(s.name) for s in stats], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("time / group median")
        ax.set_title(f"{g['name']}: {len(g['machines'])} machine(s); band: +-{100 * threshold:g}%", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        try:
            write_whole(os.path.join(out_dir, name),
                                lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
        finally:
            plt.close(fig)
        out[g["name"]] = name
    return out


def to_json(meta, machines, findings, verdicts, code):
    def stats_json(s):
        return {"name": s.name, "fleet_median_s": s.fleet_median, "ratios": s.ratios, "values_s": s.values,
                "slower": s.slower, "faster": s.faster,
                "bimodal": None if not s.split else {"slow": s.split[0], "fast": s.split[1]}}
    return {
        "run": meta,
        "machines": [{"machine": m.key, "host": m.host, "unit": m.unit, "device": m.device, "group": m.group,
                      "status": m.status, "medians_s": m.medians, "errors": m.errors,
                      "samples_s": {n: r.samples for n, r in (m.result.runs.items() if m.result else [])},
                      "context": {k: v for k, v in m.context.items() if k != "cudabench_env"},
                      "verdicts": m.env_doc().get("verdicts", [])} for m in machines],
        "groups": [dict(g, benchmarks=[stats_json(s) for s in g["benchmarks"]]) for g in findings["groups"]],
        "off": findings["off"], "faster": findings["faster"], "bimodal": findings["splits"],
        "wrong": findings["wrong"], "incomplete": findings["incomplete"], "unreadable": findings["unreadable"],
        "verdicts": [dict(v, messages=[{"message": msg, "fix": fix, "hosts": hs} for msg, fix, hs in v["messages"]])
                     for v in verdicts],
        "exit_code": code,
    }


def exit_code(findings):
    if findings["off"] or findings["splits"] or findings["wrong"]:
        return EXIT_OFF
    return EXIT_INCOMPLETE if findings["incomplete"] or findings["unreadable"] else EXIT_OK


def check_outputs(run_dir, machines):
    """fleet.json, fleet.md and the plots can be written in the run folder,
    and none is one of the run's files: found before the report is made."""
    names = ["fleet.json", "fleet.md"] + [plot_name(g) for g in sorted({m.group for m in machines})]
    inputs = glob.glob(os.path.join(glob.escape(run_dir), "*", "*.json")) + [os.path.join(run_dir, "run.json")]
    refuse_inputs_as_outputs([("output", os.path.join(run_dir, n)) for n in names], inputs)
    for n in names[:2]:
        check_writable(os.path.join(run_dir, n), "output")


def cmd_report(a):
    meta, machines, lost = load_run(a.run_dir)
    check_outputs(a.run_dir, machines)
    findings = analyse(meta, machines, lost, a.threshold)
    verdicts = grouped_verdicts(machines)
    code = exit_code(findings)
    plots, unplotted = {}, ""
    if not a.no_plots:
        try:  # a missing matplotlib costs the plots, never the report
            plots = plot_groups(findings, a.run_dir, a.threshold)
        except ToolError as e:
            unplotted = one_line(e)
        except Exception as e:  # noqa: BLE001
            unplotted = f"{type(e).__name__}: {one_line(e)}"
    text = render(meta, machines, findings, verdicts, a.threshold, plots)
    if unplotted:
        text += f"\nNo plots: {unplotted}\n"
        print(f"fleet: no plots: {unplotted}", file=sys.stderr)
    write_whole(os.path.join(a.run_dir, "fleet.json"),
                        json.dumps(to_json(meta, machines, findings, verdicts, code), indent=1) + "\n")
    write_whole(os.path.join(a.run_dir, "fleet.md"), text + "\n")
    print(text.split("\n## Builds")[0].rstrip() + f"\n\nfleet: report in {os.path.join(a.run_dir, 'fleet.md')}",
          flush=True)
    say_findings(findings, code)
    return EXIT_OK if a.report_only else code


def say_findings(findings, code):
    """stderr: one line per file that could not be used, and one for what
    else is off or incomplete (nothing when all is well)."""
    for u in findings["unreadable"]:
        print(f"fleet: the run is incomplete: {u['file']}: {u['error']}", file=sys.stderr)
    if code == EXIT_OFF:
        print(f"fleet: {len(findings['off'])} machine(s) off, {len(findings['splits'])} bimodal split(s), "
              f"{len(findings['wrong'])} wrong result(s)", file=sys.stderr)
    elif code == EXIT_INCOMPLETE and findings["incomplete"] and not findings["unreadable"]:
        print(f"fleet: the run is incomplete: {findings['incomplete'][0]['machine']}: "
              f"{findings['incomplete'][0]['error']}", file=sys.stderr)


def main(argv=None):
    ap = ArgParser(prog="fleet", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=ArgParser)
    m = sub.add_parser("merge", help="one unit's processes into one JSON and a status file (array task)")
    m.add_argument("--host", required=True)
    m.add_argument("--unit", required=True)
    m.add_argument("--status-out", required=True)
    m.add_argument("--out")
    m.add_argument("--processes", help="a file: '<exit code> TAB <json> TAB <stderr>' per process")
    m.add_argument("--env")
    m.add_argument("--device", action=bounded(-1, 4095), default=-1, help="the GPU's index (-1: none)")
    m.add_argument("--task", default="0")
    m.add_argument("--build", default="")
    m.add_argument("--fingerprint", default="")
    m.add_argument("--started", default="")
    m.add_argument("--error", default="", help="why this unit ran nothing")
    r = sub.add_parser("report", help="merge a run's results and write fleet.json, fleet.md and plots")
    r.add_argument("run_dir")
    r.add_argument("--threshold", action=bounded(0, 1, float, "()"), default=0.10,
                   help="relative change that counts (default 0.10)")
    r.add_argument("--report-only", action="store_true", help="exit 0 whatever the findings")
    r.add_argument("--no-plots", action="store_true", help="no PNG (no matplotlib needed)")
    a = ap.parse_args(argv)
    return run_tool("fleet", lambda: cmd_merge(a) if a.cmd == "merge" else cmd_report(a))


def entry():
    """The program, as scripts/fleet/fleet.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
