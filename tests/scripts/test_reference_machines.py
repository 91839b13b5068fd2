"""References made of machines (models/references.py, models/kind.py):
every recorded machine judged against the others (leave-one-out, on the
committed files), a run with one thread against machines of its kind, one
recorded machine (no verdict, and why), and adding a machine."""
import glob
import json
import math
import os
import shutil

from conftest import ROOT, run_script
from cudabench.models.references import remake
from cudabench.results.gbench import load

REFS = os.path.join(ROOT, "results", "reference")
INTEL = os.path.join(REFS, "cpu-intel-r-xeon-r-processor-cpuid-unknown-isa-unknown-2c", "machines")
TWO_THREAD_ROWS = ("cpu_omp_simd", "cpu_omp_nt")
# OMP_NUM_THREADS=1 against 2 on this VM kind: +92.8% and +90.5% on the
# two-thread rows (results/archive/ab-calibration/.../omp).
ONE_THREAD = 1.9


def machines_of(hwdir):
    root = os.path.join(hwdir, "machines")
    return {m: sorted(glob.glob(os.path.join(root, m, "*.json"))) for m in sorted(os.listdir(root))} \
        if os.path.isdir(root) else {}


def rows(path):
    return {b.get("run_name") or b["name"] for b in json.load(open(path))["benchmarks"]}


def add(refs, name, *runs):
    r = run_script("compare.py", "--add-machine", *runs, "--machine", name, "--reference", refs)
    assert r.returncode == 0, r.stderr
    return r


def verdicts(stdout):
    """{row: verdict} from the report's table."""
    out = {}
    for line in stdout.splitlines():
        cells = line.split()
        if line.startswith(("VectorAdd/", "Copy/", "Mnist", "Transfer/")):
            out[cells[0]] = next(c for c in cells if c in ("same", "slower", "faster", "undecided", "noisy", "only",
                                                        "error", "skipped"))
    return out


def scaled(src, dest, factor_of, context=None):
    """src's run with each row's times multiplied by factor_of(row name)."""
    doc = json.load(open(src))
    for b in doc["benchmarks"]:
        f = factor_of(b.get("run_name") or b["name"])
        for k in ("real_time", "cpu_time"):
            b[k] *= f
    doc["context"].update(context or {})
    dest.write_text(json.dumps(doc))
    return str(dest)


def test_leave_one_out_no_recorded_machine_is_slower_or_faster_than_the_others(tmp_path):
    hwdirs = [d for d in glob.glob(os.path.join(REFS, "*")) if len(machines_of(d)) >= 2]
    assert {os.path.basename(d) for d in hwdirs} >= {"cpu-intel-r-xeon-r-processor-cpuid-unknown-isa-unknown-2c", "nvidia-h200"}
    for hwdir in hwdirs:
        machines = machines_of(hwdir)
        for left_out, runs in machines.items():
            refs = str(tmp_path / os.path.basename(hwdir) / left_out)
            kept = os.path.join(refs, os.path.basename(hwdir))
            for name, theirs in machines.items():  # as committed (h200-vm1's files predate the refusal of one process)
                if name != left_out:
                    os.makedirs(os.path.join(kept, "machines", name))
                    for p in theirs:
                        shutil.copy(p, os.path.join(kept, "machines", name))
            remake(kept, os.path.basename(hwdir))
            theirs = {row for name, paths in machines.items() if name != left_out for p in paths for row in rows(p)}
            judged = [p for p in runs if rows(p) & theirs]  # an H200 headline file shares no row with a bench file
            assert judged, left_out
            for path in judged:
                r = run_script("compare.py", path, "--reference", refs)
                assert r.returncode == 0, r.stdout + r.stderr  # no row slower
                got = verdicts(r.stdout)
                assert got and not {"slower", "faster"} & set(got.values()), (left_out, path, got)
                if len(machines) == 2:
                    assert "no verdict, since one machine cannot show how machines of this kind differ" in r.stdout
                    offer = f"add this one to the reference with scripts/compare.py --add-machine {path}"
                    if load(path).processes > 1:
                        assert f"one machine of this kind is recorded: {offer}" in r.stdout
                    else:  # never offered where --add-machine would refuse it
                        assert offer not in r.stdout and "not for the reference: its samples are repetitions" \
                            in r.stdout, r.stdout


def third_machine(tmp_path):
    """A reference of three machines: vm-a, vm-b, and one as far beyond
    vm-b as vm-b is beyond vm-a, row by row (made here: two of this kind
    are recorded)."""
    a, b = machines_of(os.path.dirname(INTEL))["vm-a"], machines_of(os.path.dirname(INTEL))["vm-b"]
    med = lambda path: {x["run_name"]: x["real_time"] for x in json.load(open(path))["benchmarks"]
                        if x["repetition_index"] == 0}
    ma, mb = med(a[0]), med(b[0])
    c = [scaled(p, tmp_path / f"c{i}.json", lambda n: mb[n] / ma[n]) for i, p in enumerate(b)]
    refs = str(tmp_path / "refs")
    add(refs, "vm-a", *a)
    add(refs, "vm-b", *b)
    add(refs, "vm-c", *c)
    return refs, a


def test_one_thread_is_slower_than_three_machines_on_the_two_thread_rows_and_the_cause_names_threads(tmp_path):
    refs, a = third_machine(tmp_path)
    one = scaled(a[1], tmp_path / "one-thread.json",
                 lambda n: ONE_THREAD if any(x in n for x in TWO_THREAD_ROWS) else 1.0, {"cpu_threads_used": "1"})
    r = run_script("compare.py", one, "--reference", refs)
    assert r.returncode == 1, r.stdout + r.stderr  # slower: the gate's code
    got = verdicts(r.stdout)
    slower = {n for n, v in got.items() if v == "slower"}
    assert slower and all(any(x in n for x in TWO_THREAD_ROWS) for n in slower), got
    assert len(slower) >= 6, got  # most of the ten two-thread rows
    assert all(v == "same" for n, v in got.items() if "cpu_scalar" in n), got
    assert "likeliest cause threads the CPU rows use 1 against 2" in r.stdout
    assert "below the slowest of 3 recorded machines" in r.stdout


def test_a_machine_of_the_kind_is_as_fast_as_three_and_is_offered_for_adding(tmp_path):
    refs, a = third_machine(tmp_path)
    third_run = os.path.join(ROOT, "results", "archive", "cpu-intel-r-xeon-r-processor-2c", "cuda-13.0.88",
                             "latest.json")  # vm-a's third default run, in no reference
    r = run_script("compare.py", third_run, "--reference", refs)
    assert r.returncode == 0, r.stdout + r.stderr
    got = verdicts(r.stdout)
    assert not {"slower", "faster"} & set(got.values()) and list(got.values()).count("same") >= 25, got
    assert f"not an outlier, on a clean run: add this one to the reference with scripts/compare.py --add-machine " \
           f"{third_run}" in r.stdout
    r = run_script("compare.py", a[1], "--reference", refs)
    assert r.returncode == 0 and "this run is in the reference already, as machine vm-a" in r.stdout


def test_with_one_recorded_machine_the_ratio_is_given_but_no_verdict(tmp_path):
    a = machines_of(os.path.dirname(INTEL))["vm-a"]
    refs = str(tmp_path / "refs")
    add(refs, "vm-a", *a)
    one = scaled(a[1], tmp_path / "one-thread.json",
                 lambda n: ONE_THREAD if any(x in n for x in TWO_THREAD_ROWS) else 1.0, {"cpu_threads_used": "1"})
    r = run_script("compare.py", one, "--reference", refs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(verdicts(r.stdout).values()) == {"undecided"}
    row = next(x for x in r.stdout.splitlines() if x.startswith("VectorAdd/cpu_omp_simd/n:1048576"))
    assert "0.53x" in row  # the ratio, with its interval
    assert "one machine of this kind is recorded: add this one" in r.stdout


def test_adding_machines_keeps_each_apart_with_its_runs_and_facts_and_counts_a_run_once(tmp_path):
    a, b = (machines_of(os.path.dirname(INTEL))[m] for m in ("vm-a", "vm-b"))
    refs = tmp_path / "refs"
    add(str(refs), "vm-a", *a)
    r = add(str(refs), "vm-b", b[0], b[0], b[1])
    assert "the same run as" in r.stderr and "counted once" in r.stderr
    hw = refs / "cpu-intel-r-xeon-r-processor-cpuid-unknown-isa-unknown-2c"
    assert sorted(os.listdir(hw / "machines" / "vm-b")) == sorted(os.path.basename(p) for p in b)
    ref = json.load(open(hw / "reference.json"))
    meta = ref["cudabench_reference"]["machines"]
    assert [m["name"] for m in meta] == ["vm-a", "vm-b"]
    assert meta[1]["facts"]["host_kernel"] == "6.18.44-fc-v1147" and meta[1]["recorded"].startswith("2026-12-04")
    assert {x["machine"] for x in ref["benchmarks"]} == {"vm-a", "vm-b"}
    processes = {(x["machine"], x["repetition_index"]) for x in ref["benchmarks"]}
    assert len(processes) == 16 and len({i for _, i in processes}) == 16  # 2 machines x 2 runs x 4 processes
    r = run_script("compare.py", "--add-machine", b[1], "--machine", "vm-c", "--reference", str(refs))
    assert r.returncode == 2 and "every run given is in the reference already" in r.stderr
    r = run_script("compare.py", "--add-machine", b[1], "--machine", "no/such", "--reference", str(refs))
    assert r.returncode == 2 and "--machine no/such" in r.stderr


def test_the_machine_bounds_widen_with_fewer_machines():
    from cudabench.results.stats import machine_bounds
    spread = [0.0, 0.1]
    widths = [machine_bounds(spread * k, confidence=0.975)[1] for k in (1, 2, 5)]
    assert widths[0] > widths[1] > widths[2] > 0
    centre, h = machine_bounds([math.log(2.0), math.log(2.0)], spread_floor=0.05, confidence=0.975)
    assert math.isclose(centre, math.log(2.0)) and h > 0.05  # machines that agree exactly: still the floor


VM_C = sorted(glob.glob(os.path.join(REFS, "cpu-amd-epyc-cpuid-unknown-avx512-2c", "machines", "vm-c", "*.json")))


def loaded_copy(src, dest, share):
    """src's run as if `share` of its processes had run beside a compiler."""
    doc = json.load(open(src))
    procs = sorted({b["repetition_index"] for b in doc["benchmarks"]})
    busy = set(procs[:max(1, round(share * len(procs)))])
    for b in doc["benchmarks"]:
        if b["repetition_index"] in busy:
            b.update(loaded=True, load=0.61)
    dest.write_text(json.dumps(doc))
    return str(dest)


def test_a_loaded_run_is_refused_and_never_offered_for_adding(tmp_path):
    refs = str(tmp_path / "refs")
    busy = loaded_copy(VM_C[1], tmp_path / "busy.json", 1.0)
    r = run_script("compare.py", "--add-machine", busy, "--reference", refs)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "rows ran beside other load" in r.stderr and "rerun on an idle machine" in r.stderr
    assert not os.path.exists(refs) or not glob.glob(os.path.join(refs, "*", "reference.json"))
    add(refs, "vm-c", VM_C[0])
    r = run_script("compare.py", busy, "--reference", refs)
    assert "not for the reference: " in r.stdout and "--add-machine" not in r.stdout, r.stdout
    # A run with a few loaded processes keeps its clean ones: the reference holds none taken beside load.
    some = loaded_copy(VM_C[1], tmp_path / "some.json", 0.05)  # one process
    add(refs, "vm-c2", some)
    (ref,) = glob.glob(os.path.join(refs, "*", "reference.json"))
    entries = json.load(open(ref))["benchmarks"]
    assert not any(b.get("loaded") for b in entries) and {b["machine"] for b in entries} == {"vm-c", "vm-c2"}


def test_repetitions_inside_one_process_are_refused_for_a_reference(tmp_path):
    base = os.path.join(ROOT, "tests", "fixtures", "compare", "base.json")  # Google Benchmark's own: one process
    r = run_script("compare.py", "--add-machine", base, "--reference", str(tmp_path / "refs"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "repetitions inside one process" in r.stderr and "scripts/run-bench.sh" in r.stderr, r.stderr
    assert not (tmp_path / "refs").exists()


def test_a_machine_far_outside_the_recorded_ones_joins_only_when_the_user_says_so(tmp_path):
    refs = str(tmp_path / "refs")
    add(refs, "vm-c", VM_C[0])
    slow = scaled(VM_C[1], tmp_path / "slow.json", lambda name: 3.0 if "/cpu_" in name else 1.0)
    r = run_script("compare.py", slow, "--reference", refs)
    assert "--outlier-ok" in r.stdout and "lie far outside the 1 recorded machine(s)" in r.stdout, r.stdout
    r = run_script("compare.py", "--add-machine", slow, "--machine", "odd", "--reference", refs)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "--outlier-ok" in r.stderr, r.stderr
    assert "x the slowest's time: " in r.stderr and "cpu_" in r.stderr.split("time: ")[1], r.stderr
    r = run_script("compare.py", "--add-machine", slow, "--machine", "odd", "--reference", refs, "--outlier-ok")
    assert r.returncode == 0, r.stderr
    r = run_script("compare.py", VM_C[1], "--reference", refs)
    assert "odd (recorded 2026-12-06, an outlier added with --outlier-ok)" in r.stdout, r.stdout
    assert run_script("compare.py", VM_C[1], "--outlier-ok").returncode == 2  # only with --add-machine


def test_a_run_of_another_kind_put_among_a_kinds_machines_by_hand_is_refused(tmp_path):
    refs = tmp_path / "refs"
    add(str(refs), "vm-c", VM_C[0])
    (hwdir,) = refs.glob("*")
    other = hwdir / "machines" / "vm-c" / "intel.json"
    other.write_bytes(open(machines_of(os.path.dirname(INTEL))["vm-a"][0], "rb").read())
    r = run_script("compare.py", "--add-machine", VM_C[1], "--machine", "vm-c3", "--reference", str(refs))
    assert r.returncode == 2 and "intel.json: a run of cpu-intel" in r.stderr and "its own kind" in r.stderr, r.stderr
    assert not (hwdir / "machines" / "vm-c3").exists()  # refused before anything was kept
