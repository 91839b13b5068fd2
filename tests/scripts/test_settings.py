"""The numeric settings (common/settings.json): bench and train (C++,
common/settings.h), the Python tools and the shell scripts
(cudabench/base/settings.py through lib.sh's `setting`) accept and refuse
the same values, a refused one is exit 2 in one line naming it, and
docs/building.md gives each setting's range."""
import json
import os
import subprocess

import pytest

from conftest import BENCH, PY, ROOT, SCRIPTS, TRAIN

TABLE = json.load(open(os.path.join(ROOT, "common", "settings.json")))
# The probe's values (0, -1, NaN, 99999, abc, " 2") and more of the kind.
VALUES = ["0", "-1", "nan", "NaN", "inf", "99999", "abc", " 2", "2 ", "1e3", "+5", "0x10", "1.", "0.5", ".5",
          "00007", "15", "600", "601", "9999", "86400", "86401", "3.25",
          # at most 15 digits in all, whatever the point (the review's cases)
          "000000000000007", "0000000000000007", "10.00000000000000", "0.000000000000001", "0.00001",
          "86400.000000000001", "9" * 40]


def expected(s, raw):
    """What the table says of raw: accepted or not (written out, not parsed by the code under test)."""
    if raw == "":
        return True  # unset: the default
    if len(raw.replace(".", "")) > 15:
        return False
    whole = raw.isdigit()
    decimal = not s["whole"] and raw.count(".") == 1 and raw.split(".")[0].isdigit() and \
        (raw.split(".")[1] == "" or raw.split(".")[1].isdigit())
    return (whole or decimal) and raw.isascii() and s["min"] <= float(raw) <= s["max"]


def bench_says(name, raw):
    env = dict(os.environ, **{name: raw})
    r = subprocess.run([BENCH, "--benchmark_list_tests", "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/"],
                       capture_output=True, text=True, env=env, timeout=60)
    return r


def python_says(name, raw):
    return subprocess.run([PY, "-m", "cudabench.base.settings", name], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=SCRIPTS, **{name: raw}))


def shell_says(name, raw):
    return subprocess.run(["bash", "-c", f"CUDABENCH_ROOT={ROOT}; . {SCRIPTS}/lib.sh; setting {name}"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, **{name: raw}))


@pytest.mark.skipif(not os.access(BENCH, os.X_OK), reason="bench is not built")
@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_reader_takes_and_refuses_the_same_values(name):
    """Every value for a whole and a decimal setting; each other setting at
    its bounds (they share the parser, and their ranges are their own)."""
    s = TABLE[name]
    bounds = [f"{s['min']:g}", f"{s['max']:g}", f"{s['max'] + 1:g}", f"{s['min'] - 1:g}", "abc", ""]
    for raw in VALUES if name in ("CUDABENCH_PROBE_SECONDS", "CUDABENCH_PROGRESS_SECONDS") else bounds:
        ok = expected(s, raw)
        for who, r in (("bench", bench_says(name, raw)), ("python", python_says(name, raw)),
                       ("shell", shell_says(name, raw))):
            assert r.returncode == (0 if ok else 2), f"{who}: {name}={raw!r}: exit {r.returncode}\n{r.stderr}"
            if not ok:
                said = (r.stdout if who == "python" else r.stderr).strip().splitlines()
                assert len(said) == 1 and f"{name}={raw}: expected" in said[0], (who, said)
                assert f"{s['min']:g} to {s['max']:g}" in said[0]
        if ok:  # the same value from each, in digits bash can read
            said = shell_says(name, raw).stdout.strip()
            assert float(python_says(name, raw).stdout) == float(said) == float(raw or s["default"]) and "e" not in said


@pytest.mark.skipif(not os.access(TRAIN, os.X_OK), reason="train is not built (it needs LibTorch)")
def test_train_refuses_a_bad_setting_before_it_trains():
    r = subprocess.run([TRAIN, "--epochs", "1"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, CUDABENCH_IMPORT_SECONDS="0"))
    assert r.returncode == 2 and r.stderr.startswith("train: CUDABENCH_IMPORT_SECONDS=0: expected"), r.stderr


def test_a_python_tool_and_a_script_refuse_a_bad_setting_before_any_work(tmp_path):
    env = dict(os.environ, CUDABENCH_PROBE_SECONDS="nan")
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert (r.returncode, r.stderr.count("\n")) == (2, 1) and "CUDABENCH_PROBE_SECONDS=nan" in r.stderr, r.stderr
    r = subprocess.run(["bash", os.path.join(SCRIPTS, "matrix.sh")], capture_output=True, text=True, env=env,
                       timeout=60, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "matrix.sh: CUDABENCH_PROBE_SECONDS=nan: expected whole seconds for each "
                                           "probe of the driver, 1 to 9999\n"), r.stderr


def test_the_docs_give_each_settings_range():
    with open(os.path.join(ROOT, "docs", "building.md")) as f:
        rows = {line.split("|")[1].strip(" `"): line for line in f if line.startswith("| `CUDABENCH_")}
    for name, s in TABLE.items():
        assert name in rows, name
        assert f"{s['min']:g} to {s['max']:g}" in rows[name] and f"default {s['default']:g}" in rows[name], rows[name]


def test_a_value_that_holds_a_newline_or_an_escape_stays_one_line():
    raw = "5\nrun-bench.sh: all rows faster\x1b[32m"
    for who, r in (("bench", bench_says("CUDABENCH_PROBE_SECONDS", raw)),
                   ("python", python_says("CUDABENCH_PROBE_SECONDS", raw)),
                   ("shell", shell_says("CUDABENCH_PROBE_SECONDS", raw))):
        said = (r.stdout if who == "python" else r.stderr)
        assert r.returncode == 2 and said.count("\n") == 1 and "\x1b" not in said, (who, said)
        assert "CUDABENCH_PROBE_SECONDS=5\\nrun-bench.sh: all rows faster\\x1b[32m: expected" in said, (who, said)


def test_without_python3_a_script_starts_and_a_setting_it_reads_is_refused(tmp_path):
    """Before python3 is there (setup.sh needs it before it installs
    anything): script_start's check of every setting passes, and reading
    one, set or not, is refused in one line (3): lib.sh keeps no copy of
    the table or its rules to fall back on."""
    from bad_input import path_without_python
    path = path_without_python(str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "CUDABENCH_PROCESSES"}
    check = f"CUDABENCH_ROOT={ROOT}; . {SCRIPTS}/lib.sh; setting"
    assert subprocess.run(["/bin/bash", "-c", check], env=dict(env, PATH=path)).returncode == 0
    for value in ({}, {"CUDABENCH_PROCESSES": "3"}):
        r = subprocess.run(["/bin/bash", "-c", check + " CUDABENCH_PROCESSES"], capture_output=True, text=True,
                           env=dict(env, PATH=path, **value))
        assert r.returncode == 3 and r.stdout == "" and "needs python3" in r.stderr, r
