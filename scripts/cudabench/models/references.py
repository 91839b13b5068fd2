"""References: for each hardware model, the recorded machines that a new run
of that hardware is held against. Each machine is kept apart, with its runs,
its facts and when it was recorded, because machines of one kind differ more
than the processes of one machine do (docs/methodology.md):

    results/reference/<hardware>/machines/<machine>/<run>.json   the inputs, as recorded
    results/reference/<hardware>/reference.json                  made from them: every
        process sample with its "machine", and cudabench_reference.machines

A reference made before machines were kept apart (no "machine" on its
entries) reads as one machine."""
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field

from ..base.errors import BadInput
from ..base.paths import ROOT
from ..base.files import make_folder, read_json, refuse_inputs_as_outputs, write_whole
from ..results.context import hardware_of
from ..results.gbench import ResultFile, load_doc, partial_note, unique_rows
from .families import FAMILIES

REFERENCES = os.path.join(ROOT, "results", "reference")
FORMAT = 2
# The facts kept per machine: every fact a family names, and those that
# tell machines of one kind apart.
FACTS = tuple(dict.fromkeys([k for fam in FAMILIES for k, _ in fam.facts] + [
    "host_kernel", "host_microcode", "host_cpu_flags", "gpu_ecc", "gpu_app_clocks_mhz", "cudabench_git"]))
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass
class Machine:
    name: str
    recorded: str  # the date of its first run
    facts: dict
    file: ResultFile  # its runs' process samples together
    runs: list = field(default_factory=list)


def reference_path(hardware, folder=None):
    return os.path.join(folder or REFERENCES, hardware, "reference.json")


def find_reference(f, folder=None):
    """The reference file for the hardware of result `f`, or None."""
    hw = hardware_of(f.context)
    path = reference_path(hw, folder) if hw else None
    return path if path and os.path.isfile(path) else None


def digest(doc, path="the run"):
    """One run's identity by content, its rows each once in any order: the
    same run under two names (a copy, a link), or with its rows written
    twice or reordered, is one run."""
    rows, _ = unique_rows(doc.get("benchmarks") or [], path)
    return hashlib.sha256(json.dumps(sorted(json.dumps(b, sort_keys=True) for b in rows)).encode()).hexdigest()[:16]


def add_machine(paths, name=None, folder=None):
    """Keep the runs `paths` (of one machine, of one hardware) as machine
    `name` of the reference for their hardware, and remake reference.json
    from every machine kept. Returns (reference path, machine name, [notes])."""
    docs = [read_json(p) for p in paths]
    files = [load_doc(d, p) for d, p in zip(docs, paths)]
    kinds = {hardware_of(f.context) for f in files}
    if len(kinds) != 1 or "" in kinds:
        raise BadInput(f"--add-machine: the runs must be of one known hardware (they are: "
                       f"{', '.join(sorted(kinds)) or 'unknown'})")
    hw = kinds.pop()
    path = reference_path(hw, folder)
    hwdir = os.path.dirname(path)
    refuse_inputs_as_outputs([("--add-machine", path)], paths)
    kept = machine_folders(hwdir)
    name = name or f"m{len(kept) + 1}-{str(docs[0].get('context', {}).get('date', ''))[:10] or 'undated'}"
    if not NAME.fullmatch(name):
        raise BadInput(f"--machine {name}: expected one name of letters, digits, '.', '_' and '-'")
    known = {digest(read_json(p), p): p for runs in kept.values() for p in runs}
    notes, new = [partial_note(p, f.partial) for p, f in zip(paths, files) if f.partial], {}
    for p, d in zip(paths, docs):
        key = digest(d, p)
        if key in known or key in new:
            notes.append(f"{p}: the same run as {known.get(key) or new[key]}: counted once")
            continue
        new[key] = p
    if not new:
        raise BadInput(f"--add-machine: every run given is in the reference already ({'; '.join(notes)})")
    target = os.path.join(hwdir, "machines", name)
    make_folder(target, "--reference")  # a folder that loops, a read-only one: one line, before anything is kept
    for i, p in enumerate(new.values()):
        base = os.path.basename(p)
        dest = os.path.join(target, base if not os.path.exists(os.path.join(target, base)) else f"{i}-{base}")
        shutil.copyfile(p, dest)
    remake(hwdir, hw)
    return path, name, notes


def recorded_as(path, hwdir):
    """The machine of hwdir's reference that holds the run `path` (by content), or ""."""
    key = digest(read_json(path), path)
    return next((m for m, runs in machine_folders(hwdir).items() for p in runs if digest(read_json(p), p) == key), "")


def machine_folders(hwdir):
    """{machine: [its run files]} kept under hwdir/machines."""
    root = os.path.join(hwdir, "machines")
    if not os.path.isdir(root):
        return {}
    return {m: sorted(os.path.join(root, m, f) for f in os.listdir(os.path.join(root, m)) if f.endswith(".json"))
            for m in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, m))}


def remake(hwdir, hw):
    """reference.json from the machines kept in hwdir: each process sample
    an entry with its machine (repetition_index numbers the processes
    throughout), each machine's facts, runs and date."""
    ref = {"context": {}, "benchmarks": [], "cudabench_reference": {"hardware": hw, "format": FORMAT, "machines": []}}
    k = 0
    for name, runs in machine_folders(hwdir).items():
        docs = [read_json(p) for p in runs]
        for d, p in zip(docs, runs):
            load_doc(d, p)  # a run kept by hand is held to what --add-machine checks
        ctx = docs[0].get("context", {})
        dates = sorted(str(d.get("context", {}).get("date", "")) for d in docs)
        ref["context"] = dict(ctx, machine_label=f"reference-{hw}")
        ref["cudabench_reference"]["machines"].append({
            "name": name, "recorded": dates[0], "runs": [os.path.basename(p) for p in runs],
            "facts": {key: ctx[key] for key in FACTS if key in ctx}})
        for d, p in zip(docs, runs):
            rows = unique_rows(d["benchmarks"], p)[0]  # a row written twice is one sample
            procs = sorted({b.get("repetition_index", 0) for b in rows})
            for b in rows:
                index = k + procs.index(b.get("repetition_index", 0))
                ref["benchmarks"].append(dict(b, machine=name, repetition_index=index))
            k += len(procs)
    write_whole(os.path.join(hwdir, "reference.json"), json.dumps(ref, indent=1) + "\n")


def load_machines(path, metric="time", wanted=None):
    """The machines of a reference file, each its own ResultFile."""
    doc = read_json(path)
    whole = load_doc(doc, path, metric, wanted)
    meta = doc.get("cudabench_reference") if isinstance(doc.get("cudabench_reference"), dict) else {}
    version = meta.get("format", FORMAT)
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT:
        raise BadInput(f"{path}: cudabench_reference.format is {json.dumps(version)}: this tool reads references of "
                       f"format {FORMAT} and older (a newer cudabench made it)")
    described = {m.get("name"): m for m in meta.get("machines", []) if isinstance(m, dict)}
    groups = {}
    for b in doc["benchmarks"]:
        groups.setdefault(str(b.get("machine", "")) if isinstance(b, dict) else "", []).append(b)
    out = []
    for name, entries in groups.items():
        m = described.get(name, {})
        f = load_doc(dict(doc, benchmarks=entries), path, metric, wanted)
        f.label = name or "the recorded machine"
        facts = m.get("facts") if isinstance(m.get("facts"), dict) else doc.get("context", {})
        f.context = facts
        out.append(Machine(f.label, str(m.get("recorded") or doc.get("context", {}).get("date", "?")),
                           facts, f, m.get("runs") or []))
    return whole, out
