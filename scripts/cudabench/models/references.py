"""References: for each hardware model, the recorded machines that a new run
of that hardware is held against. Each machine is kept apart, with its runs,
its facts and when it was recorded, because machines of one kind differ more
than the processes of one machine do (docs/methodology.md):

    results/reference/<hardware>/machines/<machine>/<run>.json   the inputs, as recorded
    results/reference/<hardware>/reference.json                  made from them: every
        process sample with its "machine", and cudabench_reference.machines

A reference made before machines were kept apart (no "machine" on its
entries) reads as one machine."""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from ..base.errors import BadInput, ToolError
from ..base.paths import ROOT
from ..base.files import make_folder, read_json, refuse_inputs_as_outputs, write_whole
from ..results.context import hardware_of
from ..results.gbench import MIN_CLEAN, ResultFile, load_doc, partial_note, unique_rows
from ..results.stats import median
from .families import FAMILIES, family_of

REFERENCES = os.path.join(ROOT, "results", "reference")
FORMAT = 2
# The facts kept per machine: every fact a family names, and those that
# tell machines of one kind apart.
FACTS = tuple(dict.fromkeys([k for fam in FAMILIES for k, _ in fam.facts] + [
    "host_kernel", "host_microcode", "host_cpu_flags", "gpu_ecc", "gpu_app_clocks_mhz", "cudabench_git"]))
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A row this many times slower or faster than every recorded machine lies far
# outside them; a machine with FAR_ROWS of its rows (at least 2) so far joins
# only when the user says it is right. Two VMs of one kind were seen up to
# 1.4x apart on a row; one row alone is noise, not a machine.
FAR = 2.0
FAR_ROWS = 0.1
OUTLIER_OK = "--outlier-ok"
LOCK_SECONDS = 120  # how long a second --add-machine waits for the first
STAGING = ".adding-"  # a machine's folder while it is filled (hidden: never read as a machine)
OUTLIER_MARK = "OUTLIER"  # a file in the machine's folder: kept with its runs, read by remake


@dataclass
class Machine:
    name: str
    recorded: str  # the date of its first run
    facts: dict
    file: ResultFile  # its runs' process samples together
    runs: list = field(default_factory=list)
    outlier: bool = False  # added with --outlier-ok: its rows lay far outside the machines recorded before it


def refusal(f):
    """Why run `f` may never join a reference ("" when it may): samples that
    are repetitions inside one process, or rows with fewer than MIN_CLEAN
    processes taken without other load (a loaded run would widen the
    kind's bounds for good)."""
    rows = [r for r in f.runs.values() if r.samples and not r.error]
    if not rows:
        return "it has no measured row"
    if f.processes < 2:
        return ("its samples are repetitions inside one process, which do not show how processes differ: take "
                "samples from processes (scripts/run-bench.sh, or scripts/samples.py run)")
    loaded = [r.name for r in rows if r.too_loaded]
    if loaded:
        return (f"{len(loaded)} of {len(rows)} rows ran beside other load (fewer than {MIN_CLEAN} processes "
                f"without it, e.g. {loaded[0]}): rerun on an idle machine")
    few = [r.name for r in rows if len(r.clean().samples) < MIN_CLEAN]
    if few:
        return f"{len(few)} of {len(rows)} rows have fewer than {MIN_CLEAN} process samples (e.g. {few[0]})"
    return ""


def far_rows(f, machines):
    """[(row, times)]: the rows of run `f` (its clean samples) more than FAR
    times slower (times > 1) or faster (times < 1) than every recorded
    machine, when they are FAR_ROWS of its rows or more (else [])."""
    out = []
    for name, r in f.runs.items():
        levels = [median(m.file.runs[name].clean().samples) for m in machines
                  if name in m.file.runs and m.file.runs[name].clean().samples]
        mine = r.clean().samples
        if not levels or not mine or r.error:
            continue
        m = median(mine)
        times = m / max(levels) if m > max(levels) else m / min(levels) if m < min(levels) else 1.0
        if times > FAR or times < 1 / FAR:
            out.append((name, times))
    measured = sum(1 for r in f.runs.values() if r.samples and not r.error)
    return out if len(out) >= max(2, FAR_ROWS * measured) else []


def outlier_note(far, k):
    name, times = max(far, key=lambda x: max(x[1], 1 / x[1]))
    how = f"{times:.1f}x the slowest's time" if times > 1 else f"{1 / times:.1f}x as fast as the fastest"
    return f"{len(far)} row(s) lie far outside the {k} recorded machine(s) (up to {how}: {name})"


def admit(files, paths, machines, outlier_ok):
    """BadInput (one line) for a run that may not join the reference of
    `machines`; returns whether any is an outlier added on the user's word."""
    outlier = False
    for f, p in zip(files, paths):
        why = refusal(f)
        if why:
            raise BadInput(f"--add-machine {p}: {why}")
        far = far_rows(f, machines)
        if far and not outlier_ok:
            raise BadInput(f"--add-machine {p}: {outlier_note(far, len(machines))}: if this machine is right, "
                           f"add it with {OUTLIER_OK} (the reference marks it)")
        outlier |= bool(far)
    return outlier


def kept_by(path, roots=(REFERENCES,)):
    """The reference folder (one of `roots`, or a hardware's folder of
    reference.json and machines/ anywhere) that `path` would land in,
    through links too; "" when none."""
    real = os.path.realpath(path)
    for root in roots:
        if (real + os.sep).startswith(os.path.realpath(root).rstrip(os.sep) + os.sep):
            return root
    folder = os.path.dirname(real)
    while folder != os.path.dirname(folder):
        if os.path.isfile(os.path.join(folder, "reference.json")) and os.path.isdir(os.path.join(folder, "machines")):
            return folder
        folder = os.path.dirname(folder)
    return ""


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


def add_machine(paths, name=None, folder=None, outlier_ok=False):
    """Keep the runs `paths` (of one machine, of one hardware) as machine
    `name` of the reference for their hardware, and remake reference.json
    from every machine kept. A run with loaded rows is refused; one whose
    rows lie far outside the recorded machines only with outlier_ok, and
    it is marked. One writer at a time (a lock on the references' folder);
    a failure leaves the folder and reference.json as they were. Returns
    (reference path, machine name, [notes])."""
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
    if name is not None and not NAME.fullmatch(name):
        raise BadInput(f"--machine {name}: expected one name of letters, digits, '.', '_' and '-'")
    admit(files, paths, [], outlier_ok)  # what refuses a run whatever is kept: before any folder is made
    with held(folder or REFERENCES):
        kept = checked_machines(hwdir, hw)
        if name in kept:
            raise BadInput(f"--machine {name}: {hw}'s reference has a machine of that name already (runs under "
                           f"{os.path.join(hwdir, 'machines', name)}): give this one a name of its own")
        outlier = admit(files, paths, load_machines(path)[1] if kept and os.path.isfile(path) else [], outlier_ok)
        new, notes = new_runs(paths, docs, files, kept)
        target = free_name(hwdir, name, str(docs[0].get("context", {}).get("date", ""))[:10] or "undated")
        # Made whole in a hidden folder, then renamed into place: even a SIGKILL leaves no half machine.
        staging, placed = tempfile.mkdtemp(prefix=STAGING, dir=os.path.dirname(target)), False
        try:
            for i, p in enumerate(new):
                base = os.path.basename(p)
                shutil.copyfile(p, os.path.join(staging, base if not os.path.exists(os.path.join(staging, base))
                                                 else f"{i}-{base}"))
            if outlier:
                write_whole(os.path.join(staging, OUTLIER_MARK), "added with --outlier-ok: its rows lay far outside "
                                                                 "the machines recorded before it\n")
            os.rename(staging, target)
            placed = True
            notes += remake(hwdir, hw)
        except BaseException:  # a refusal, a full disk, a signal: the folder and reference.json still agree
            shutil.rmtree(target if placed else staging, ignore_errors=True)
            raise
    return path, os.path.basename(target), notes


def new_runs(paths, docs, files, kept):
    """([the runs not kept yet], [notes]): a run kept already (by content) is counted once."""
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
    return list(new.values()), notes


def free_name(hwdir, name, date):
    """The new machine's folder (not made yet): `name`, or m<N>-<date> with N
    past every m<N> kept, so that a machine removed by hand leaves no name to reuse."""
    root = os.path.join(hwdir, "machines")
    kept = [m for m in os.listdir(root) if not m.startswith(".")] if os.path.isdir(root) else []
    n = max([int(m.group(1)) for m in map(re.compile(r"m(\d+)-").match, kept) if m] + [len(kept)]) + 1
    while not name and os.path.lexists(os.path.join(root, f"m{n}-{date}")):
        n += 1
    target = os.path.join(root, name or f"m{n}-{date}")
    if os.path.lexists(target):
        raise BadInput(f"--machine {name}: {target} exists already: give this machine a name of its own")
    make_folder(target, "--reference")  # one line naming it where it cannot be made (a link loop, read-only)
    os.rmdir(target)  # (filled beside it, then renamed into place)
    return target


@contextlib.contextmanager
def held(folder):
    """The references' folder, locked (flock on the folder) while a machine is added: two writers
    wait their turn, up to LOCK_SECONDS, then the second fails in one line naming the folder. One
    that cannot be opened is not locked: nothing can be written there either."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # a link loop, a read-only parent: nothing can be kept there (free_name says so)
        yield
        return
    try:
        deadline = time.monotonic() + LOCK_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ToolError(f"{folder}: another --add-machine held it for {LOCK_SECONDS} s: try again")
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def checked_machines(hwdir, hw):
    """{machine: [its runs]} kept under hwdir/machines, each checked before anything changes: a plain
    folder with runs, each a plain file of kind `hw` (BadInput naming what is not)."""
    root = os.path.join(hwdir, "machines")
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for m in [m for m in names if m.startswith(STAGING)]:  # a writer killed while it copied: never a machine
        shutil.rmtree(os.path.join(root, m), ignore_errors=True)
    kept = {}
    for m in [m for m in names if not m.startswith(".")]:
        mdir = os.path.join(root, m)
        if os.path.islink(mdir) or not os.path.isdir(mdir):
            raise BadInput(f"{mdir}: not a machine's folder (a link or a file among the machines of {hw}): "
                           f"replace it with a folder of its runs, or remove it")
        runs = sorted(os.path.join(mdir, f) for f in os.listdir(mdir) if f.endswith(".json"))
        if not runs:
            raise BadInput(f"{mdir}: a machine's folder with no runs (emptied by hand?): put its runs back, or "
                           f"remove the folder")
        for p in runs:
            if os.path.islink(p) or not os.path.isfile(p):
                raise BadInput(f"{p}: a run kept by reference is a plain file, not a link: copy the run in")
            check_kind(read_json(p), p, hw)
        kept[m] = runs
    return kept


def check_kind(doc, path, hw):
    """BadInput naming a run kept among the machines of `hw` that is of another kind."""
    kind = hardware_of(doc.get("context", {}))
    if kind != hw:
        raise BadInput(f"{path}: a run of {kind or 'unknown hardware'} among the machines of {hw}: move it to the "
                       f"reference of its own kind")


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
            for m in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, m)) and not m.startswith(".")}


def remake(hwdir, hw):
    """reference.json from the machines kept in hwdir: each process sample
    an entry with its machine (repetition_index numbers the processes
    throughout), each machine's facts, runs and date. A GPU kind keeps
    only GPU rows: a GPU machine's CPU rows name its CPU, not the GPU.
    Returns [notes]: the rows left out so."""
    notes, ref = [], {"context": {}, "benchmarks": [], "cudabench_reference": {"hardware": hw, "format": FORMAT, "machines": []}}
    k, gpu_kind = 0, not hw.startswith("cpu-")
    for name, runs in machine_folders(hwdir).items():
        docs = [read_json(p) for p in runs]
        for d, p in zip(docs, runs):
            check_kind(d, p, hw)
            load_doc(d, p)  # a run kept by hand is held to what --add-machine checks
        ctx = docs[0].get("context", {})
        dates = sorted(str(d.get("context", {}).get("date", "")) for d in docs)
        ref["context"] = dict(ctx, machine_label=f"reference-{hw}")
        ref["cudabench_reference"]["machines"].append({
            "name": name, "recorded": dates[0], "runs": [os.path.basename(p) for p in runs],
            "facts": {key: ctx[key] for key in FACTS if key in ctx},
            "outlier": os.path.isfile(os.path.join(hwdir, "machines", name, OUTLIER_MARK))})
        for d, p in zip(docs, runs):
            # A process taken beside other load is kept in the run, never in the reference.
            rows = [b for b in unique_rows(d["benchmarks"], p)[0] if b.get("loaded") is not True]
            kept, cpu = [], []
            for b in rows:
                (cpu if gpu_kind and family_of(str(b.get("name"))).name == "cpu" else kept).append(b)
            rows = kept
            if cpu:
                notes.append(f"{p}: {len({b.get('name') for b in cpu})} CPU row(s) left out of {hw}'s reference "
                             f"(they name the host's CPU, not the GPU)")
            if not rows:
                raise BadInput(f"{p}: no row that {hw}'s reference keeps (measured, without other load"
                               f"{', on the GPU' if gpu_kind else ''})")
            procs = sorted({b.get("repetition_index", 0) for b in rows})
            for b in rows:
                index = k + procs.index(b.get("repetition_index", 0))
                ref["benchmarks"].append(dict(b, machine=name, repetition_index=index))
            k += len(procs)
    write_whole(os.path.join(hwdir, "reference.json"), json.dumps(ref, indent=1) + "\n")
    return notes


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
                           facts, f, m.get("runs") or [], m.get("outlier") is True))
    return whole, out
