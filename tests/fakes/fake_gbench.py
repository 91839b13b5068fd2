#!/usr/bin/env python3
"""A stand-in for a Google Benchmark program, for the A/B runner's tests
(tests/test_ab.py): it writes --benchmark_out the way Google Benchmark does,
with times the environment sets, and logs each start.

  FAKE_GBENCH_LOG    file to append this process's FAKE_GBENCH_SIDE to
  FAKE_GBENCH_TIME   Fake/steady's time in us (default 100); Fake/other is 50
  FAKE_GBENCH_STATES "1.0,1.2": a process's state, picked by its index in the
                     log, multiplies every time (bimodal machines)
  FAKE_GBENCH_MODE   ok | crash (killed by SIGSEGV) | refuse (exit 2) |
                     wrong (a failed check, exit 1) | empty (no benchmarks)
"""
import json
import os
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
for name, t in (("Fake/steady/n:1/real_time", steady), ("Fake/other/n:1/real_time", 50.0)):
    times = [t * state * (1 + 0.001 * ((r * 7 + index * 3) % 5 - 2)) for r in range(reps)]
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
if mode == "empty":
    benchmarks = []
with open(args["--benchmark_out"], "w") as f:
    json.dump({"context": {"host_name": "fake", "fake_process": index}, "benchmarks": benchmarks}, f)
sys.exit(1 if mode == "wrong" else 0)
