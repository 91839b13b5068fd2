"""The scripts held to the exit-code contract (tests/bad_input.py):
compare.py, report.py, the fleet, the A/B runner and the shell scripts,
case by case; then the faults no table can hold: a full disk, a read-only
folder, a second run in one checkout, a signal to a script's group."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BENCH, PY, ROOT, SCRIPTS
from bad_input import (BASE, BASE_RUN, Case, FAKE, FIX, ab, bench_copy, hard_linked, dev_full_is_intact, first_again, fleet_run, fleet_sh,
                       future_reference, gbench, history, linked, path_without_passwd_home, path_without_python, py,
                       rows_twice, run_case, script, self_link, set_first, skip_first_row, tmpfs, write)

OUT = "{tmp}/out.json"
PRE = "{tmp}/pre.json"   # exists before the run, with known content

CASES = [
    # ddp_scaling.py
    py("ddp_scaling.py", "--ranks", "0,2", id="ddp-scaling-ranks-zero", rc=2, names="--ranks 0,2"),
    py("ddp_scaling.py", "--ranks", "a", id="ddp-scaling-ranks-junk", rc=2, names="--ranks a"),
    py("ddp_scaling.py", "--ranks", "4096", id="ddp-scaling-ranks-beyond-the-cpus", rc=2, names="local ranks on"),
    py("ddp_scaling.py", "--ranks", "2,2", id="ddp-scaling-ranks-repeated", rc=2, names="--ranks 2,2"),
    py("ddp_scaling.py", "--train", "{tmp}/nope", id="ddp-scaling-train-missing", rc=2, names="--train {tmp}/nope"),
    py("ddp_scaling.py", "--repetitions", "0", id="ddp-scaling-repetitions-zero", rc=2, names="--repetitions 0"),
    py("ddp_scaling.py", "--device", "tpu", id="ddp-scaling-device", rc=2, names="--device"),
    py("ddp_scaling.py", "--batch-size", "0", id="ddp-scaling-batch-zero", rc=2, names="--batch-size 0"),
    py("ddp_scaling.py", "--limit", "0", id="ddp-scaling-limit-zero", rc=2, names="--limit 0"),
    py("ddp_scaling.py", "--threads-per-rank", "-1", id="ddp-scaling-threads-negative", rc=2,
       names="--threads-per-rank -1"),
    # compare.py
    py("compare.py", BASE, id="compare-one-file", rc=2, names="need at least two files"),
    # filters are matched by RE2, as bench matches them: linear time, no backtracking
    py("compare.py", BASE, BASE, "--filter", "(.*)*z", id="compare-filter-backtracking", rc=2,
       names="no benchmarks in common matching '(.*)*z'"),
    py("compare.py", BASE, BASE, "--filter", "(a", id="compare-filter-invalid", rc=2,
       names="--filter (a: not a valid regular expression"),
    py("compare.py", BASE, BASE, "--plot", lambda t: write(t, "plotfile", b"x") + "/p", id="compare-plot-under-a-file",
       rc=2, names="--plot"),
    py("samples.py", "run", "--bench", BENCH, "--out", "{tmp}/s.json", "--", "--benchmark_list_tests",
       id="samples-list-tests", rc=2, names="--benchmark_list_tests: not for a measured run", outputs=["{tmp}/s.json"]),
    py("samples.py", "run", "--bench", BENCH, "--out", "{tmp}/s.json", "--", "--benchmark_filter=x",
       id="samples-own-filter", rc=2, names="give --filter instead", outputs=["{tmp}/s.json"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "{tmp}/ab", "--process-seconds", "0",
       id="ab-process-seconds-zero", rc=2, names="--process-seconds", outputs=["{tmp}/ab"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "{tmp}/ab", "--history",
       lambda t: write(t, "histfile", b"x") + "/h", "--rev-a", "HEAD", "--rev-b", "HEAD", id="ab-history-under-a-file",
       rc=2, names="--history", outputs=["{tmp}/ab"]),
    py("compare.py", BASE, "{tmp}/missing.json", id="compare-missing-file", rc=2,
       names="{tmp}/missing.json: cannot read"),
    py("compare.py", BASE, lambda t: write(t, "latin1.json", b'{"benchmarks": [], "context": {"h": "\xe9"}}'),
       id="compare-not-utf8", rc=2, names="latin1.json: not UTF-8"),
    py("compare.py", BASE, lambda t: write(t, "bad.json", b"{not json"), id="compare-not-json", rc=2,
       names="bad.json: not valid JSON"),
    py("compare.py", BASE, lambda t: gbench(t, "null.json", set_first("real_time", None)),
       id="compare-real-time-null", rc=2, names="null.json: VectorAdd/cuda_v4/n:1000000/manual_time: real_time"),
    py("compare.py", BASE, lambda t: gbench(t, "str.json", set_first("real_time", "fast")),
       id="compare-real-time-string", rc=2, names="str.json: VectorAdd/cuda_v4/n:1000000/manual_time: real_time"),
    py("compare.py", BASE, lambda t: gbench(t, "neg.json", set_first("real_time", -5.0)),
       id="compare-real-time-negative", rc=2, names="neg.json"),
    py("compare.py", BASE, lambda t: gbench(t, "zero.json", set_first("real_time", 0)),
       id="compare-real-time-zero", rc=2, names="zero.json"),
    py("compare.py", BASE, lambda t: gbench(t, "unit.json", set_first("time_unit", "min")),
       id="compare-time-unit", rc=2, names="unit.json"),
    py("compare.py", BASE, lambda t: gbench(t, "ctx.json", lambda d: d.update(context=[1, 2])),
       id="compare-context-list", rc=2, names="ctx.json: 'context' is a list"),
    py("compare.py", BASE, lambda t: gbench(t, "noname.json", lambda d: d["benchmarks"][0].pop("name")),
       id="compare-entry-without-name", rc=2, names="noname.json: benchmarks[0] has no name"),
    py("compare.py", BASE, BASE, "--filter", "[", id="compare-filter-invalid", rc=2, names="--filter ["),
    py("compare.py", BASE, BASE, "--markdown", "{tmp}/no/dir/r.md", id="compare-markdown-missing-dir", rc=2,
       names="--markdown {tmp}/no/dir/r.md: cannot write"),
    py("compare.py", BASE, BASE, "--markdown", "{tmp}", id="compare-markdown-is-dir", rc=2,
       names="is a directory"),
    py("compare.py", BASE, BASE, "--labels", "a", id="compare-labels-count", rc=2, names="--labels"),
    py("compare.py", BASE, BASE, "--labels", "a,a", id="compare-labels-twice", rc=2, names="'a' given twice"),
    py("compare.py", BASE, BASE, "--metric", "joules", id="compare-metric", rc=2, names="--metric"),
    py("compare.py", BASE, BASE, "--threshold", "nan", id="compare-threshold-nan", rc=2, names="--threshold"),
    py("compare.py", BASE, BASE, "--floors", lambda t: write(t, "floors.json", b'{"benchmarks": {"x": '
                                                                         b'{"process_medians": [1, true]}}}'),
       id="compare-floors-bad", rc=2, names="floors.json"),
    py("compare.py", BASE, os.path.join(FIX, "with_error.json"), id="compare-failed-check-fails-gate", rc=1,
       names="failed in the new run (a wrong result): VectorAdd/cuda_v4/n:1000000/manual_time"),
    py("compare.py", BASE, lambda t: gbench(t, "oom.json", lambda d: d["benchmarks"][0].update(
        error_occurred=True, error_message="could not run: cudaMalloc: out of memory")),
       id="compare-could-not-run-is-3", rc=3, names="could not run in the new run: VectorAdd/cuda_v4"),
    py("compare.py", BASE, lambda t: gbench(t, "clock.json", set_first("sm_clock_mhz", "n/a")),
       id="compare-counter-string", rc=2, names="clock.json: VectorAdd/cuda_v4/n:1000000/manual_time: sm_clock_mhz"),
    py("compare.py", BASE, lambda t: gbench(t, "tk.json", lambda d: d["context"].update(cuda_toolkit=12.4)),
       "--report-only", id="compare-numeric-context-is-fine", rc=0, names=""),
    py("compare.py", BASE, BASE, id="compare-without-scipy", rc=3, names="needs scipy",
       env={"CUDABENCH_VENV": "{tmp}/no-venv", "PYTHON": "/usr/bin/python3"}),
    py("compare.py", BASE, BASE, "--markdown", "-", id="compare-markdown-dash", rc=2,
       names="--markdown -: expected a file name", outputs=["{tmp}/-"]),
    py("compare.py", BASE, "/dev/zero", id="compare-dev-zero", rc=2, names="/dev/zero: not a regular file"),
    py("compare.py", BASE, lambda t: (os.mkfifo(t + "/fifo.json"), t + "/fifo.json")[1], id="compare-fifo", rc=2,
       names="fifo.json: not a regular file"),
    py("compare.py", BASE, lambda t: gbench(t, "gone.json", lambda d: d.update(
        benchmarks=[b for b in d["benchmarks"] if "cpu_scalar" not in b["name"]])),
       id="compare-missing-benchmark-fails-gate", rc=1, names="missing from the new run: VectorAdd/cpu_scalar"),
    py("compare.py", BASE, lambda t: gbench(t, "nobps.json", lambda d: [
        b.pop("bytes_per_second", None) for b in d["benchmarks"] if "cuda_v4" in b["name"]]),
       "--metric", "bytes_per_second", "--filter", "cpu_scalar", id="compare-filter-before-metric", rc=0, names=""),
    # report.py
    py("report.py", BASE, "--out", "-", id="report-out-dash", rc=2, names="--out: '-': expected a folder name",
       outputs=["{tmp}/-"]),
    py("ab.py", "run", "--a", BENCH, "--b", BENCH, "--out", "-", id="ab-out-dash", rc=2,
       names="--out: '-': expected a folder name", outputs=["{tmp}/-"]),
    py("report.py", "/dev/zero", "--out", "{tmp}/r", id="report-dev-zero", rc=2, names="/dev/zero: not a regular file",
       outputs=["{tmp}/r"]),
    py("report.py", "--out", "{tmp}/r", id="report-no-files", rc=2, names="give result files"),
    py("report.py", BASE, "--out", "{tmp}/r", id="report-without-scipy", rc=3, names="report: needs",
       env={"CUDABENCH_VENV": "{tmp}/no-venv", "PYTHON": "/usr/bin/python3"}, outputs=["{tmp}/r"]),
    py("report.py", BASE, id="report-no-out", rc=2, names="--out"),
    py("report.py", lambda t: write(t, "bad.json", b"[1,"), "--out", "{tmp}/r", id="report-bad-json", rc=2,
       names="bad.json: not valid JSON", outputs=["{tmp}/r"]),
    py("report.py", lambda t: gbench(t, "bps.json", set_first("bytes_per_second", "many")), "--out", "{tmp}/r",
       id="report-counter-string", rc=2, names="bps.json", outputs=["{tmp}/r"]),
    py("report.py", BASE, BASE, "--labels", "a,a", "--out", "{tmp}/r", id="report-labels-twice", rc=2,
       names="'a' given twice", outputs=["{tmp}/r"]),
    py("report.py", BASE, "--out", lambda t: write(t, "afile", b"x"), id="report-out-is-a-file", rc=2,
       names="--out"),
    py("history.py", "page", "{tmp}/nope", "--out", "{tmp}/r", id="history-page-missing", rc=2,
       names="{tmp}/nope: cannot read", outputs=["{tmp}/r"]),
    # the scripts
    py("ab.py", "run", "--a", BENCH, id="ab-missing-side", rc=2, names="--b"),
    py("ab.py", "run", "--a", "{tmp}/nope", "--b", BENCH, "--out", "{tmp}/ab", id="ab-no-executable", rc=2,
       names="--a {tmp}/nope: no such executable", outputs=["{tmp}/ab"]),
    py("matrix.py", "summary", lambda t: write(t, "bad.json", b"[1,"), id="matrix-summary-bad-json", rc=2,
       names="bad.json"),
    py("matrix.py", "summary", BASE, "--markdown", "-", id="matrix-markdown-dash", rc=2,
       names="--markdown -: expected a file name", outputs=["{tmp}/-"]),
    py("ab.py", "calibrate", "--bench", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--floors-out", "-",
       "--out", "{tmp}/ab", id="ab-floors-out-dash", rc=2, names="--floors-out -: expected a file name",
       outputs=["{tmp}/-", "{tmp}/ab"]),
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b", lambda t: (
        write(t, "b.sh", b'#!/bin/sh\nfor a; do case $a in --benchmark_out=*) echo "[1]" > "${a#*=}";; esac; done\n'),
        os.chmod(t + "/b.sh", 0o755), t + "/b.sh")[2], "--processes", "2", "--max-interference", "1",
       "--out", "{tmp}/ab", id="ab-b-malformed-result", rc=3, names="process 0 of B ({tmp}/b.sh) wrote a result"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "regress.sh"), "--bogus"], id="regress-unknown-argument", rc=2,
         names="'--bogus'"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "run-bench.sh")], id="run-bench-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=../../evil: expected one name", env={"CUDABENCH_MACHINE": "../../evil"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "run-bench.sh")], id="run-bench-machine-is-root", rc=2,
         names="CUDABENCH_MACHINE=/: expected one name", env={"CUDABENCH_MACHINE": "/"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh")], id="gpu-check-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=..: expected one name", env={"CUDABENCH_MACHINE": ".."}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh"), "--bogus"], id="gpu-check-unknown-option", rc=2,
         names="gpu-check: --bogus: unknown option"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "gpu-check.sh"), "--results"], id="gpu-check-results-no-folder", rc=2,
         names="gpu-check: --results: expected a folder"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "regress.sh")], id="regress-machine-is-a-path", rc=2,
         names="CUDABENCH_MACHINE=a/b: expected one name", env={"CUDABENCH_MACHINE": "a/b"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "matrix.sh"), "--stack", "13.0"], id="matrix-stack-not-a-pair",
         rc=2, names="--stack 13.0: expected CUDA:TORCH"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "setup.sh"), "--plan"], id="setup-pin-unknown", rc=2,
         names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table", env={"CUDABENCH_TORCH": "0.1"}),
    Case(cmd=["bash", os.path.join(SCRIPTS, "cpu-quota.sh"), "2", "true"], id="cpu-quota-fraction", rc=2,
         names="got '2'"),
    # the fleet mode: checked before anything is built or submitted
    fleet_sh("--tasks", "0", id="fleet-tasks-zero", rc=2, names="--tasks 0"),
    fleet_sh("--threshold", "1.5", id="fleet-threshold", rc=2, names="--threshold 1.5"),
    fleet_sh("--min-time=nan", id="fleet-min-time-nan", rc=2, names="--min-time nan"),
    fleet_sh("--run-id", "a/b", id="fleet-run-id-slash", rc=2, names="--run-id a/b"),
    fleet_sh("--processes", id="fleet-processes-no-value", rc=2, names="--processes needs a value"),
    fleet_sh("--build", "{tmp}/nope", id="fleet-build-missing", rc=2, names="--build {tmp}/nope: no bench"),
    fleet_sh("--bogus", id="fleet-unknown-argument", rc=2, names="unknown argument --bogus"),
    fleet_sh("--sbatch-arg=-pdebug", id="fleet-partition-in-sbatch-arg", rc=2, names="--sbatch-arg -pdebug"),
    fleet_sh("collect", id="fleet-collect-no-folder", rc=2, names="collect needs the run folder"),
    py("fleet.py", "report", "{tmp}/nope", id="fleet-report-missing-run", rc=2,
       names="{tmp}/nope: no such run folder"),
    py("fleet.py", "report", lambda t: fleet_run(t, b'{"host": "../etc", "unit": "cpu"}'),
       id="fleet-report-bad-host", rc=3, names="n1/cpu.status.json: 'host' is \"../etc\": expected a name"),
    py("fleet.py", "report", lambda t: fleet_run(t, b"{oops"), id="fleet-report-bad-status", rc=3,
       names="n1/cpu.status.json: not valid JSON"),
    py("fleet.py", "report", lambda t: fleet_run(t, b'{"host": "n1", "unit": "cpu", "results": "cpu.json"}'),
       id="fleet-report-results-missing", rc=3, names="n1/cpu.json: cannot read (No such file or directory)"),
    py("fleet.py", "report", "{tmp}", id="fleet-report-empty-run", rc=2, names="{tmp}: no fleet results"),
    py("fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", "{tmp}/s.json", "--processes",
       "/dev/zero", id="fleet-merge-processes-dev-zero", rc=2, names="--processes /dev/zero: not a regular file",
       outputs=["{tmp}/s.json"]),
    py("ddp_scaling.py", "--out", "{tmp}/out", "--", "--bogus", id="ddp-scaling-train-refuses-flag", rc=2,
       names="n1-r1: train: The following argument was not expected: --bogus", outputs=["{tmp}/out"],
       needs_torch=True),
    py("fleet.py", "report", "{tmp}", "--threshold", "0", id="fleet-report-threshold", rc=2,
       names="--threshold 0.0"),
    Case(cmd=["bash", os.path.join(SCRIPTS, "fleet", "local-cluster.sh"), "start", "{tmp}/c", "--nodes", "0"],
         id="local-cluster-nodes", rc=2, names="--nodes 0", outputs=["{tmp}/c"]),
    # an output never replaces an input: by its name, a symbolic link or a hard link to it
    py("compare.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--markdown", "{tmp}/new.json",
       id="compare-markdown-is-an-input", rc=2, names="--markdown {tmp}/new.json: is the input {tmp}/new.json",
       outputs=["{tmp}/new.json"]),
    py("compare.py", BASE, PRE, "--markdown", lambda t: linked(t, "pre.json", "r.md"),
       id="compare-markdown-links-to-an-input", rc=2, names="--markdown {tmp}/r.md: is the input {tmp}/pre.json", outputs=[PRE]),
    py("compare.py", PRE, BASE, "--markdown", lambda t: linked(t, "pre.json", "r.md", hard=True),
       id="compare-markdown-hard-link-to-an-input", rc=2, names="is the input {tmp}/pre.json", outputs=[PRE]),
    py("compare.py", BASE, PRE, "--plot", lambda t: os.path.dirname(linked(t, "pre.json", "p/mnist.png")),
       id="compare-plot-links-to-an-input", rc=2, names="--plot {tmp}/p/mnist.png: is the input {tmp}/pre.json",
       outputs=[PRE]),
    py("compare.py", BASE, PRE, "--floors", lambda t: linked(t, "pre.json", "f.json", hard=True), "--markdown",
       "{tmp}/f.json", id="compare-markdown-is-the-floors", rc=2, names="--markdown {tmp}/f.json: is the input",
       outputs=[PRE]),
    py("report.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--out",
       lambda t: os.path.dirname(linked(t, "new.json", "r/report.md", hard=True)), id="report-out-holds-an-input",
       rc=2, names="--out {tmp}/r/report.md: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("report.py", BASE, lambda t: gbench(t, "new.json", lambda d: None), "--out",
       lambda t: os.path.dirname(linked(t, "new.json", "r/vector_add.png")), id="report-plot-links-to-an-input",
       rc=2, names="--out {tmp}/r/vector_add.png: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("history.py", "page", lambda t: os.path.dirname(history(t, "m/h")), "--out",
       lambda t: os.path.dirname(linked(t, "m/h/c1.json", "r/README.md")), id="history-page-links-to-an-input",
       rc=2, names="--out {tmp}/r/README.md: is the input {tmp}/m/h/c1.json", outputs=["{tmp}/m/h/c1.json"]),
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b",
       os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--floors",
       lambda t: write(t, "floors.json", b'{"benchmarks": {}}'), "--out",
       lambda t: os.path.dirname(linked(t, "floors.json", "ab/report.md", hard=True)), id="ab-out-holds-the-floors",
       rc=2, names="--out {tmp}/ab/report.md: is the input {tmp}/floors.json", outputs=["{tmp}/floors.json"]),
    py("ab.py", "calibrate", "--bench", lambda t: bench_copy(t), "--floors-out", "{tmp}/bench.py", "--out",
       "{tmp}/ab", id="ab-floors-out-is-the-bench", rc=2, names="--floors-out {tmp}/bench.py: is the input",
       outputs=["{tmp}/bench.py", "{tmp}/ab"]),
    py("samples.py", "run", "--bench", lambda t: bench_copy(t), "--out", "{tmp}/bench.py",
       id="samples-out-is-the-bench", rc=2, names="--out {tmp}/bench.py: is the input {tmp}/bench.py",
       outputs=["{tmp}/bench.py"]),
    py("matrix.py", "merge", PRE, PRE, id="matrix-merge-out-is-a-round", rc=2,
       names="merge OUT {tmp}/pre.json: is the input {tmp}/pre.json", outputs=[PRE]),
    py("matrix.py", "summary", lambda t: gbench(t, "new.json", lambda d: None), "--markdown",
       lambda t: linked(t, "new.json", "m.md"), id="matrix-markdown-links-to-an-input", rc=2,
       names="--markdown {tmp}/m.md: is the input {tmp}/new.json", outputs=["{tmp}/new.json"]),
    py("fleet.py", "report", lambda t: (fleet_run(t, b'{"host": "n1", "unit": "cpu"}'),
                                              linked(t, "run/n1/cpu.status.json", "run/fleet.md"), t + "/run")[2],
       id="fleet-report-output-is-a-run-file", rc=2,
       names="output {tmp}/run/fleet.md: is the input {tmp}/run/n1/cpu.status.json",
       outputs=["{tmp}/run/n1/cpu.status.json"]),
    py("fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", PRE, "--env", PRE,
       id="fleet-merge-status-out-is-the-env", rc=2, names="--status-out {tmp}/pre.json: is the input", outputs=[PRE]),
    py("ddp_scaling.py", "--train", lambda t: bench_copy(t, "o/scaling.json"), "--out", "{tmp}/o",
       id="ddp-scaling-out-holds-the-train", rc=2, names="--out {tmp}/o/scaling.json: is the input",
       outputs=["{tmp}/o/scaling.json", "{tmp}/o/runs"]),
    # ... nor the program itself: the script run, or a file of the tools through a link
    py("compare.py", BASE, BASE, "--markdown", os.path.join(SCRIPTS, "compare.py"), id="compare-markdown-is-the-script",
       rc=2, names=f"--markdown {SCRIPTS}/compare.py: is the program", outputs=[os.path.join(SCRIPTS, "compare.py")]),
    py("compare.py", BASE, BASE, "--markdown", lambda t: linked(t, os.path.join(SCRIPTS, "cudabench", "base", "text.py"),
                                                                "r.md"),
       id="compare-markdown-links-to-a-module", rc=2, names="--markdown {tmp}/r.md: is the program",
       outputs=[os.path.join(SCRIPTS, "cudabench", "base", "text.py")]),
    # A hard link elsewhere to the interpreter or to a module it loaded: by
    # file, not by name (a replace would only swap the link's name here).
    py("compare.py", BASE, BASE, "--markdown", lambda t: hard_linked(t, os.path.realpath(PY), "py.md"),
       id="compare-markdown-is-the-interpreter", rc=2, names="--markdown {tmp}/py.md: is the program",
       outputs=["{tmp}/py.md"]),
    py("compare.py", BASE, BASE, "--markdown", lambda t: hard_linked(t, json.__file__, "json.md"),
       id="compare-markdown-is-a-loaded-module", rc=2, names="--markdown {tmp}/json.md: is the program",
       outputs=["{tmp}/json.md"]),
    py("samples.py", "run", "--bench", FAKE, "--out", os.path.join(SCRIPTS, "samples.py"), id="samples-out-is-the-script",
       rc=2, names="samples.py: is the program", outputs=[os.path.join(SCRIPTS, "samples.py")]),
    py("report.py", BASE, "--out", lambda t: os.path.dirname(linked(t, os.path.join(SCRIPTS, "report.py"), "r/report.md",
                                                                   hard=True)),
       id="report-out-holds-a-hard-link-to-the-script", rc=2, names="--out {tmp}/r/report.md: is the program",
       outputs=[os.path.join(SCRIPTS, "report.py")]),
    # a row written twice is one sample: the same numbers are counted once (and the report says so);
    # one repetition with two different numbers is refused, naming the file
    py("compare.py", BASE, lambda t: gbench(t, "twice.json", rows_twice), id="compare-rows-twice-counted-once", rc=0,
       names=""),
    py("compare.py", BASE, lambda t: gbench(t, "two.json", first_again(150.0)), id="compare-a-repetition-twice", rc=2,
       names="two.json: VectorAdd/cuda_v4/n:1000000/manual_time: repetition_index 0 appears twice with different"),
    py("report.py", lambda t: gbench(t, "two.json", first_again(150.0)), "--out", "{tmp}/r",
       id="report-a-repetition-twice", rc=2, names="two.json: VectorAdd/cuda_v4", outputs=["{tmp}/r"]),
    py("compare.py", "--add-machine", lambda t: gbench(t, "two.json", first_again(150.0)), "--reference", "{tmp}/refs",
       id="add-machine-a-repetition-twice", rc=2, names="two.json", outputs=["{tmp}/refs"]),
    # repetition_index: a whole number, wherever rows are read
    py("compare.py", BASE, lambda t: gbench(t, "rs.json", set_first("repetition_index", "0")),
       id="compare-repetition-index-string", rc=2,
       names='rs.json: VectorAdd/cuda_v4/n:1000000/manual_time: repetition_index is "0": expected a whole number'),
    py("compare.py", BASE, lambda t: gbench(t, "rb.json", set_first("repetition_index", True)),
       id="compare-repetition-index-bool", rc=2, names="rb.json: VectorAdd/cuda_v4/n:1000000/manual_time: "
                                                       "repetition_index is true"),
    py("compare.py", "--add-machine", lambda t: gbench(t, "rs.json", set_first("repetition_index", "0")), "--reference",
       "{tmp}/refs", id="add-machine-repetition-index-mixed", rc=2, names='rs.json: VectorAdd/cuda_v4/n:1000000/'
                                                                          'manual_time: repetition_index is "0"',
       outputs=["{tmp}/refs"]),
    py("compare.py", "--add-machine", lambda t: gbench(t, "rl.json", set_first("repetition_index", [1])), "--reference",
       "{tmp}/refs", id="add-machine-repetition-index-list", rc=2, names="rl.json: VectorAdd/cuda_v4/n:1000000/"
                                                                         "manual_time: repetition_index is [1]",
       outputs=["{tmp}/refs"]),
    py("report.py", lambda t: gbench(t, "rn.json", set_first("repetition_index", -1)), "--out", "{tmp}/r",
       id="report-repetition-index-negative", rc=2, names="rn.json: VectorAdd/cuda_v4/n:1000000/manual_time: "
                                                           "repetition_index is -1", outputs=["{tmp}/r"]),
    # --add-machine: an option it would not read is refused, not ignored; a reference folder that loops is one line
    py("compare.py", "--add-machine", BASE, "--reference", "{tmp}/refs", "--filter", "cuda", id="add-machine-filter",
       rc=2, names="--filter: not with --add-machine", outputs=["{tmp}/refs"]),
    py("compare.py", "--add-machine", BASE, "--reference", "{tmp}/refs", "--labels", "x", id="add-machine-labels",
       rc=2, names="--labels: not with --add-machine", outputs=["{tmp}/refs"]),
    py("compare.py", BASE, "--reference", "{tmp}/refs", "--baseline", "x", id="reference-baseline", rc=2,
       names="--baseline: not with --reference"),
    py("compare.py", BASE, BASE, "--machine", "vm-a", id="compare-machine-without-add-machine", rc=2,
       names="--machine: only with --add-machine"),
    py("compare.py", BASE, BASE, "--if-any", id="compare-if-any-without-reference", rc=2,
       names="--if-any: only with --reference"),
    py("compare.py", "--add-machine", BASE_RUN, "--reference", self_link, id="add-machine-reference-links-to-itself",
       rc=2,
       names="--reference {tmp}/refs/cpu-amd-epyc-7b13-64-core-processor-cpuid-unknown-isa-unknown-2c/machines/"
             "m1-2026-11-29: cannot write "
             "there: Too many levels of symbolic links"),
    # a format this reader does not know (Google Benchmark's json_schema_version; a reference's format)
    py("compare.py", BASE, lambda t: gbench(t, "v99.json", lambda d: d["context"].update(json_schema_version=99)),
       id="compare-future-format-in-the-context", rc=2, names="v99.json: context.json_schema_version is 99: this tool "
                                                             "reads Google Benchmark's JSON format version 1"),
    py("compare.py", lambda t: gbench(t, "v2.json", lambda d: d.update(json_schema_version="2")), BASE,
       id="compare-future-format-at-the-top", rc=2, names='v2.json: json_schema_version is "2": this tool reads'),
    py("report.py", lambda t: gbench(t, "v99.json", lambda d: d["context"].update(json_schema_version=99)), "--out",
       "{tmp}/r", id="report-future-format", rc=2, names="v99.json: context.json_schema_version is 99",
       outputs=["{tmp}/r"]),
    py("compare.py", BASE, lambda t: gbench(t, "v1.json", lambda d: d["context"].update(json_schema_version=1)),
       id="compare-format-1-is-read", rc=0, names=""),
    py("compare.py", BASE, "--reference", future_reference, id="reference-of-a-future-format", rc=2,
       names="reference.json: cudabench_reference.format is 99: this tool reads references of format 2"),
    # a newline or an escape in what a message names stays one visible line
    py("compare.py", BASE, "{tmp}/a\nFAKE: 1 ns faster.json", id="compare-newline-in-a-path-is-one-line", rc=2,
       names="{tmp}/a\\nFAKE: 1 ns faster.json: cannot read"),
    py("compare.py", BASE, BASE, "--labels", "a\n\x1b[2J,a\n\x1b[2J", id="compare-escapes-in-labels-are-shown", rc=2,
       names="--labels: 'a\\n\\x1b[2J' given twice"),
    # an --out that cannot be a folder
    py("ab.py", "run", "--a", os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--b",
       os.path.join(ROOT, "tests", "fakes", "fake_gbench.py"), "--out", lambda t: write(t, "afile", b"x") + "/sub",
       id="ab-out-under-a-file", rc=2, names="--out {tmp}/afile/sub: cannot write there: Not a directory"),
    # every count and number within its range
    py("ab.py", "trials", "0", "--a", "x", "--b", "y", id="ab-trials-zero", rc=2,
       names="N 0: expected a whole number in [1, 1000]"),
    py("ab.py", "trials", "-1", "--a", "x", "--b", "y", id="ab-trials-negative", rc=2, names="N -1: expected"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--processes", "1000000000", id="ab-processes-huge", rc=2,
       names="--processes 1000000000: expected a whole number in [2, 1000]"),
    py("ab.py", "calibrate", "--bench", "x", "--floors-out", OUT, "--reps", "0", id="ab-reps-zero", rc=2,
       names="--reps 0: expected", outputs=[OUT]),
    py("ab.py", "trials", "2", "--a", "x", "--b", "y", "--min-time", "1e9", id="ab-min-time-huge", rc=2,
       names="--min-time 1000000000.0: expected a number in (0, 3600]"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--max-interference", "nan", id="ab-max-interference-nan", rc=2,
       names="--max-interference nan: expected a number in [0, 1]"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--alpha", "0", id="ab-alpha-zero", rc=2, names="--alpha 0.0"),
    py("ab.py", "run", "--a", "x", "--b", "y", "--threshold", "-0.1", id="ab-threshold-negative", rc=2,
       names="--threshold -0.1"),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--processes", "0", id="samples-processes-zero", rc=2,
       names="--processes 0: expected a whole number in [1, 1000]", outputs=[OUT]),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--reps", "1e9", id="samples-reps-not-whole", rc=2,
       names="--reps 1e9: expected a whole number", outputs=[OUT]),
    py("samples.py", "run", "--bench", "x", "--out", OUT, "--max-interference", "2", id="samples-interference-2",
       rc=2, names="--max-interference 2.0", outputs=[OUT]),
    py("compare.py", BASE, BASE, "--threshold", "1e308", id="compare-threshold-huge", rc=2,
       names="--threshold 1e+308: expected a number in (0, 10]"),
    py("compare.py", BASE, BASE, "--alpha", "1", id="compare-alpha-one", rc=2, names="--alpha 1.0"),
    py("ddp_scaling.py", "--epochs", "1000000000", id="ddp-scaling-epochs-huge", rc=2, names="--epochs 1000000000"),
    py("ddp_scaling.py", "--run-timeout", "0", id="ddp-scaling-run-timeout-zero", rc=2, names="--run-timeout 0.0"),
    py("fleet.py", "merge", "--host", "n1", "--unit", "cpu", "--status-out", OUT, "--device", "99999",
       id="fleet-merge-device-huge", rc=2, names="--device 99999: expected a whole number in [-1, 4095]",
       outputs=[OUT]),
    # Google Benchmark 1.8+'s skipped rows ("skipped", "skip_message", real_time 0): no failure
    py("compare.py", lambda t: gbench(t, "skipped.json", skip_first_row), BASE, id="compare-gbench-1.8-skipped-row",
       rc=0, names=""),
    py("compare.py", BASE, lambda t: gbench(t, "skipped.json", skip_first_row), id="compare-gbench-1.8-row-skips-itself",
       rc=1, names="missing from the new run: VectorAdd/cuda_v4/n:1000000/manual_time"),
    py("report.py", BASE, lambda t: gbench(t, "skipped.json", skip_first_row), "--out", "{tmp}/r",
       id="report-gbench-1.8-skipped-row", rc=0, names=""),
    # no HOME (cron, env -i): the cache comes from passwd's home; without one there either, one line naming both
    script("setup.sh", "--plan", id="setup-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("run-bench.sh", id="run-bench-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("test.sh", id="test-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("regress.sh", id="regress-without-home", rc=2, names="CUDABENCH_TORCH: LibTorch 0.1 is not in the table",
           env={"CUDABENCH_TORCH": "0.1"}, unset=["HOME"]),
    script("setup.sh", "--plan", id="setup-without-any-home", rc=2,
           names="has no home in passwd: set HOME, or CUDABENCH_CACHE",
           env={"PATH": path_without_passwd_home}, unset=["HOME", "CUDABENCH_CACHE"]),
    # a TMPDIR mktemp cannot write in: one line naming it, before any work
    script("run-bench.sh", id="run-bench-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope: cannot make a temporary file",
           env={"TMPDIR": "{tmp}/nope"}),
    script("setup.sh", "--plan", id="setup-tmpdir-a-file", rc=2, names="TMPDIR={tmp}/pre.json: cannot make",
           env={"TMPDIR": PRE}),
    script("regress.sh", id="regress-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("matrix.sh", id="matrix-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("train-compare.sh", id="train-compare-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope",
           env={"TMPDIR": "{tmp}/nope"}),
    script("sanitize.sh", id="sanitize-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    script("vendor-deps.sh", id="vendor-deps-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope",
           env={"TMPDIR": "{tmp}/nope"}),
    fleet_sh(id="fleet-tmpdir-missing", rc=2, names="TMPDIR={tmp}/nope", env={"TMPDIR": "{tmp}/nope"}),
    # no python3 on PATH: a tool missing, not the user's input (3), said in one line
    script("setup.sh", "--plan", id="setup-without-python3", rc=3, names="needs python3",
           env={"PATH": path_without_python}),
    script("run-bench.sh", id="run-bench-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    script("regress.sh", id="regress-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    script("matrix.sh", id="matrix-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
    fleet_sh(id="fleet-without-python3", rc=3, names="needs python3", env={"PATH": path_without_python}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_the_table_covers_the_program():
    progs = {os.path.basename(c.cmd[1] if c.cmd[0] in (PY, "bash") else c.cmd[0]) for c in CASES}
    assert {"compare.py", "report.py", "fleet.sh", "fleet.py", "local-cluster.sh", "ddp_scaling.py"} <= progs, progs
    assert len(CASES) >= 100


# ---- what a table cannot hold ----

def test_a_bench_process_that_never_ends_fails_the_samples_at_its_deadline(tmp_path):
    """As a bench stuck on a GPU would: samples.py (and so ab.py and
    run-bench.sh) stops it at --process-seconds, exit 3, its log named and kept."""
    hang = tmp_path / "bench"
    hang.write_text("#!/bin/sh\necho started >&2\nexec sleep 100\n")
    hang.chmod(0o755)
    start = time.monotonic()
    r = subprocess.run([PY, os.path.join(SCRIPTS, "samples.py"), "run", "--bench", str(hang), "--out",
                        str(tmp_path / "s.json"), "--process-seconds", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and time.monotonic() - start < 20, r.stderr
    line = r.stderr.splitlines()[-1]
    assert "was still running after 1 s (--process-seconds)" in line, line
    assert os.path.isfile(line.rsplit("log: ", 1)[1]), "the log it names is gone"
    assert not (tmp_path / "s.json").exists()


def test_fleet_merge_reads_only_the_end_of_a_regular_stderr_file(tmp_path):
    """A process list naming /dev/zero or a FIFO as a process's stderr must
    not hold the merge or fill the memory: that process has no message."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plist = tmp_path / "processes.tsv"
    plist.write_text(f"1\tnone.json\t/dev/zero\n1\tnone.json\t{fifo}\n")
    r = subprocess.run([PY, os.path.join(SCRIPTS, "fleet.py"), "merge", "--host", "h", "--unit", "cpu",
                        "--status-out", str(tmp_path / "st.json"), "--processes", str(plist)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    errors = [p["error"] for p in json.loads((tmp_path / "st.json").read_text())["processes"]]
    assert errors == ["exit 1, no message"] * 2, errors


def test_compare_markdown_on_a_full_disk_exits_3():
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--markdown", "/dev/full"],
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "/dev/full: cannot write" in r.stderr and "Traceback" not in r.stderr
    assert dev_full_is_intact()


def test_report_only_reports_a_failed_check_without_failing():
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, os.path.join(FIX, "with_error.json"),
                        "--report-only"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "error" in r.stdout and "new: " in r.stdout


def test_report_labels_three_runs_of_one_setup_apart(tmp_path):
    """Three files with the same default label: each column shows its own
    run's numbers (the last file's used to fill every column)."""
    paths = []
    for i, scale in enumerate((1.0, 2.0, 4.0)):
        def m(doc, scale=scale):
            for b in doc["benchmarks"]:
                if "real_time" in b:
                    b["real_time"] *= scale
        paths.append(gbench(str(tmp_path), f"run{i}.json", m))
    out = tmp_path / "r"
    r = subprocess.run([PY, os.path.join(SCRIPTS, "report.py"), *paths, "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    header = next(x for x in md.splitlines() if x.startswith("| benchmark |") and "baseline" in x)
    assert "(run0.json) (baseline)" in header and "(run1.json)" in header and "(run2.json)" in header
    row = next(x for x in md.splitlines() if x.startswith("| VectorAdd/cuda_v4/n:1000000/manual_time |"))
    assert "(0.50x, " in row and "(0.25x, " in row, row  # twice and four times the time: a speed, as everywhere


def test_regress_refuses_a_second_run_in_one_checkout_naming_the_first():
    """Two regress.sh runs in one checkout: the second exits 2 at once and
    says who holds it (it used to wipe the first's processes)."""
    import fcntl
    out = os.path.join(ROOT, "build", "regress")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.seek(0)
        held.truncate()
        held.write("pid 4242, started today")
        held.flush()
        # Its own session: were the lock ever broken, a timeout stops the whole gate it would start.
        p = subprocess.Popen(["bash", os.path.join(SCRIPTS, "regress.sh")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    assert p.returncode == 2, err
    assert err.strip().startswith("regress: another run holds build/regress in this checkout (pid 4242"), err


def test_regress_labels_a_revision_against_itself_apart():
    """regress.sh --base HEAD used to fail with `ab: --labels '9f03808,9f03808'`."""
    def labels(a, b):
        return subprocess.run(["bash", "-c", f". {SCRIPTS}/lib.sh && ab_labels {a} {b}"], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert labels("9f03808", "9f03808") == "9f03808 (A),9f03808 (B)"
    assert labels("9f03808", "1a2b3c4") == "9f03808,1a2b3c4"
    assert 'labels="$(ab_labels' in open(os.path.join(SCRIPTS, "regress.sh")).read()


def test_a_signal_to_a_script_stops_its_jobs_whole_group(tmp_path):
    """lib.sh's run_job and stop_jobs_on_signal, which regress.sh, matrix.sh
    and the other scripts run their long children through: SIGTERM to the
    script ends it at once, and every process of its job's group (a child's
    child too) is gone; nothing is written after."""
    late, pgid_file = tmp_path / "written-late", tmp_path / "pgid"
    script = tmp_path / "s.sh"
    script.write_text(f"""set -euo pipefail
. {SCRIPTS}/lib.sh
stop_jobs_on_signal
run_job bash -c 'ps -o pgid= $$ > {pgid_file}; sleep 30 & sleep 30; echo late > {late}'
""")
    p = subprocess.Popen(["bash", str(script)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not (pgid_file.exists() and pgid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pgid = int(pgid_file.read_text())
    assert pgid != os.getpgid(p.pid)  # the job has a group of its own
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    assert p.returncode == -signal.SIGTERM and time.monotonic() - t0 < 5
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)  # no process of the job's group is left
    assert not late.exists()


def test_a_script_ended_by_sigkill_takes_its_jobs_with_it(tmp_path):
    """run-bench.sh's shape: the build lock held shared, samples.py and its
    bench run as a job that does not inherit the lock. kill -9 of the script
    (no trap runs) frees the lock, so the job must end too, at once: the
    parent-death signal ends samples.py, and samples.py's ends its bench."""
    marker, pgid_file = tmp_path / "pgid", tmp_path / "bench.pgid"
    script = tmp_path / "s.sh"
    script.write_text(f"""set -euo pipefail
. {SCRIPTS}/lib.sh
hold_build_lock {tmp_path}/build
flock -s 8
run_job {PY} {SCRIPTS}/samples.py run --bench {FAKE} --processes 3 --out {tmp_path}/r.json
""")
    env = dict(os.environ, FAKE_GBENCH_SLEEP="600", FAKE_GBENCH_PGID=str(pgid_file))
    p = subprocess.Popen(["bash", str(script)], env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (pgid_file.exists() and pgid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    bench = int(pgid_file.read_text())  # the bench leads its own group
    sampler = int(subprocess.run(["pgrep", "-f", "--", f"--out {tmp_path}/r.json"], capture_output=True, text=True)
                  .stdout.split()[0])
    try:
        p.kill()
        p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(alive(x) for x in (sampler, bench)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(sampler) and not alive(bench), (alive(sampler), alive(bench))
    finally:
        for pid in (sampler, bench):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def alive(pid):
    """A live process (not a zombie) of that number."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_fleet_report_in_a_read_only_run_folder_is_exit_2_before_any_work(tmp_path):
    with tmpfs(tmp_path / "fs", "1m") as fs:
        run = fleet_run(fs, b'{"host": "n1", "unit": "cpu"}')
        subprocess.run(["mount", "-o", "remount,ro", fs], check=True, timeout=60)
        r = subprocess.run([PY, os.path.join(SCRIPTS, "fleet.py"), "report", run], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"fleet: output {run}/fleet.json: cannot write: Read-only file system"


def test_regress_in_a_read_only_checkout_is_exit_2_naming_it(tmp_path):
    with tmpfs(tmp_path / "fs", "16m") as fs:
        for d in ("scripts", "common", "process", "doctor"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(fs, d), ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["mount", "-o", "remount,ro", fs], check=True, timeout=60)
        r = subprocess.run(["bash", os.path.join(fs, "scripts", "regress.sh")], capture_output=True, text=True,
                           timeout=120, start_new_session=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"regress: cannot write {fs}/build/regress (a read-only checkout?): the gate builds and "
                        "keeps its runs there; run it in a clone you can write\n"), r.stderr


def test_ab_out_on_a_read_only_file_system_is_exit_2(tmp_path):
    with tmpfs(tmp_path / "fs", "1m", read_only=True) as fs:
        r = ab("run", "--a", FAKE, "--b", FAKE, "--processes", "2", "--out", f"{fs}/ab")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"ab: --out {fs}/ab: cannot write there: Read-only file system"


def test_ab_on_a_full_disk_names_it_before_and_during_the_run(tmp_path):
    with tmpfs(tmp_path / "small", "64k") as fs:  # full before the first process
        r = ab("run", "--a", FAKE, "--b", FAKE, "--processes", "2", "--max-interference", "1", "--out", f"{fs}/ab")
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().startswith(f"ab: no space left on device in {fs}/ab/processes/look1 ("), r.stderr
    # B fills the disk and fails writing its result: its message is lost
    # with its log (bench on a full disk: exit 3, one line nobody can read).
    b = write(str(tmp_path), "b.sh", b'#!/bin/sh\nfor a; do case $a in --benchmark_out=*) o="${a#*=}";; esac; done\n'
                                     b'head -c 4000000 /dev/zero > "$(dirname "$o")/filler" 2>/dev/null\n'
                                     b'echo "bench: cannot write: No space left on device" >&2\nexit 3\n')
    os.chmod(b, 0o755)
    with tmpfs(tmp_path / "fs", "2m") as fs:
        r = ab("run", "--a", FAKE, "--b", b, "--processes", "2", "--max-interference", "1", "--out", f"{fs}/ab")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 3 and len(lines) == 1, r.stderr
    assert f"process 0 of B ({b}) failed without a result (exit 3): no space left on device in {fs}/ab/processes" \
        in lines[0] and "so its log is empty" in lines[0], lines[0]


@pytest.mark.parametrize("cmd", [
    [PY, os.path.join(SCRIPTS, "samples.py"), "run", "--bench", FAKE, "--out", "r.json"],
    [PY, os.path.join(SCRIPTS, "ab.py"), "run", "--a", FAKE, "--b", FAKE],
    ["bash", os.path.join(SCRIPTS, "regress.sh")],
    ["bash", os.path.join(SCRIPTS, "matrix.sh"), "--stack", "13.0:2.11.0"],
    ["bash", os.path.join(SCRIPTS, "fleet", "fleet.sh"), "--report-only"],
], ids=["samples", "ab", "regress", "matrix", "fleet"])
def test_a_bad_progress_interval_is_exit_2_naming_it_before_any_work(cmd, tmp_path):
    """The Python tools and the shell scripts refuse it alike."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "CUDABENCH_PROGRESS_SECONDS": "soon"})
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith("CUDABENCH_PROGRESS_SECONDS=soon: expected seconds between progress lines, "
                                     "0 to 86400"), r.stderr
    assert r.stderr.count("\n") == 1 and not os.listdir(tmp_path), r.stderr


def test_the_scripts_progress_lines_count_steps_and_estimate(tmp_path):
    """lib.sh's say_progress and build_progress, which regress.sh's builds,
    the matrix's rounds and the fleet's --wait print through, print the
    Python tools' one form (base/progress.py): every step in a log at
    CUDABENCH_PROGRESS_SECONDS=0, only the last at the default interval;
    "estimating" before the first step is done; ninja's other lines dropped."""
    def sh(body, every):
        return subprocess.run(["bash", "-c", f". {SCRIPTS}/lib.sh\n{body}"], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "CUDABENCH_PROGRESS_SECONDS": str(every)})
    build = "printf '[1/3] cc a\\nwarning: x\\n[2/3] cc b\\n[3/3] link\\n' | build_progress 'regress: building'"
    r = sh(build, 0)
    assert r.stderr.splitlines() == [f"regress: building: {i}/3 build steps done, 0 s so far, about 0 s left"
                                     for i in (1, 2, 3)], r.stderr
    assert sh(build, 10).stderr.splitlines() == ["regress: building: 3/3 build steps done, 0 s so far, about 0 s left"]
    r = sh('start_progress matrix "bench runs"; say_progress 0 4 "round 1/2"; say_progress 3 4 round 2/2; '
           'stop_progress', 0)
    assert r.stderr.splitlines() == ["matrix: 0/4 bench runs done, 0 s so far, estimating; round 1/2",
                                     "matrix: 3/4 bench runs done, 0 s so far, about 0 s left; round 2/2"], r.stderr
