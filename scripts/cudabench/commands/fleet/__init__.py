"""The fleet mode's Python steps: merge (in each array task), report (the
collect job), and fleet.sh's small steps around Slurm (slurm.py).

    fleet.py merge --host H --unit U --status-out FILE [--out FILE] [--processes LIST] [--env FILE] ...
    fleet.py report RUN_DIR [--threshold 0.10] [--report-only] [--no-plots]
    fleet.py check-submit|gres|run-json|task-gpus|exit-code ...   (fleet.sh's and task.sh's small steps)

merge: one unit's bench processes (LIST: a line "<exit code> TAB <json> TAB
<stderr>" per process) into one Google Benchmark JSON, one entry per
benchmark per process (the process's median: the process is the unit of
sampling, as in scripts/ab.py), and a status file: what ran, each
process's exit code and error line, the build, the Slurm job.

report: reads RUN_DIR/run.json (what fleet.sh submitted) and every
RUN_DIR/<host>/<unit>.status.json with its results and environment, and
writes, each file whole:
  fleet.json         the merged fleet: every machine's medians, ratios,
                     status, context, verdicts, and the findings
  fleet.md           the report (below)
  fleet-<group>.png  each machine's ratio to the fleet median, per benchmark
A machine is a (node, unit) pair: node7/cpu, node7/gpu3. Machines are
compared within their group: the same GPU model, or the same CPU model and
thread count; different hardware is never called an outlier.

For each benchmark of a group, each machine's value is the median of its
process samples, the fleet median is the median of those, and the ratio is
a machine's value over the fleet median (time: above 1 is slower).
  slower / faster  ratio beyond 1 +- the threshold (default 10%) and more
                   than 3.5 robust standard deviations (1.4826 x the median
                   absolute deviation of the log ratios) from the group,
                   so a fleet that is noisy everywhere names nobody;
                   at least 3 machines are needed
  bimodal          the sorted ratios split at a gap wider than the
                   threshold into two sides of at least a quarter of the
                   group (and 2 machines) each
For each slower machine, the likely cause is what differs from the rest of
its group in context and telemetry (driver, toolkit, libcudart, cuBLAS,
cuDNN, LibTorch, measured clocks, application clocks, power limit, PCIe
link, ECC, throttling, persistence, MIG, compute mode, temperature, CPU
governor, huge pages, CPU clock, load, kernel, OS, build), ranked by how
well the benchmarks it can affect match the ones that are slow (PCIe
explains a slow Transfer row, not a slow kernel). For a bimodal split, the
features whose values separate the two sides. The environment verdicts of
every node are grouped: "3 of 16 nodes: ...".

Exit codes: 0 no machine is off; 1 a machine is off: slower than its group
beyond the bar, on the slow side of a bimodal group, or with a wrong result
(a failed check, a kernel fault); 2 bad usage (no such run folder, one
with no fleet results in it, a bad --threshold, a run folder the report
cannot be written in, found before any work); 3 the fleet run is
incomplete (a node with no results, a build that failed, a benchmark that
could not run, a node's file that cannot be read or is missing: the report
is written from the rest, and each such file named in it and in one line on
stderr), or the tool could not run. --report-only exits 0 for 1 and 3.
"""

import argparse
import glob
import json
import os
import sys

from ...base.errors import ToolError, one_line
from ...base.files import check_writable, refuse_inputs_as_outputs, write_whole
from ...base.cli import ArgParser, bounded, run_tool
from .merge import cmd_merge
from .slurm import cmd_slurm
from .machines import load_run
from .analysis import analyse, grouped_verdicts
from .render import plot_groups, plot_name, render, to_json

EXIT_OK, EXIT_OFF, EXIT_BAD, EXIT_INCOMPLETE = 0, 1, 2, 3


def exit_code(findings):
    if findings["off"] or findings["splits"] or findings["wrong"]:
        return EXIT_OFF
    return EXIT_INCOMPLETE if findings["incomplete"] or findings["unreadable"] else EXIT_OK


def check_outputs(run_dir, machines):
    """fleet.json, fleet.md and the plots can be written in the run folder,
    and none is one of the run's files: found before the report is made."""
    names = ["fleet.json", "fleet.md"] + [plot_name(g) for g in sorted({m.group for m in machines})]
    inputs = glob.glob(os.path.join(glob.escape(run_dir), "*", "*.json")) + [os.path.join(run_dir, "run.json")]
    refuse_inputs_as_outputs([("output", os.path.join(run_dir, n)) for n in names], inputs)
    for n in names[:2]:
        check_writable(os.path.join(run_dir, n), "output")


def cmd_report(a):
    meta, machines, lost = load_run(a.run_dir)
    check_outputs(a.run_dir, machines)
    findings = analyse(meta, machines, lost, a.threshold)
    verdicts = grouped_verdicts(machines)
    code = exit_code(findings)
    plots, unplotted = {}, ""
    if not a.no_plots:
        try:  # a missing matplotlib costs the plots, never the report
            plots = plot_groups(findings, a.run_dir, a.threshold)
        except ToolError as e:
            unplotted = one_line(e)
        except Exception as e:  # noqa: BLE001
            unplotted = f"{type(e).__name__}: {one_line(e)}"
    text = render(meta, machines, findings, verdicts, a.threshold, plots)
    if unplotted:
        text += f"\nNo plots: {unplotted}\n"
        print(f"fleet: no plots: {unplotted}", file=sys.stderr)
    write_whole(os.path.join(a.run_dir, "fleet.json"),
                        json.dumps(to_json(meta, machines, findings, verdicts, code), indent=1) + "\n")
    write_whole(os.path.join(a.run_dir, "fleet.md"), text + "\n")
    print(text.split("\n## Builds")[0].rstrip() + f"\n\nfleet: report in {os.path.join(a.run_dir, 'fleet.md')}",
          flush=True)
    say_findings(findings, code)
    return EXIT_OK if a.report_only else code


def say_findings(findings, code):
    """stderr: one line per file that could not be used, and one for what
    else is off or incomplete (nothing when all is well)."""
    for u in findings["unreadable"]:
        print(f"fleet: the run is incomplete: {u['file']}: {u['error']}", file=sys.stderr)
    if code == EXIT_OFF:
        print(f"fleet: {len(findings['off'])} machine(s) off, {len(findings['splits'])} bimodal split(s), "
              f"{len(findings['wrong'])} wrong result(s)", file=sys.stderr)
    elif code == EXIT_INCOMPLETE and findings["incomplete"] and not findings["unreadable"]:
        print(f"fleet: the run is incomplete: {findings['incomplete'][0]['machine']}: "
              f"{findings['incomplete'][0]['error']}", file=sys.stderr)


def main(argv=None):
    ap = ArgParser(prog="fleet", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=ArgParser)
    m = sub.add_parser("merge", help="one unit's processes into one JSON and a status file (array task)")
    m.add_argument("--host", required=True)
    m.add_argument("--unit", required=True)
    m.add_argument("--status-out", required=True)
    m.add_argument("--out")
    m.add_argument("--processes", help="a file: '<exit code> TAB <json> TAB <stderr>' per process")
    m.add_argument("--env")
    m.add_argument("--device", action=bounded(-1, 4095), default=-1, help="the GPU's index (-1: none)")
    m.add_argument("--task", default="0")
    m.add_argument("--build", default="")
    m.add_argument("--fingerprint", default="")
    m.add_argument("--started", default="")
    m.add_argument("--error", default="", help="why this unit ran nothing")
    r = sub.add_parser("report", help="merge a run's results and write fleet.json, fleet.md and plots")
    r.add_argument("run_dir")
    r.add_argument("--threshold", action=bounded(0, 1, float, "()"), default=0.10,
                   help="relative change that counts (default 0.10)")
    r.add_argument("--report-only", action="store_true", help="exit 0 whatever the findings")
    r.add_argument("--no-plots", action="store_true", help="no PNG (no matplotlib needed)")
    add_slurm_steps(sub)
    a = ap.parse_args(argv)
    steps = {"merge": cmd_merge, "report": cmd_report}
    return run_tool("fleet", lambda: steps.get(a.cmd, cmd_slurm)(a))


def add_slurm_steps(sub):
    """fleet.sh's and task.sh's small steps (slurm.py)."""
    c = sub.add_parser("check-submit", help="fleet.sh's numbers checked (2 and one line when one is off)")
    c.add_argument("--min-time", required=True)
    c.add_argument("--threshold", required=True)
    g = sub.add_parser("gres", help="sinfo's '%%N|%%G|%%t' lines on stdin: {node: GPUs} as JSON")
    g.add_argument("--total", action="store_true", help="the sum instead")
    j = sub.add_parser("run-json", help="the run's parameters (fleet.sh's environment) written whole to PATH")
    j.add_argument("path")
    j.add_argument("array_job", nargs="?", default="")
    j.add_argument("collect_job", nargs="?", default="")
    t = sub.add_parser("task-gpus", help="bench --env=json on stdin: why, gpu N and listed N lines")
    t.add_argument("host")
    x = sub.add_parser("exit-code", help="the report's exit code from fleet.json (3 when unreadable)")
    x.add_argument("fleet_json")


def entry():
    """The program, as scripts/fleet.py runs it: its exit code."""
    return main()
