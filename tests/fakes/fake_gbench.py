#!/usr/bin/env python3
"""A stand-in for a Google Benchmark program, for the A/B runner's tests
(tests/scripts/test_ab.py): it writes --benchmark_out the way Google Benchmark does,
with times the environment sets, and logs each start.

  FAKE_GBENCH_LOG    file to append this process's FAKE_GBENCH_SIDE to
  FAKE_GBENCH_TIME   Fake/steady's time in us (default 100); Fake/other is 50
  FAKE_GBENCH_STATES "1.0,1.2": a process's state, picked by its index in the
                     log, multiplies Fake/steady's time (bimodal machines)
  FAKE_GBENCH_BURN_FIRST  the first process runs beside busy processes
  FAKE_GBENCH_SLEEP  seconds to wait first, in a child `sleep` of its own
                     process group (a bench stuck on a GPU, with a child)
  FAKE_GBENCH_SLEEP_FROM  only from this process on (its index in the log)
  FAKE_GBENCH_PGID   file to write that process group's id to, once it sleeps
  FAKE_GBENCH_MODE   ok | crash (killed by SIGSEGV) | refuse (exit 2) |
                     wrong (a failed check, exit 1) | empty (the filter
                     matches nothing: a message, an empty file, exit 0)
"""
import json
import os
import re
import signal
import sys

args = dict(a.split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
mode = os.environ.get("FAKE_GBENCH_MODE", "ok")
log = os.environ.get("FAKE_GBENCH_LOG")
index = 0
if log:
    if os.path.exists(log):
        with open(log) as f:
            index = sum(1 for _ in f)
    with open(log, "a") as f:
        f.write(os.environ.get("FAKE_GBENCH_SIDE", "?") + "\n")
if os.environ.get("FAKE_GBENCH_BURN_FIRST") and index == 0:
    # Other load beside the first process: one busy process per CPU for
    # 0.6 s, not ours to wait for (their CPU time is not this process's).
    import subprocess
    import time
    for _ in range(os.cpu_count() or 1):
        subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 0.6: pass"],
                         start_new_session=True)
    time.sleep(0.8)
if os.environ.get("FAKE_GBENCH_SLEEP") and index >= int(os.environ.get("FAKE_GBENCH_SLEEP_FROM", "0")):
    import subprocess
    child = subprocess.Popen(["sleep", os.environ["FAKE_GBENCH_SLEEP"]])
    if os.environ.get("FAKE_GBENCH_PGID"):
        with open(os.environ["FAKE_GBENCH_PGID"], "w") as f:
            f.write(f"{os.getpgid(0)}\n")
    child.wait()
if mode == "refuse":
    print("fake_gbench: unknown flag --nonsense", file=sys.stderr)
    sys.exit(2)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
states = [float(x) for x in os.environ.get("FAKE_GBENCH_STATES", "1.0").split(",")]
state = states[index % len(states)]
reps = int(args.get("--benchmark_repetitions", "1"))
steady = float(os.environ.get("FAKE_GBENCH_TIME", "100"))
benchmarks = []
wanted = re.compile(args.get("--benchmark_filter", "."))
for name, t in (("Fake/steady/n:1/real_time", steady), ("Fake/other/n:1/real_time", 50.0)):
    if not wanted.search(name):
        continue
    scale = state if name.startswith("Fake/steady") else 1.0  # Fake/other is the control
    times = [t * scale * (1 + 0.001 * ((r * 7 + index * 3) % 5 - 2)) for r in range(reps)]
    for r, x in enumerate(times):
        e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps, "repetition_index": r,
             "threads": 1, "iterations": 1000, "real_time": x, "cpu_time": x, "time_unit": "us",
             "bytes_per_second": 12e6 / x, "label": "a label"}
        if mode == "wrong" and name.startswith("Fake/steady"):
            e = {"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
                 "error_message": "c[3] = 1 but a + b = 2"}
        benchmarks.append(e)
    benchmarks.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                       "aggregate_name": "median", "real_time": sorted(times)[len(times) // 2], "time_unit": "us"})
if mode == "empty":  # what Google Benchmark does when the filter matches nothing
    print(f"Failed to match any benchmarks against regex: {args.get('--benchmark_filter')}", file=sys.stderr)
    open(args["--benchmark_out"], "w").close()
    sys.exit(0)
with open(args["--benchmark_out"], "w") as f:
    json.dump({"context": {"host_name": "fake", "fake_process": index}, "benchmarks": benchmarks}, f)
sys.exit(1 if mode == "wrong" else 0)
