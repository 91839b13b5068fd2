"""A reference folder under concurrency, hand edits and misdirected outputs
(compare.py --add-machine, --markdown): writers take turns and names never
collide, an existing machine is never joined, a folder emptied by hand or a
link is refused before anything changes, a GPU kind keeps only GPU rows,
and no report lands on a file the reference keeps."""
import glob
import json
import os
import subprocess
import sys

from conftest import ROOT

FIX = os.path.join(ROOT, "tests", "fixtures", "compare")


def f(name):
    return os.path.join(FIX, name)


def run(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), *args],
                          capture_output=True, text=True, timeout=300)

H200 = sorted(glob.glob(os.path.join(ROOT, "results", "reference", "nvidia-h200", "machines", "*", "*.json")))[0]


def variant(tmp_path, name, factor, src=None):
    """The fixture run (or src) with every time scaled: another machine's run of the same kind."""
    doc = json.load(open(src or f("base_processes.json")))
    for b in doc["benchmarks"]:
        for k in ("real_time", "cpu_time"):
            if k in b:
                b[k] *= factor
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def state(refs):
    """Every file under refs, with its bytes: what a refused change must leave as it was."""
    return {p: open(p, "rb").read() for p in glob.glob(f"{refs}/**", recursive=True) if os.path.isfile(p)}


def machines(refs):
    (ref,) = glob.glob(f"{refs}/*/reference.json")
    names = [m["name"] for m in json.load(open(ref))["cudabench_reference"]["machines"]]
    assert sorted(names) == sorted(os.listdir(os.path.join(os.path.dirname(ref), "machines")))  # they agree
    return names


def test_concurrent_writers_with_default_names_each_get_a_machine_of_their_own(tmp_path):
    refs = str(tmp_path / "refs")
    runs = [variant(tmp_path, f"vm{i}", 1 + 0.01 * i) for i in range(3)]
    procs = [subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), p, "--add-machine",
                               "--reference", refs], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in runs]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    names = machines(refs)
    assert len(set(names)) == 3, names
    # A machine removed by hand leaves no name to reuse: the next is m4, not a second m3.
    (gone,) = [n for n in names if n.startswith("m1-")]
    hwdir = os.path.dirname(glob.glob(f"{refs}/*/reference.json")[0])
    for p in glob.glob(os.path.join(hwdir, "machines", gone, "*")):
        os.remove(p)
    os.rmdir(os.path.join(hwdir, "machines", gone))
    r = run(variant(tmp_path, "vm4", 1.04), "--add-machine", "--reference", refs)
    assert r.returncode == 0 and "machine m4-" in r.stdout, r.stdout + r.stderr
    assert len(machines(refs)) == 3


def test_an_existing_machine_is_never_joined(tmp_path):
    refs = str(tmp_path / "refs")
    assert run(variant(tmp_path, "a", 1.0), "--add-machine", "--machine", "vm-a", "--reference", refs).returncode == 0
    before = state(refs)
    r = run(variant(tmp_path, "b", 1.01), "--add-machine", "--machine", "vm-a", "--reference", refs)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--machine vm-a" in r.stderr, r.stderr
    assert state(refs) == before


def test_a_machine_folder_emptied_by_hand_or_a_link_is_refused_before_anything_changes(tmp_path):
    refs = str(tmp_path / "refs")
    assert run(variant(tmp_path, "a", 1.0), "--add-machine", "--machine", "vm-a", "--reference", refs).returncode == 0
    hwdir = os.path.dirname(glob.glob(f"{refs}/*/reference.json")[0])
    empty = os.path.join(hwdir, "machines", "vm-empty")
    os.mkdir(empty)
    for what in ("emptied", "a link"):
        if what == "a link":
            os.rmdir(empty)
            os.symlink(os.path.join(hwdir, "machines", "vm-a"), empty)
        before = state(refs)
        r = run(variant(tmp_path, "b", 1.01), "--add-machine", "--machine", "vm-b", "--reference", refs)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and empty in r.stderr, (what, r.stderr)
        assert state(refs) == before and not os.path.exists(os.path.join(hwdir, "machines", "vm-b")), what


def test_a_gpu_kind_keeps_only_gpu_rows_and_refuses_a_run_with_none(tmp_path):
    doc = json.load(open(H200))
    for b in doc["benchmarks"]:  # its repetitions as processes: a run the reference takes
        b["process"] = b["repetition_index"]
    gpu_rows = {b["name"] for b in doc["benchmarks"]}
    cpu = [dict(b, name=b["name"].replace("cuda_v4", "cpu_scalar"), run_name=b["run_name"].replace("cuda_v4", "cpu_scalar"))
           for b in doc["benchmarks"] if "cuda_v4" in b["name"]]
    assert cpu
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(dict(doc, benchmarks=doc["benchmarks"] + cpu)))
    refs = str(tmp_path / "refs")
    r = run(str(mixed), "--add-machine", "--reference", refs)
    assert r.returncode == 0 and "CPU row(s) left out of nvidia-h200's reference" in r.stderr, r.stderr
    (ref,) = glob.glob(f"{refs}/nvidia-h200/reference.json")
    assert {b["name"] for b in json.load(open(ref))["benchmarks"]} == gpu_rows
    only_cpu = tmp_path / "cpu_only.json"
    only_cpu.write_text(json.dumps(dict(doc, benchmarks=cpu)))
    before = state(refs)
    r = run(str(only_cpu), "--add-machine", "--reference", refs)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no row that nvidia-h200's reference keeps" in r.stderr
    assert state(refs) == before


def test_no_report_lands_on_a_file_the_reference_keeps(tmp_path):
    refs = str(tmp_path / "refs")
    assert run(variant(tmp_path, "a", 1.0), "--add-machine", "--machine", "vm-a", "--reference", refs).returncode == 0
    (kept,) = glob.glob(f"{refs}/*/machines/vm-a/*.json")
    link = tmp_path / "out.md"
    link.symlink_to(os.path.join(os.path.dirname(kept), "new.md"))
    before = state(refs)
    b = variant(tmp_path, "b", 1.01)
    for args in (["--reference", refs, "--markdown", kept], ["--reference", refs, "--markdown", str(link)],
                 [kept, "--plot", os.path.dirname(kept)], [kept, "--markdown", os.path.join(os.path.dirname(kept), "..", "..", "reference.json")],
                 ["--reference", refs, "--markdown", os.path.join(refs, "other-kind", "machines", "m", "r.md")]):
        r = run(b, *args)
        flag, out = args[-2:]
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"{flag} " in r.stderr, (out, r.stderr)
    assert state(refs) == before


def test_compare_stopped_while_it_plots_names_itself(tmp_path):
    """The fifth probe's leftover: compare.py stopped by SIGTERM while it
    made its plots said "report: stopped by signal 15" (it ran report's main)."""
    import signal
    import time
    out = tmp_path / "plots"
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "compare.py"), f("base.json"),
                          f("regression.json"), "--report-only", "--plot", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not out.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    if p.returncode == 0:
        return  # it had finished: nothing to say
    assert p.returncode == 128 + signal.SIGTERM and err == "compare: stopped by signal 15\n", err


def test_a_run_of_another_kind_put_among_the_machines_is_named_and_nothing_changes(tmp_path):
    refs = str(tmp_path / "refs")
    assert run(variant(tmp_path, "a", 1.0), "--add-machine", "--machine", "vm-a", "--reference", refs).returncode == 0
    (hwdir,) = glob.glob(f"{refs}/*/machines/vm-a")
    stray = os.path.join(hwdir, "h200.json")
    with open(stray, "w") as out:
        out.write(open(H200).read())
    before = state(refs)
    r = run(variant(tmp_path, "b", 1.01), "--add-machine", "--machine", "vm-b", "--reference", refs)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"{stray}: a run of nvidia-h200 among the machines of cpu-" in r.stderr, r.stderr
    assert state(refs) == before


def test_a_machine_half_copied_when_its_writer_was_killed_never_joins(tmp_path):
    """--add-machine fills a hidden folder, then renames it into place: one
    killed while it copied (SIGKILL: no cleanup) leaves that folder, which is
    never read as a machine and goes at the next add."""
    refs = str(tmp_path / "refs")
    assert run(variant(tmp_path, "a", 1.0), "--add-machine", "--machine", "vm-a", "--reference", refs).returncode == 0
    (root,) = glob.glob(f"{refs}/*/machines")
    os.mkdir(os.path.join(root, ".adding-killed"))
    with open(os.path.join(root, ".adding-killed", "half.json"), "w") as out:
        out.write(open(variant(tmp_path, "half", 1.5)).read())
    r = run(variant(tmp_path, "b", 1.01), "--add-machine", "--machine", "vm-b", "--reference", refs)
    assert r.returncode == 0, r.stderr
    assert sorted(machines(refs)) == ["vm-a", "vm-b"] and sorted(os.listdir(root)) == ["vm-a", "vm-b"]
