"""gpu_summary.py: the goals of a GPU check, marked, on a made-up results
folder (the real ones come from a GPU machine), and on a partial one."""
import json
import os
import subprocess
import sys

from conftest import ROOT


SCRIPT = os.path.join(ROOT, "scripts", "gpu_summary.py")


def bench(name, us, bps=None, **extra):
    b = {"name": name, "run_name": name, "run_type": "iteration", "real_time": us, "time_unit": "us"}
    if bps:
        b["bytes_per_second"] = bps
    b.update(extra)
    return b


def write(d, name, doc):
    with open(os.path.join(d, name), "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def summary(d):
    r = subprocess.run([sys.executable, SCRIPT, str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def goal_line(text, what):
    return next(l for l in text.splitlines() if what in l)


def full_run(d):
    write(d, "env.json", {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0", "sms": 132, "l2_bytes": 62914560,
                                    "peak_bandwidth_bytes_per_s": 4.9e12, "nvml": {"found": True}}],
                          "driver": {"nvml_driver_version": "580.95.05", "cuda_version": "13.0"},
                          "runtime": {"loaded_version": "13.0"},
                          "verdicts": [{"level": "warning", "message": "persistence is off",
                                        "evidence": ["NVML persistence mode: 0"]}]})
    write(d, "steps.txt", "machine    ok          2 s\nbuild      ok        170 s\n")
    write(d, "ctest.log", "100% tests passed, 0 tests failed out of 120\n\nThe following tests did not run:\n"
                          "\t 12 - A.B (Skipped)\n\t 13 - A.C (Skipped)\n")
    write(d, "sanitizer.txt", "== memcheck: test_vector_add_gpu\n========= ERROR SUMMARY: 0 errors\n"
                              "== racecheck: test_vector_add_gpu\n========= ERROR SUMMARY: 0 errors\n")
    big, mid, dram = 134217728, 1 << 20, 1 << 26
    reps = lambda name, us, bps, **kw: [bench(name, us, bps, **kw) for _ in range(3)]
    benches = (reps(f"VectorAdd/cuda_v4/n:{big}/manual_time", 358.0, 4.5e12, frac_of_peak=0.92, frac_of_copy=1.04,
                    sm_clock_mhz=1980)
               # 2^26 is DRAM-bound too: the goals take the worse of the two sizes.
               + reps(f"VectorAdd/cuda_v8/n:{dram}/manual_time", 182.0, 4.42e12, frac_of_copy=0.99)
               + reps(f"VectorAdd/cuda_v4/n:{dram}/manual_time", 190.0, 4.3e12, frac_of_copy=0.97)
               + reps(f"Copy/cuda_kernel/n:{big}/manual_time", 400.0, 2.68e12, frac_of_peak=0.56)
               + reps(f"Copy/cuda_float4/n:{big}/manual_time", 248.0, 4.33e12, frac_of_peak=0.88)
               + reps(f"VectorAdd/thrust/n:{big}/manual_time", 350.0, 4.6e12)  # faster at a DRAM-bound size
               + reps("Launch/empty_kernel/launches:1/manual_time", 2.1, None)
               + reps("Launch/empty_kernel/launches:64/manual_time", 1.05, None)
               + reps(f"VectorAdd/cuda_v1/n:{big}/manual_time", 400.0, 4.0e12)
               + reps(f"VectorAdd/cublas_geam/n:{big}/manual_time", 366.0, 4.4e12)
               + reps(f"VectorAdd/cuda_v4/n:{mid}/manual_time", 5.0, 2.5e12)
               + reps(f"VectorAdd/thrust/n:{mid}/manual_time", 4.5, 2.8e12)  # faster still, but not DRAM-bound
               + reps("VectorAdd/cuda_v4/n:10000000/manual_time", 28.0, 4.29e12)
               + reps("Transfer/h2d_pinned/bytes:40000000/manual_time", 833.0, 48e9, frac_of_peak=0.76))
    benches.append(bench("VectorAdd/cuda_v2/n:10000000/manual_time", 0, error_occurred=True,
                         error_message="cuda_v2 gave a wrong result"))
    # The bench step's two files: the headline rows, then the rest (2^20 here).
    write(d, "vector_add_headline.json", {"benchmarks": [b for b in benches if f"n:{mid}/" not in b["name"]]})
    write(d, "vector_add.json", {"benchmarks": [b for b in benches if f"n:{mid}/" in b["name"]]})
    write(d, "train_cuda.json", {"per_epoch": [{"seconds": 0.5, "images_per_second": 120000}] * 10,
                                 "final_test_accuracy": 0.89})
    write(d, "train_cuda_graph.json", {"per_epoch": [{"seconds": 0.25, "images_per_second": 240000}] * 10,
                                       "final_test_accuracy": 0.89})
    # The Python loop, eager and compiled: its first epoch (a compile) is not its median.
    write(d, "train_py_cuda.json", {"per_epoch": [{"seconds": 1.0, "images_per_second": 60000},
                                                  {"seconds": 0.7, "images_per_second": 85000}] * 2,
                                    "final_test_accuracy": 0.88})
    write(d, "train_py_compiled.json", {"per_epoch": [{"seconds": 30.0, "images_per_second": 2000}]
                                        + [{"seconds": 0.24, "images_per_second": 250000}] * 2,
                                        "final_test_accuracy": 0.88})
    for i, (mode, us) in enumerate([("read", 5.0), ("memset", 6.0), ("memset", 6.1), ("read", 5.1)], 1):
        write(d, f"flush_{mode}_{i}.json", {"benchmarks": [bench(f"VectorAdd/cuda_v4/n:{mid}/manual_time", us, 1e12)]})


def test_each_goal_is_marked(tmp_path):
    full_run(tmp_path)
    s = summary(tmp_path)
    line = goal_line(s, "best raw VectorAdd kernel, DRAM-bound (2^26, 2^27)")
    assert line.startswith("  \u2714") and "4.42 TB/s (cuda_v8 at 2^26)" in line  # the worse size's best kernel
    line = goal_line(s, "against the best device copy")
    assert line.startswith("  \u2714") and "0.990x of the copy (cuda_v8 at 2^26)" in line
    line = goal_line(s, "vectorised copy kernel at 2^27")  # not BabelStream's, at 2.68
    assert line.startswith("  \u2714") and "4.33 TB/s" in line
    line = goal_line(s, "raw kernel vs cuBLAS")  # judged at 8x L2 and up only: 2^20 is left out
    assert line.startswith("  \u2718") and "0.978x (worst: cuda_v4 vs thrust at 134217728)" in line
    assert goal_line(s, "VectorAdd at 1e7").startswith("  \u2714") and "28.0 us" in s
    line = goal_line(s, "pinned host-to-device")
    assert line.startswith("  \u2718") and "48.0 GB/s (76% of PCIe)" in line
    line = goal_line(s, "10 Fashion-MNIST epochs, batch 64, eager")
    assert line.startswith("  \u2714") and "89.0% Fashion-MNIST test accuracy" in line
    line = goal_line(s, "epochs, batch 64, CUDA graph")
    assert line.startswith("  \u2718") and "2.50 s" in line
    line = goal_line(s, "C++ eager vs Python eager")  # 120000 against the median of 85000, 60000, 85000
    assert line.startswith("  \u2714") and "1.41x (120000 vs 85000 img/s, median epoch past the first)" in line
    line = goal_line(s, "C++ CUDA graph vs Python compiled")  # the compile's epoch is not the median
    assert line.startswith("  \u2718") and "0.96x (240000 vs 250000 img/s" in line


def test_a_quick_runs_epochs_count_its_warm_up_once(tmp_path):
    # Two epochs: the first (cuDNN's plans, the capture) once, then nine of the second, not both times five.
    write(tmp_path, "train_cuda.json", {"per_epoch": [{"seconds": 3.0, "images_per_second": 20000},
                                                      {"seconds": 0.4, "images_per_second": 150000}],
                                        "final_test_accuracy": 0.83})
    line = goal_line(summary(tmp_path), "batch 64, eager")
    assert line.startswith("  \u2718") and "6.60 s (2 epochs: the first, then 9 x the median of the rest)" in line


def test_the_rest_of_the_summary(tmp_path):
    full_run(tmp_path)
    s = summary(tmp_path)
    assert s.startswith("GPU check of ")
    assert "NVIDIA H200 sm_9.0, 132 SMs, peak 4900 GB/s, 1 GPU(s)" in s
    assert "WARNING: persistence is off\n    seen: NVML persistence mode: 0\n" in s
    assert "build      ok        170 s" in s
    assert "Tests: 120/120 passed, 2 skipped" in s
    assert "memcheck: test_vector_add_gpu: 0 errors" in s and "racecheck" in s
    assert "ERROR VectorAdd/cuda_v2/n:10000000/manual_time: cuda_v2 gave a wrong result" in s
    assert "cuda_v4 1048576" in s and "1.198" in s  # memset / read
    assert "they should agree within a few %" in s
    assert "(set for an H200" not in s
    assert "GB/s" in s and "(GB = 1e9 bytes)" in s  # one convention, named in the table's header
    assert ("launch overhead (empty kernels): 2.10 us one launch's turnaround, 1.05 us from one launch to the "
            "next, back to back") in s


def test_a_partial_run_still_summarises(tmp_path):
    write(tmp_path, "steps.txt", "machine    ok          2 s\nbuild      ok        170 s\n")
    s = summary(tmp_path)
    assert "build      ok" in s
    assert goal_line(s, "best raw VectorAdd kernel, DRAM-bound (none)").startswith("  - ")
    assert "not measured" in goal_line(s, "10 Fashion-MNIST epochs, batch 64, CUDA graph")
    assert "not measured" in goal_line(s, "C++ CUDA graph vs Python compiled")


def test_the_status_is_the_worst_steps_and_a_failed_step_shows_its_log(tmp_path):
    write(tmp_path, "steps.txt", "preflight  ok           3 s  \n"
                                 "build      failed     40 s  exit 3\n"
                                 "env        skipped     0 s  not run: build did not pass\n")
    os.makedirs(tmp_path / "logs")
    write(tmp_path / "logs", "build.log", "".join(f"line {i}\n" for i in range(20)) + "the build has no NCCL: x\n")
    s = summary(tmp_path)
    assert "Status: exit 3 (a step failed or timed out)" in s
    assert "    | the build has no NCCL: x" in s and "    | line 15" in s and "line 14" not in s
    write(tmp_path, "steps.txt", "preflight  failed      1 s  exit 3\n")
    write(tmp_path / "logs", "preflight.log", "ok       cmake\nMISSING  ninja: not on PATH\nok       torch\n")
    s = summary(tmp_path)
    assert "    | MISSING  ninja: not on PATH" in s and "| ok" not in s
    write(tmp_path, "steps.txt", "tests      WRONG        9 s  a check found a wrong result\nbench      skipped  0 s\n")
    assert "Status: exit 1 (a wrong result)" in summary(tmp_path)
    write(tmp_path, "steps.txt", "tests      ok        9 s\nbench      skipped  0 s\n")
    assert "Status: exit 4 (a step was skipped)" in summary(tmp_path)


def test_a_row_above_its_peak_is_a_warning(tmp_path):
    write(tmp_path, "vector_add.json", {"benchmarks": [
        bench("Transfer/h2d_pinned/bytes:40000000/manual_time", 600.0, 66e9, frac_of_peak=1.05),
        bench("Transfer/d2h_pinned/bytes:40000000/manual_time", 700.0, 57e9, frac_of_peak=0.9)]})
    s = summary(tmp_path)
    assert "WARNING Transfer/h2d_pinned/bytes:40000000/manual_time: 1.05 of its peak: the peak is wrong" in s
    assert "WARNING Transfer/d2h" not in s


def test_bad_usage_exits_2(tmp_path):
    r = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "missing")], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def test_data_parallel_lines_show_the_one_rank_nccl_run_and_the_scaling_table(tmp_path):
    write(tmp_path, "train_ddp_nccl1.json", {
        "per_epoch": [{"images_per_second": 90000.0}, {"images_per_second": 120000.0}],
        "final_test_accuracy": 0.8512,
        "distributed": {"backend": "nccl", "world_size": 1,
                        "allreduce": {"seconds_per_step": 0.0000421, "bytes": 2384168, "buckets": 2}}})
    write(tmp_path, "train_ddp_check.json", {
        "per_epoch": [{"images_per_second": 1000.0}], "final_test_accuracy": 0.5,
        "distributed": {"backend": "gloo", "world_size": 2, "replicas_checked_after_steps": 64,
                        "replicas_identical": True,
                        "allreduce": {"seconds_per_step": 0.001, "bytes": 2384168, "buckets": 2}}})
    os.makedirs(tmp_path / "ddp-scaling")
    write(tmp_path / "ddp-scaling", "scaling.md", "# Data-parallel scaling: cuda, nccl, local\n\n| ranks |\n|---:|\n| 1 |\n")
    s = summary(tmp_path)
    line = goal_line(s, "data-parallel, nccl x 1")
    assert "120000 img/s" in line and "all-reduce n/a (one rank)" in line  # nothing is reduced
    assert "2.38 MB in 2 buckets" in line and "Fashion-MNIST test accuracy 85.12%" in line
    # The replica check's run is a check: its speed is not shown.
    assert ("replica check (--check-sync, 2 ranks over gloo, its speed not a measurement): replicas identical "
            "after 64 checked steps") in s
    assert "1000 img/s" not in s
    assert "# Data-parallel scaling: cuda, nccl, local" in s


def test_no_data_parallel_lines_without_its_files(tmp_path):
    assert "data-parallel" not in summary(tmp_path)


def test_every_planned_step_is_listed_with_its_estimate_and_one_not_reached_says_so(tmp_path):
    write(tmp_path, "plan.txt", "# dry run 0\n"
                                "preflight    10   60 -                    STEPS\n"
                                "build       162  330 -                    last run: 125 s\n"
                                "tests        45  150 -                    STEPS\n")
    write(tmp_path, "steps.txt", "preflight  ok           3 s  \nbuild      ok         130 s  \n")
    s = summary(tmp_path)
    assert "  build      ok         130 s    [estimate 162 s: last run: 125 s]" in s
    assert "  tests      not-reached  [estimate 45 s: STEPS]" in s
    assert "Status: exit 4 (a step was skipped)" in s  # a step not reached is not a pass


def expect_rows(tmp_path, doc, *patterns):
    write(tmp_path, "r.json", doc)
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "expect_rows.py"), str(tmp_path / "r.json"),
                           *patterns], capture_output=True, text=True)


def test_each_row_a_step_exists_for_must_be_there_and_pass(tmp_path):
    doc = {"benchmarks": [bench("VectorAdd/cuda_v4/n:4096/manual_time", 2.0, 1e10),
                          bench("MnistTrain/cpu/batch:64/real_time", 900.0),
                          bench("Copy/cuda_kernel/n:4096/dev:1/manual_time", 2.0, 1e10, error_occurred=True,
                                error_message="could not run: out of memory")]}
    r = expect_rows(tmp_path, doc, "^VectorAdd/cuda_v4/n:4096/")
    assert r.returncode == 0 and r.stdout == ""
    # A GPU row missing is not made up for by the CPU control row.
    r = expect_rows(tmp_path, doc, "^VectorAdd/cuda_v4/n:4096/", "^MnistTrain/cuda/batch:64/")
    assert r.returncode == 3 and r.stdout == "missing: no row matches ^MnistTrain/cuda/batch:64/\n"
    r = expect_rows(tmp_path, doc, "^Copy/cuda_kernel/n:4096/")
    assert r.returncode == 3
    assert r.stdout == "failed: Copy/cuda_kernel/n:4096/dev:1/manual_time: could not run: out of memory\n"
    r = expect_rows(tmp_path, doc, "^(")
    assert r.returncode == 2 and r.stderr.startswith("expect_rows: ")


def test_a_file_of_an_odd_shape_costs_its_own_section_only(tmp_path):
    full_run(tmp_path)
    write(tmp_path, "train_cuda.json", {"per_epoch": [], "final_test_accuracy": 0.1})  # killed in its first epoch
    write(tmp_path, "mnist.json", {"benchmarks": [{"name": "MnistTrain/cuda/batch:64/manual_time"}]})  # no time
    write(tmp_path, "train_cuda_graph.json", {"per_epoch": [{"seconds": "x"}]})
    s = summary(tmp_path)
    assert "not measured" in goal_line(s, "epochs, batch 64, eager")
    assert goal_line(s, "best raw VectorAdd kernel, DRAM-bound").startswith("  \u2714")
    assert "(train_goal could not be shown: TypeError" in s and "build      ok" in s


def test_each_sanitizer_run_says_what_it_found_or_why_it_found_nothing(tmp_path):
    write(tmp_path, "sanitizer.txt",
          "== memcheck: canary SanitizerCanary.DISABLED_OutOfBoundsWrite, its out-of-bounds write to be caught (exit 86)\n"
          "========= Invalid __global__ write of size 4 bytes\n========= ERROR SUMMARY: 1 error\n"
          "== memcheck: test_vector_add_gpu (exit 0)\n========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
          "== memcheck: torch add (exit 255)\n========= COMPUTE-SANITIZER\n"
          "========= Error: process didn't terminate successfully\n"
          "========= Error: Target application terminated before first instrumented API call\n"
          "== initcheck: canary SanitizerCanary.DISABLED_UninitialisedRead, its read to be caught (exit 0)\n"
          "========= ERROR SUMMARY: 0 errors\n"
          "== initcheck: test_vector_add_gpu (exit 86)\n========= Device not supported\n========= ERROR SUMMARY: 0 errors\n"
          "== racecheck: test_vector_add_gpu\n"  # the first GPU run's racecheck, whose summary is its own
          "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
          "== racecheck: not run: no kernel of ours uses shared memory, all it checks\n")
    lines = summary(tmp_path).splitlines()
    start = lines.index("Sanitizer (a tool counts only once it catches its canary, an error planted for it):")
    assert [l.split("(exit")[-1] if "(exit" in l else l for l in lines[start + 1:start + 8]] == [
        " 86): caught (1 errors)",
        " 0): 0 errors",
        " 255): no error summary, the run did not finish: Target application terminated before first instrumented API call",
        " 0): missed (0 errors): the tool proves nothing here",
        " 86): the tool does not work here (device not supported)",
        "  racecheck: test_vector_add_gpu: 0 errors",
        "  racecheck: not run: no kernel of ours uses shared memory, all it checks"]


def test_the_plan_is_shown_against_the_budget(tmp_path):
    plan = "# dry run 1, quick 0\n# budget 540 s, 20 s kept for the end\n"
    write(tmp_path, "plan.txt", plan + "preflight    5   90 -      STEPS\nbuild      400  330 -      STEPS\n")
    assert ("  Plan: estimates sum to 405 s of the 540 s budget (135 s reserve: 20 s kept for the end, 115 s for "
            "steps slower than estimated)") in summary(tmp_path)
    write(tmp_path, "plan.txt", plan + "preflight    5   90 -      STEPS\nbuild      520  330 -      STEPS\n")
    assert ("  Plan: estimates sum to 525 s, over the 540 s budget less the 20 s kept for the end: the last steps "
            "will be skipped") in summary(tmp_path)


def test_a_row_with_an_impossible_figure_fails_its_step_naming_it(tmp_path):
    good = bench("VectorAdd/cuda_v4/n:134217728/manual_time", 380.0, 4.2e12, frac_of_peak=0.88, frac_of_copy=0.99,
                 label="L2 flushed (read); one launch: its turnaround included")
    doc = {"benchmarks": [good,
                          bench("VectorAdd/thrust/n:134217728/manual_time", 300.0, 5.4e12, frac_of_peak=1.12),
                          bench("VectorAdd/cuda_v1/n:134217728/manual_time", 400.0, 4.0e12, frac_of_copy=1.3),
                          bench("Copy/cuda_memcpy/n:134217728/manual_time", 250.0, 4.3e12,
                                label="L2 flushed (read); not gated: launches block the host here (a profiler?)"),
                          bench("Copy/cuda_kernel/n:134217728/manual_time", 0.0, 4.3e12)]}
    r = expect_rows(tmp_path, doc, "^VectorAdd/cuda_v4/")
    assert r.returncode == 0 and r.stdout == ""
    r = expect_rows(tmp_path, doc, "^VectorAdd/", "^Copy/", "^Launch/")
    assert r.returncode == 1, r.stdout  # a wrong measurement outranks a missing row
    lines = r.stdout.splitlines()
    assert [l.split(": ")[:2] for l in lines] == [
        ["doubtful", "VectorAdd/cuda_v1/n:134217728/manual_time"], ["doubtful", "Copy/cuda_memcpy/n:134217728/manual_time"],
        ["missing", "no row matches ^Launch/"],
        ["impossible", "VectorAdd/thrust/n:134217728/manual_time"], ["impossible", "Copy/cuda_kernel/n:134217728/manual_time"]]
    assert "1.300 of the best device copy" in lines[0] and "without its gate" in lines[1]
    assert "1.120 of its theoretical peak" in lines[3] and "real_time is 0.0" in lines[4]
    # Without the impossible ones, a doubtful figure could not be measured as it should: 3.
    r = expect_rows(tmp_path, doc, "^VectorAdd/cuda_v1/")
    assert r.returncode == 3 and r.stdout.startswith("doubtful: VectorAdd/cuda_v1/")
