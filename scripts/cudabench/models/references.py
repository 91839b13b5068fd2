"""References: for each hardware model, recorded runs that a new run of
that hardware is held against (results/reference/<hardware>/reference.json)."""
import json
import os

from ..base.errors import BadInput
from ..base.paths import ROOT
from ..base.files import read_json, refuse_inputs_as_outputs, write_whole
from ..results.context import hardware_of, machine_of
from ..results.gbench import load_doc

REFERENCES = os.path.join(ROOT, "results", "reference")


def reference_path(hardware, folder=None):
    return os.path.join(folder or REFERENCES, hardware, "reference.json")


def find_reference(f, folder=None):
    """The reference file for the hardware of result `f`, or None."""
    hw = hardware_of(f.context)
    path = reference_path(hw, folder) if hw else None
    return path if path and os.path.isfile(path) else None


def make_reference(paths, folder=None):
    """One reference from recorded runs of one hardware: their process
    samples together (each entry one process), the first run's context.
    Written whole to <folder>/<hardware>/reference.json; returns its path."""
    docs = [read_json(p) for p in paths]
    files = [load_doc(d, p) for d, p in zip(docs, paths)]
    kinds = {hardware_of(f.context) for f in files}
    if len(kinds) != 1 or "" in kinds:
        raise BadInput(f"--make-reference: the runs must be of one known hardware (they are: {', '.join(sorted(kinds)) or 'unknown'})")
    hw = kinds.pop()
    ref = {"context": dict(docs[0].get("context", {})), "benchmarks": [],
           "cudabench_reference": {"hardware": hw, "runs": [os.path.basename(p) for p in paths],
                                   "machines": sorted({machine_of(f) for f in files}),
                                   "dates": [d.get("context", {}).get("date") for d in docs]}}
    ref["context"]["machine_label"] = f"reference-{hw}"
    k = 0
    for d in docs:
        procs = sorted({b.get("repetition_index", 0) for b in d["benchmarks"]})
        for b in d["benchmarks"]:
            ref["benchmarks"].append(dict(b, repetition_index=k + procs.index(b.get("repetition_index", 0))))
        k += len(procs)
    path = reference_path(hw, folder)
    refuse_inputs_as_outputs([("--make-reference", path)], paths)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_whole(path, json.dumps(ref, indent=1) + "\n")
    return path
