"""A new benchmark family is one file plus one CMake line
(docs/contributing.md, "Adding a benchmark family"): a throwaway family,
written as the recipe says, builds into bench, lists its row in the order
it asked for, runs it checked, is taken by the default run, the gate and
the history with no other edit, and is gone again after the test.

It edits the checkout (a file in bench/families/ and a line in
bench/CMakeLists.txt) and rebuilds bench twice, so CTest runs it alone
(RUN_SERIAL); both edits are undone whatever happens.
"""
import json
import os
import subprocess

import pytest

from conftest import BENCH, BUILD, PY, ROOT, run
from throwaway_family import FILE, LINE, SOURCE

FAMILY_FILE = os.path.join(ROOT, "bench", "families", FILE)
CMAKE = os.path.join(ROOT, "bench", "CMakeLists.txt")
def build_bench():
    r = run(["cmake", "--build", BUILD, "--target", "bench"], timeout=1200)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


@pytest.mark.skipif(not os.access(BENCH, os.X_OK), reason=f"no bench at {BENCH}: build first")
def test_a_family_is_one_file_and_one_cmake_line(tmp_path):
    with open(CMAKE) as f:
        cmake = f.read()
    assert LINE not in cmake and not os.path.exists(FAMILY_FILE), "a throwaway family left from an earlier run"
    try:
        with open(FAMILY_FILE, "w") as f:
            f.write(SOURCE)
        with open(CMAKE, "a") as f:
            f.write(LINE)
        assert "throwaway_test_family.cpp" in build_bench()  # compiled, not found stale
        listed = run([BENCH, "--benchmark_list_tests"], timeout=120).stdout.split()
        assert "Throwaway/cpu_sum/n:4096" in listed
        # order 15: after the CPU VectorAdd rows (10), before any GPU family (20)
        first_other = next(i for i, n in enumerate(listed) if not n.startswith(("VectorAdd/cpu_", "Copy/cpu_")))
        assert listed[first_other] == "Throwaway/cpu_sum/n:4096", listed
        out = tmp_path / "r.json"
        r = run([BENCH, "--benchmark_filter=^Throwaway/", "--benchmark_min_time=0.01s", f"--benchmark_out={out}"],
                timeout=300)
        assert r.returncode == 0, r.stderr
        rows = [b for b in json.loads(out.read_text())["benchmarks"] if b["name"].startswith("Throwaway/")]
        assert rows and all(b.get("items_per_second", 0) > 0 and not b.get("error_occurred") for b in rows), rows
        tracked_everywhere(tmp_path)
    finally:
        if os.path.exists(FAMILY_FILE):
            os.remove(FAMILY_FILE)
        with open(CMAKE, "w") as f:
            f.write(cmake)
        build_bench()
    listed = run([BENCH, "--benchmark_list_tests"], timeout=120).stdout.split()
    assert not any(n.startswith("Throwaway/") for n in listed)
    assert not os.path.exists(FAMILY_FILE) and open(CMAKE).read() == cmake


def family_rows(kind):
    """The filter scripts/run-bench.sh (default) and scripts/regress.sh (gate) take, as they take it."""
    r = run(["bash", "-c", '. scripts/lib.sh && family_rows "$0" "$1"', kind, BUILD], timeout=120, cwd=ROOT,
            env={"CUDABENCH_ROOT": ROOT})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def tracked_everywhere(tmp_path):
    """The family's row is in the default run's rows and the gate's, and a
    gate run of the gate's rows puts it in the history and on its page."""
    for kind in ("default", "gate"):
        listed = run([BENCH, "--benchmark_list_tests", f"--benchmark_filter={family_rows(kind)}"], timeout=120)
        assert "Throwaway/cpu_sum/n:4096" in listed.stdout.split(), (kind, listed.stdout)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    history = tmp_path / "history" / "this-machine"
    r = run([PY, os.path.join(ROOT, "scripts", "ab.py"), "run", "--a", BENCH, "--b", BENCH, "--filter",
             family_rows("gate"), "--processes", "2", "--reps", "1", "--min-time", "0.01", "--report-only",
             "--out", str(tmp_path / "ab"), "--history", str(history), "--rev-a", head, "--rev-b", head],
            timeout=600, cwd=ROOT)
    assert r.returncode in (0, 5), r.stdout[-3000:] + r.stderr[-3000:]
    r = run([PY, os.path.join(ROOT, "scripts", "history.py"), "page", str(tmp_path / "history"), "--out",
             str(tmp_path / "page")], timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Throwaway/cpu_sum/n:4096" in (tmp_path / "page" / "README.md").read_text()
