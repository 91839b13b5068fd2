"""gpu-check's planner (cudabench/commands/gpu_check.py) on its own: the
status a step's end gives, and the estimates a last run gives. The whole
run is tests/scripts/test_gpu_check.py's dry runs."""
import os

from cudabench.commands import gpu_check


def test_a_step_killed_by_a_signal_reads_as_a_shell_gives_it():
    # timeout kills a step that ignores TERM, and itself, by KILL: 137, as
    # bash saw it, so that the step is recorded timed-out, never "exit -9".
    rc = gpu_check.run_in_group(["timeout", "-k", "1", "1", "bash", "-c", "trap '' TERM; sleep 10"])
    assert rc == 137
    assert gpu_check.run_in_group(["bash", "-c", "exit 5"]) == 5
    assert gpu_check.status_of(-11) == 139


def test_the_last_run_of_the_same_kind_gives_the_estimates(tmp_path):
    (tmp_path / "plan.txt").write_text("# dry run 1, quick 0\n")
    (tmp_path / "steps.txt").write_text("preflight  ok           7 s  \nbuild      timed-out  330 s  stopped\n"
                                        "tests      failed      12 s  exit 3\n")
    plan = {name: (est, cap, where) for name, est, cap, _, where in gpu_check.plan_steps(str(tmp_path), "1", "0")}
    assert plan["preflight"] == (7, 90, "last run: 7 s")
    assert plan["build"] == (330, 495, "last run: timed out at 330 s")  # its cap, and 1.5 times that as the new cap
    assert plan["tests"][2] == "STEPS"  # a failed step says nothing of its time
    other = {name: where for name, _, _, _, where in gpu_check.plan_steps(str(tmp_path), "0", "0")}
    assert set(other.values()) == {"STEPS"}  # a dry run's times never plan a real one
    assert [p[0] for p in gpu_check.plan_steps(os.devnull, "0", "0")][:2] == ["preflight", "build"]
