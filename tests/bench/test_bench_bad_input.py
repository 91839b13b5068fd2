"""bench held to the exit-code contract (tests/bad_input.py): its table of
bad inputs, case by case, then the faults no table can hold: a signal in
the middle of a run, a full disk, an output that cannot be written, a
filter that could backtrack forever."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BENCH, PY, SCRIPTS, TRAIN
from bad_input import (BASE, Case, bench, dataset, dev_full_is_intact, idx_images, idx_labels, needs,
                       preloaded_copy, program_copy, run_case, symlink_loop, temporaries)

OUT = "{tmp}/out.json"
PRE = "{tmp}/pre.json"   # exists before the run, with known content
PARTS = ("cudabench-driver-check", "withheld/libcuda.so.1")  # what bench runs and preloads beside it

CASES = [
    # bench: its own flags
    bench("--bogus", id="bench-unknown-flag", rc=2, names="--bogus"),
    bench("--benchmark_foo=1", "--benchmark_bar=2", id="bench-two-unknown-flags", rc=2, names="--benchmark_foo"),
    bench("--l2-flush=sometimes", id="bench-l2-flush", rc=2, names="--l2-flush"),
    bench("--devices=1", id="bench-devices-without-gpu", rc=2, names="--devices 1"),
    bench("--check", id="bench-check-without-env", rc=2, names="--check"),
    # a value that is empty, never the next argument
    bench("--env", "--env-out=", "--check", id="bench-env-out-empty", rc=2, names="--env-out=: empty value",
          outputs=["{tmp}/--check"]),
    bench("--env", "--env-out", "--check", id="bench-env-out-then-a-flag", rc=2,
          names="--env-out: expects a value, not the option --check", outputs=["{tmp}/--check"]),
    bench("--devices=", "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-devices-empty", rc=2,
          names="--devices=: empty value"),
    bench("--explain=", "Error 804", id="bench-explain-empty", rc=2, names="--explain=: empty value"),
    bench("--env", f"--benchmark_out={OUT}", id="bench-env-with-benchmark-out", rc=2,
          names=f"--benchmark_out={OUT} goes with benchmarks, not --env", outputs=[OUT]),
    bench("--benchmark_out=-", id="bench-out-dash", rc=2, names="--benchmark_out=-: cannot write: '-' is not"),
    bench("--benchmark_out=/proc/version", id="bench-out-in-proc", rc=2,
          names="--benchmark_out=/proc/version: cannot write: its folder /proc takes no new file"),
    bench(lambda t: "--benchmark_out=" + symlink_loop(t), id="bench-out-symlink-loop", rc=2,
          names="cannot write: Too many levels of symbolic links"),
    # a machine to probe that is not there
    bench("--env", "--check", id="bench-probe-root-missing", rc=2,
          names="CUDABENCH_PROBE_ROOT=/nonexistent: no such folder", env={"CUDABENCH_PROBE_ROOT": "/nonexistent"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-probe-root-a-file", rc=2,
          names="CUDABENCH_PROBE_ROOT={tmp}/pre.json: not a folder", env={"CUDABENCH_PROBE_ROOT": PRE}),
    # filters std::regex would overflow the stack on
    bench("--benchmark_filter=" + "a" * 100000, id="bench-filter-long", rc=2,
          names="(100000 characters): expected a regular expression of at most 10000 characters"),
    bench("--benchmark_filter=" + "(" * 30000 + ")" * 30000, id="bench-filter-nested-long", rc=2,
          names="(60000 characters): expected a regular expression of at most 10000 characters"),
    bench("--benchmark_filter=(.?){15000}", id="bench-filter-repeat", rc=2,
          names="--benchmark_filter=(.?){15000}: expected a regular expression whose {n} repetitions are at most 100"),
    bench("--benchmark_filter=" + "(" * 400 + "a" + ")" * 400, id="bench-filter-nested", rc=2,
          names="expected a regular expression nested at most 50 groups deep"),
    bench("--benchmark_filter=VectorAdd/cuda_v4", id="bench-gpu-filter-without-driver", rc=2, no_driver=True,
          names="matches no benchmark here: GPU benchmarks are not registered"),
    bench("--env=yaml", id="bench-env-format", rc=2, names="--env"),
    bench("--env", "--env-out={tmp}/no/dir/env.txt", id="bench-env-out-missing-dir", rc=2,
          names="--env-out={tmp}/no/dir/env.txt: cannot write: No such file or directory"),
    bench("--env", "--env-out={tmp}", id="bench-env-out-is-dir", rc=2, names="is a directory"),
    # bench: Google Benchmark's flags, checked before it sees them
    bench("--benchmark_filter=nomatch", f"--benchmark_out={OUT}", id="bench-filter-matches-nothing", rc=2,
          names="--benchmark_filter=nomatch matches no benchmark", outputs=[OUT]),
    bench("--benchmark_filter=nomatch", f"--benchmark_out={PRE}", id="bench-filter-keeps-old-results", rc=2,
          names="nomatch", outputs=[PRE]),
    bench("--benchmark_filter=[", f"--benchmark_out={OUT}", id="bench-filter-invalid-regex", rc=2,
          names="--benchmark_filter=[", outputs=[OUT]),
    bench("--benchmark_filter=MnistTrain/cpu/batch:64/", id="bench-data-env-missing", rc=2,
          names="CUDABENCH_DATA_DIR={tmp}/nope", env={"CUDABENCH_DATA_DIR": "{tmp}/nope"}, needs_torch=True),
    bench("--benchmark_repetitions=-3", id="bench-repetitions-negative", rc=2, names="--benchmark_repetitions=-3"),
    bench("--benchmark_repetitions=abc", id="bench-repetitions-word", rc=2, names="--benchmark_repetitions=abc"),
    bench("--benchmark_min_time=0", id="bench-min-time-zero", rc=2, names="--benchmark_min_time=0"),
    bench("--benchmark_min_time=nan", id="bench-min-time-nan", rc=2, names="--benchmark_min_time=nan"),
    bench("--benchmark_min_warmup_time=-1", id="bench-warmup-negative", rc=2, names="--benchmark_min_warmup_time"),
    bench("--benchmark_out={tmp}/no/dir/out.json", id="bench-out-missing-dir", rc=2,
          names="--benchmark_out={tmp}/no/dir/out.json: cannot write: No such file or directory"),
    bench("--benchmark_out={tmp}", id="bench-out-is-dir", rc=2, names="is a directory"),
    bench("--benchmark_out=", id="bench-out-empty", rc=2, names="--benchmark_out="),
    bench("--benchmark_out_format=yaml", f"--benchmark_out={OUT}", id="bench-out-format", rc=2,
          names="--benchmark_out_format=yaml", outputs=[OUT]),
    bench("--benchmark_format=xml", id="bench-format", rc=2, names="--benchmark_format=xml"),
    bench("--benchmark_time_unit=min", id="bench-time-unit", rc=2, names="--benchmark_time_unit=min"),
    bench("--benchmark_list_tests=maybe", id="bench-bool-flag", rc=2, names="--benchmark_list_tests=maybe"),
    bench("--benchmark_unheard_of=1", id="bench-unknown-benchmark-flag", rc=2, names="--benchmark_unheard_of"),
    # keys and outputs that are ours, or the input itself
    bench("--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_context=host_cores=999,gpu_name=H100",
          f"--benchmark_out={OUT}", id="bench-context-key-of-ours", rc=2,
          names="host_cores is one cudabench writes", outputs=[OUT]),
    bench("--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_context=host_name=x",
          id="bench-context-key-of-google-benchmark", rc=2, names="host_name is one cudabench writes"),
    bench("--benchmark_context=a=1,a=2", id="bench-context-key-twice", rc=2, names="a is given twice"),
    bench("--benchmark_context=novalue", id="bench-context-no-equals", rc=2, names="'novalue' has no '='"),
    bench("--benchmark_context=a b=1", id="bench-context-key-with-space", rc=2, names="keys of letters"),
    bench("--benchmark_min_time=0.5y", id="bench-min-time-unit", rc=2, names="or iterations (100x"),
    bench("--benchmark_min_time=0x", id="bench-min-time-zero-iterations", rc=2, names="--benchmark_min_time=0x"),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-huge", rc=2,
          names="OMP_NUM_THREADS=40000: at most", env={"OMP_NUM_THREADS": "40000"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-huger", rc=2,
          names="OMP_NUM_THREADS=100000: at most", env={"OMP_NUM_THREADS": "100000"}),
    bench("--benchmark_filter=VectorAdd/cpu_scalar", id="bench-omp-threads-nested", rc=2,
          names="OMP_NUM_THREADS=2,400: at most", env={"OMP_NUM_THREADS": "2,400"}),
    bench("--benchmark_filter=.*.*.*.*.*.*z", "--benchmark_list_tests", id="bench-filter-backtracking", rc=2,
          names="--benchmark_filter=.*.*.*.*.*.*z matches no benchmark"),
    bench("--benchmark_filter=(.+)+z", "--benchmark_list_tests", id="bench-filter-nested-plus", rc=2,
          names="--benchmark_filter=(.+)+z matches no benchmark"),
    bench("--stall-seconds=-1", id="bench-stall-seconds-negative", rc=2, names="--stall-seconds"),
    bench("--benchmark_context=json_schema_version=7", id="bench-context-schema-version", rc=2,
          names="json_schema_version is one cudabench writes"),
    bench("--benchmark_min_time=0x10", id="bench-min-time-hexadecimal", rc=2, names="--benchmark_min_time=0x10"),
    bench("--benchmark_min_time= 0.1", id="bench-min-time-blank", rc=2, names="--benchmark_min_time= 0.1"),
    bench("--env", "--python", lambda t: (os.makedirs(t + "/venv/bin"), shutil.copy("/bin/true", t + "/venv/bin/python3"),
                                          t + "/venv")[2],
          "--env-out={tmp}/venv/pyvenv.cfg", id="bench-env-out-in-the-python-environment", rc=2,
          names="in the Python environment", outputs=["{tmp}/venv/pyvenv.cfg"]),
    bench("--stall-seconds=soon", id="bench-stall-seconds-word", rc=2, names="--stall-seconds"),
    bench("--stall-seconds=nan", id="bench-stall-seconds-nan", rc=2, names="--stall-seconds: 'nan' is not a finite number"),
    bench("--stall-seconds=inf", id="bench-stall-seconds-inf", rc=2, names="--stall-seconds: 'inf' is not a finite number"),
    bench("--benchmark_filter=(a", id="bench-filter-re2-error", rc=2, names="--benchmark_filter=(a: expected a regular"),
    bench("--explain", "-", id="bench-explain-stdin-unknown", rc=2, names="not a CUDA set-up error I know",
          stdin="hello\n" * 1000),
    bench("--require-gpu", "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-require-gpu-without-one", rc=3,
          names="--require-gpu: ", no_driver=True),
    bench(lambda t: (dataset(t + "/d"), "--benchmark_out=" + t + "/d/train-labels-idx1-ubyte")[1],
          "--benchmark_filter=VectorAdd/cpu_scalar", id="bench-out-is-the-dataset", rc=2,
          names="that is the dataset's", env={"CUDABENCH_DATA_DIR": "{tmp}/d"}, needs_torch=True,
          outputs=["{tmp}/d/train-labels-idx1-ubyte"]),
    bench("--env", lambda t: (dataset(t + "/d"), os.link(t + "/d/t10k-labels-idx1-ubyte", t + "/hard.txt"),
                              "--env-out=" + t + "/hard.txt")[2],
          id="bench-env-out-hard-links-to-the-dataset", rc=2, names="an input", env={"CUDABENCH_DATA_DIR": "{tmp}/d"},
          needs_torch=True, outputs=["{tmp}/d/t10k-labels-idx1-ubyte"]),
    bench("--env", "--python", lambda t: (os.mkdir(t + "/bin"), shutil.copy("/bin/true", t + "/bin/python3"))[1],
          "--env-out={tmp}/bin/python3", id="bench-env-out-is-the-python", rc=2, names="that is the interpreter",
          outputs=["{tmp}/bin/python3"]),
    # An output that is the running program, or a library it loaded.
    Case(cmd=[program_copy(BENCH, "x"), "--env", "--env-out={tmp}/x"], id="bench-env-out-is-the-program", rc=2,
         names="--env-out={tmp}/x: cannot write: it is the running program", outputs=["{tmp}/x"]),
    Case(cmd=[program_copy(BENCH, "x"), "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/",
              lambda t: (os.symlink("x", t + "/out.json"), "--benchmark_out=" + t + "/out.json")[1]],
         id="bench-out-links-to-the-program", rc=2, names="it is the running program", outputs=["{tmp}/x"]),
    # A value that holds a newline or a terminal escape stays one line, shown escaped.
    bench("--env", "--env-out={tmp}/no/a\nbench: all rows faster\x1b[2K", id="bench-env-out-forges-a-line", rc=2,
          names="--env-out={tmp}/no/a\\nbench: all rows faster\\x1b[2K: cannot write"),
    bench("--devices=\x1b[31m0", "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", id="bench-devices-escape",
          rc=2, names="--devices \\x1b[31m0", no_driver=True),
    bench("--l2-flush=\x1b[2Kread", id="bench-l2-flush-escape", rc=2, names="\\x1b[2Kread"),
    Case(cmd=[program_copy(BENCH, "x", parts=PARTS), "--env", "--env-out={tmp}/cudabench-driver-check"],
         id="bench-env-out-is-its-driver-check", rc=2, names="it is a part of this program",
         outputs=["{tmp}/cudabench-driver-check"]),
    Case(cmd=[program_copy(BENCH, "x", parts=PARTS), "--env", "--env-out={tmp}/withheld/libcuda.so.1"],
         id="bench-env-out-is-its-withheld-stub", rc=2, names="it is a part of this program",
         outputs=["{tmp}/withheld/libcuda.so.1"]),
    bench("--env", lambda t: "--env-out=" + preloaded_copy(t), id="bench-env-out-is-a-loaded-library", rc=2,
          names="it is a library this program loaded", env={"LD_PRELOAD": "{tmp}/libm.so.6"},
          outputs=["{tmp}/libm.so.6"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_the_table_covers_the_program():
    progs = {os.path.basename(c.cmd[1] if c.cmd[0] in (PY, "bash") else getattr(c.cmd[0], "program", c.cmd[0]))
             for c in CASES}
    assert progs == {"bench"}, progs
    assert len(CASES) >= 60


# ---- what a table cannot hold ----

@needs(BENCH)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM])
def test_bench_stopped_by_a_signal_keeps_every_finished_row(tmp_path, sig):
    """The results file is written whole after each finished benchmark: a
    stop keeps what finished, in a valid file, and no temporary."""
    out = tmp_path / "out.json"
    p = subprocess.Popen([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|65536)/",
                          "--benchmark_min_time=0.1", "--benchmark_repetitions=20",
                          f"--benchmark_out={out}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(sig)
    p.wait(timeout=30)
    assert p.returncode == -sig
    doc = json.loads(out.read_text())
    assert doc["benchmarks"] and doc["context"]["cudabench_env"], doc.keys()
    assert {b["run_name"] for b in doc["benchmarks"]} == {"VectorAdd/cpu_scalar/n:4096/real_time"}  # the first, whole
    assert not temporaries(str(tmp_path))


@needs(BENCH)
def test_bench_out_of_host_memory_keeps_every_finished_row(tmp_path):
    """std::bad_alloc in a later benchmark (under a 4 GB address-space limit
    at n = 2^27): exit 3, one line, and the file holds the rows before it."""
    import resource
    out = tmp_path / "out.json"
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    r = subprocess.run([BENCH, "--benchmark_filter=^VectorAdd/cpu_scalar/n:(4096|134217728)/",
                        "--benchmark_min_time=0.01", f"--benchmark_out={out}"], capture_output=True, text=True,
                       preexec_fn=limit, timeout=300)
    assert r.returncode == 3, r.stderr
    assert "out of host memory" in r.stderr.splitlines()[-1], r.stderr
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == ["VectorAdd/cpu_scalar/n:4096/real_time"], names


@needs(BENCH)
def test_a_benchmark_that_never_finishes_ends_the_run_at_its_deadline(tmp_path):
    """As a stuck GPU's kernel would: a row that makes no progress within
    --stall-seconds (here one of 1000 passes over 2^27 elements, minutes
    long) ends the run with exit 3 and one line, keeping the rows before."""
    out = tmp_path / "out.json"
    start = time.monotonic()
    r = subprocess.run([BENCH, "--benchmark_filter=^VectorAdd/cpu_scalar/n:(4096|134217728)/",
                        "--benchmark_min_time=1000x", "--stall-seconds=3", f"--benchmark_out={out}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and time.monotonic() - start < 30, r.stderr
    last = r.stderr.splitlines()[-1]
    assert last.startswith("bench: no benchmark finished in 3 s since VectorAdd/cpu_scalar/n:4096/real_time"), last
    assert "nvidia-smi -q" in last
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == ["VectorAdd/cpu_scalar/n:4096/real_time"], names
    assert not temporaries(str(tmp_path))


@needs(BENCH)
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_a_regular_file_under_dev_is_replaced_whole_not_appended_to(tmp_path):
    """/dev/shm holds files: only devices, pipes and descriptors' paths are streams."""
    out = f"/dev/shm/cudabench-test-{os.getpid()}.json"
    try:
        with open(out, "w") as f:
            f.write('{"old": 1}\n')
        r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|16384)/",
                            "--benchmark_min_time=0.01", f"--benchmark_out={out}"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        with open(out) as f:
            assert len(json.load(f)["benchmarks"]) == 2  # one document, not one per row after the old one
        r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--markdown", out],
                           capture_output=True, text=True, timeout=120)
        with open(out) as f:
            assert r.returncode == 0 and f.read().startswith("#"), r.stderr
    finally:
        os.unlink(out)


@needs(BENCH)
def test_a_context_value_that_is_not_utf8_reaches_stdout_replaced(tmp_path):
    r = subprocess.run([os.fsencode(BENCH), b"--benchmark_filter=VectorAdd/cpu_scalar/n:4096/",
                        b"--benchmark_min_time=0.01", b"--benchmark_format=json", b"--benchmark_context=k=v\xff\xfe"],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.decode("utf-8"))["context"]["k"] == "v\ufffd\ufffd"


@needs(BENCH)
def test_too_few_open_files_is_one_line_not_a_wrong_result():
    """Google Benchmark exits 1 (a wrong result's code) when it cannot read
    /sys for the CPU's caches: bench raises the soft limit or names it."""
    r = subprocess.run(["bash", "-c", f'ulimit -n 8 && exec "{BENCH}" --benchmark_filter=VectorAdd/cpu_scalar/n:4096/ '
                        "--benchmark_min_time=1x"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[-1].startswith("bench: the limit on open files is 8 (ulimit -n; hard limit 8)")


@needs(BENCH)
def test_a_reader_that_goes_away_leaves_the_results_file_whole(tmp_path):
    """`bench --benchmark_out=r.json | head -1`: SIGPIPE used to kill bench
    (141) before r.json was written. With a file to finish the run goes on;
    without one it ends as a pipeline expects."""
    out = tmp_path / "r.json"
    filt = shlex.quote("--benchmark_filter=VectorAdd/cpu_scalar/n:(4096|65536)/")
    r = subprocess.run(["bash", "-c", f'set -o pipefail; "{BENCH}" {filt} --benchmark_min_time=0.01 '
                                      f'--benchmark_out="{out}" 2>/dev/null | head -c 1'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(out.read_text())["benchmarks"]) == 2
    r = subprocess.run(["bash", "-c", f'set -o pipefail; "{BENCH}" {filt} --benchmark_min_time=0.01 2>/dev/null | head -c 1'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 128 + signal.SIGPIPE


@needs(BENCH)
def test_bytes_that_are_not_utf8_reach_the_json_replaced(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ)
    env_b = {k.encode(): v.encode() for k, v in env.items()}
    env_b[b"CUDA_VISIBLE_DEVICES"] = b"0\xff\xfe"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={out}"], capture_output=True, env=env_b, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["benchmarks"] and "\ufffd" in json.dumps(doc, ensure_ascii=False)
    r = subprocess.run([BENCH, "--env=json"], capture_output=True, env=env_b, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout.decode("utf-8"))["gpu_usable"] in (True, False)


@needs(BENCH)
@needs(TRAIN)
def test_past_the_file_size_limit_the_write_fails_whole(tmp_path):
    """`ulimit -f 8`: SIGXFSZ used to kill bench and train (153) with a .tmp
    file left; now the write fails: exit 3, the reason, nothing left."""
    import resource
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={tmp_path / 'r.json'}"], capture_output=True, text=True, preexec_fn=limit,
                       timeout=120)
    assert r.returncode == 3 and "cannot write: File too large" in r.stderr, r.stderr
    d = dataset(str(tmp_path / "d"), train_images=idx_images(64), train_labels=idx_labels(64))
    r = subprocess.run([TRAIN, "--data-dir", d, "--epochs", "1", "--quiet", "--json", str(tmp_path / "t.json")],
                       capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert r.returncode == 3 and r.stderr.strip().endswith("cannot write: File too large"), r.stderr
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "t.json").exists()
    assert not temporaries(str(tmp_path))


@needs(BENCH)
@pytest.mark.parametrize("redirect,why", [("> /dev/full", "No space left on device"), (">&-", "Bad file descriptor")])
def test_standard_output_that_cannot_be_written_fails_the_run(redirect, why):
    for args in ("--env=json", "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/ --benchmark_min_time=0.01 "
                               "--benchmark_format=json"):
        r = subprocess.run(["bash", "-c", f'"{BENCH}" {args} {redirect}'], capture_output=True, text=True, timeout=120)
        assert r.returncode == 3, r.stderr
        assert r.stderr.strip().splitlines()[-1] == f"bench: standard output: cannot write: {why}", r.stderr


@needs(BENCH)
def test_a_thread_count_openmp_refuses_is_refused_too():
    """libgomp says its own word on junk before main(); bench's line, the last, names it."""
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar"], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="four"), timeout=60)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1].startswith("bench: OMP_NUM_THREADS=four: expected a count of threads"), r.stderr


@needs(BENCH)
def test_google_benchmarks_current_flag_forms_are_honoured(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=7x",
                        "--benchmark_time_unit=s", "--benchmark_context=run=a=b,team=gpu",
                        f"--benchmark_out={out}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    b = doc["benchmarks"][0]
    assert b["iterations"] == 7 and b["time_unit"] == "s", b
    assert b["name"] == "VectorAdd/cpu_scalar/n:4096/real_time", b  # the name a 1.8 library gives: rows still match
    assert doc["context"]["run"] == "a=b" and doc["context"]["team"] == "gpu"
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01s",
                        f"--benchmark_out={out}"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["benchmarks"][0]["iterations"] > 7


@needs(BENCH)
@pytest.mark.parametrize("flt", [".*.*.*.*.*.*z", "(.*)*z", "(.+)+z", "-(.*)*z"])
def test_a_backtracking_filter_selects_in_bounded_time(flt):
    t0 = time.monotonic()
    r = subprocess.run([BENCH, f"--benchmark_filter={flt}", "--benchmark_list_tests"], capture_output=True, text=True,
                       timeout=120)
    assert time.monotonic() - t0 < 20
    if flt.startswith("-"):  # everything but nothing: the whole list
        assert r.returncode == 0 and "VectorAdd/cpu_scalar/n:4096/real_time" in r.stdout.split()
    else:
        assert r.returncode == 2 and "matches no benchmark" in r.stderr


@needs(BENCH)
def test_explain_reads_an_endless_input_only_so_far():
    """`bench --explain - < /dev/zero` never ended: stdin is read up to 64 MiB,
    and a pipe that never ends (`journalctl -f | ...`) for 20 s."""
    t0 = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([BENCH, "--explain", "-"], stdin=zero, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "read its first 64 MiB" in r.stderr, r.stderr
    p = subprocess.Popen([BENCH, "--explain", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdin.write("Error 804: forward compatibility was attempted on non supported HW\n")
    p.stdin.flush()  # and never closed, as `journalctl -f` never ends
    try:
        p.wait(timeout=90)
        out, err = p.stdout.read(), p.stderr.read()
    finally:
        p.kill()
        p.stdin.close()
    assert p.returncode == 0 and "had not ended after 20 s" in out and "[2]" in out, err
    assert time.monotonic() - t0 < 80


@needs(BENCH)
def test_bench_on_a_full_disk_exits_3_and_says_why(tmp_path):
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        "--benchmark_out=/dev/full"], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "--benchmark_out=/dev/full: cannot write: No space left on device" in r.stderr
    r = subprocess.run([BENCH, "--env", "--env-out=/dev/full"], capture_output=True, text=True)
    assert r.returncode == 3 and r.stderr.strip() == "bench: --env-out=/dev/full: cannot write: No space left on device"
    assert dev_full_is_intact()


@needs(BENCH)
def test_bench_writes_through_symlinks_and_keeps_them(tmp_path):
    """A link to results/.../latest.json stays a link; the file it names gets
    the new results (a dangling link's target is made)."""
    target = tmp_path / "results" / "latest.json"
    target.parent.mkdir()
    target.write_text("old\n")
    (tmp_path / "link.json").symlink_to(target)
    (tmp_path / "chain.json").symlink_to(tmp_path / "link.json")
    (tmp_path / "dangling.txt").symlink_to("results/env.txt")
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        f"--benchmark_out={tmp_path / 'chain.json'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "chain.json").is_symlink()
    assert json.loads(target.read_text())["benchmarks"]
    r = subprocess.run([BENCH, "--env", f"--env-out={tmp_path / 'dangling.txt'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dangling.txt").is_symlink() and "CUDA" in (tmp_path / "results" / "env.txt").read_text()
    assert not temporaries(str(tmp_path))


@needs(BENCH)
def test_output_names_up_to_255_characters_are_written(tmp_path):
    for n in (246, 255):
        out = tmp_path / ("r" * (n - 5) + ".json")
        r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                            f"--benchmark_out={out}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(out.read_text())["benchmarks"]
    assert not temporaries(str(tmp_path))


@needs(BENCH)
def test_explain_reads_the_whole_of_a_long_log():
    """`journalctl -k | bench --explain -`: the error on the last line of 1.1 MB."""
    log = "kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd\n" * 17000
    log += "RuntimeError: CUDA error: Error 804: forward compatibility was attempted on non supported HW\n"
    assert len(log) > 1_100_000
    r = subprocess.run([BENCH, "--explain", "-"], input=log, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr  # recognised (whether a cause shows here is in the text); never 2
    assert "Forward-compatibility libraries" in r.stdout, r.stdout


@needs(BENCH)
def test_dev_stdout_as_a_pipe_is_written_in_place():
    """/dev/stdout leads to pipe:[N], which no path resolution follows: it is
    written in place (`bench --benchmark_out=/dev/stdout | jq`)."""
    r = subprocess.run([BENCH, "--benchmark_filter=VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
                        "--benchmark_out=/dev/stdout", "--benchmark_format=csv"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"benchmarks"' in r.stdout
    r = subprocess.run([BENCH, "--env=json", "--env-out=/dev/stdout"], capture_output=True, text=True)
    assert r.returncode == 0 and "gpu_usable" in json.loads(r.stdout), r.stderr
    r = subprocess.run([PY, os.path.join(SCRIPTS, "compare.py"), BASE, BASE, "--report-only", "--markdown",
                        "/dev/stdout"], capture_output=True, text=True)
    assert r.returncode == 0 and "### Benchmarks" in r.stdout, r.stderr
