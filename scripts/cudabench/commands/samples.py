"""Samples from processes: the one code path that runs bench processes and
merges them into one result, for the default run (scripts/run-bench.sh),
the A/B runner (ab.py), the fleet (fleet.py merge) and the stack matrix.

    samples.py run --bench BENCH --out FILE [--processes K] [--most M] [--seconds S] [--reps R]
                   [--min-time S] [--filter RX] [--label NAME]
                   [--max-interference SHARE] [--process-seconds S]
                   [-- extra bench flags]

run: K bench processes (default 4, up to 1000), one after another; each runs
the chosen benchmarks with R repetitions (default 1) and gives one sample per
benchmark, the median of its repetitions. Repetitions inside one process
share its state (memory placement, huge pages, clocks, neighbours), so they
are not independent samples; processes are. Then a row whose median is not
known to within +-5% (the distribution-free interval of the median of its
process samples, at 85%) gets two more processes of its own, and again, up
to M processes (default 12) or until two more would end past S seconds
(default 45); a row still wide then is named. A row that the processes the
budget can still buy would not narrow to +-5% (the robust spread of its
processes, extrapolated; at least 7, where one wild process leaves the
interval) stops at once: it is named with how well its median is known and
how many processes +-5% would take (the table's note; "too_noisy"). Past
S seconds no loaded process runs again, and beside load no process starts
once each row has 2. A process that ran while the
rest of the machine took more than SHARE of all CPUs' time (other
processes, or the hypervisor's steal; default 0.05) runs again, up to 3
times and at most K times in all; one kept beside such load is flagged:
its entries say "loaded": true, and it is left out of every median and
verdict (a row with fewer than 2 others is "loaded": exit 5). Progress
(done, left, an estimate) goes to stderr. Writes FILE whole: Google Benchmark JSON with one entry
per benchmark per process (repetition_index = the process, "load" = the
share others took meanwhile), the first process's context plus
machine_label (--label, default the machine's label: the GPU's model, or
its CPU kind: model, identity, ISA level, threads), and "cudabench_samples": how the samples were
taken. Prints a table: each benchmark's median, the spread of its process
samples, its throughput and its load.

One run at a time writes FILE: it holds FILE.lock (flock), and a second
exits 2 naming the first.

A run stopped by a signal, or by a process past --process-seconds, keeps
the processes that finished: FILE holds them, written whole, its
"cudabench_samples" marked "partial" (how many of how many planned, and
what stopped it), and every reader (compare, report, samples, gpu_summary,
expect_rows, --add-machine) says "partial" where it shows it. No process
finished: no FILE.

Exit codes: 0 every benchmark checked; 1 a benchmark failed its check (a
wrong result) in some process; 2 bad input (no such bench, flags it refuses,
a filter that matches nothing, a number out of its range, FILE another run
holds or that is the bench); 3 a process failed without a usable result, ran
past --process-seconds, or the disk is full (said so when its log is empty);
5 inconclusive: rows with fewer than 2 samples taken without other load (one
"Inconclusive: ..." line, above and below the table, names the busiest other
programs; the file is written); 128+N stopped by signal N (the running
bench's process group is stopped, the work folder under $TMPDIR is removed:
it is kept only when the last line names a log in it).
"""
import argparse
import os
import re
import sys

from ..base.errors import EXIT_INCONCLUSIVE, BadInput, one_line
from ..base.processes import Terminated, split_passthrough
from ..base.files import check_writable, hold_lock, is_stream, refuse_inputs_as_outputs, temporary_folder
from ..base.cli import ArgParser, bounded, output_folder, run_tool
from ..base.progress import Progress
from ..results.gbench import load_doc
from ..sampling.sampler import (DEFAULT_PROCESSES, EXIT_WRONG, MAX_COUNT, MAX_INTERFERENCE, META, MIN_TIME,
                                MOST_PROCESSES, SECONDS, WIDE, Arm, ProcessTimedOut, Sampling, add_process_seconds,
                                inconclusive_line, keep_partial, more_processes, require_space, run_schedule, stopped_by, summary,
                                write_run)

def cmd_run(a):
    arm = Arm("p", a.bench).check("--bench")
    if a.label is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", a.label):
        raise BadInput(f"--label {a.label}: expected one name of letters, digits, '.', '_' and '-'")
    s = Sampling(a.filter, a.reps, a.min_time, a.max_interference, a.extra, a.process_seconds)
    check_writable(a.out, "--out")
    refuse_inputs_as_outputs([("--out", a.out)], [a.bench])
    if not is_stream(a.out):  # one run at a time writes FILE (run-bench.sh's latest.json)
        hold_lock(a.out + ".lock", a.out)
        require_space(os.path.dirname(os.path.abspath(a.out)))
    docs, loads = {"p": []}, {"p": []}  # every process that finished, kept if the run is stopped
    with temporary_folder("cudabench-samples.") as work:  # kept when a run fails: its message names a log there
        progress = Progress("samples", a.processes, budget=a.seconds)
        try:
            _, _, meta = run_schedule({"p": arm}, ["p"] * a.processes, s, work, progress, into=(docs, loads),
                                      deadline=progress.started + a.seconds)
            with open(os.path.join(work, "p00.stderr"), errors="replace") as err:
                notes = sorted({x.strip() for x in err if x.startswith("cudabench:")})
            meta = more_processes(arm, s, work, docs["p"], loads["p"], dict(meta, tool="run-bench", bench=a.bench), a,
                                  progress)
            progress.end()
            doc = write_run(a, docs["p"], loads["p"], meta)
        except (Terminated, KeyboardInterrupt, ProcessTimedOut) as e:
            try:
                keep_partial(a, docs["p"], loads["p"], progress.total, stopped_by(e))
            except Exception as lost:  # never in place of the stop's own exit code
                print(f"samples: the finished processes could not be kept: {one_line(lost)}", file=sys.stderr)
            raise
    for n in notes:
        print(n, file=sys.stderr)
    if doc[META].get("rows_counted_once"):
        print(f"samples: {doc[META]['rows_counted_once']} row(s) that a process wrote twice (the same repetition and "
              "numbers): each counted once", file=sys.stderr)
    runs = load_doc(doc, "result").runs
    line = inconclusive_line(runs, doc[META])
    print("\n\n".join(x for x in (line, summary(doc), line if a.load_line == "both" else "") if x), flush=True)
    if meta.get("budget_ended"):
        print(f"samples: the budget (--seconds {a.seconds:g}) ended after {meta['budget_ended']['processes']} of "
              f"{meta['budget_ended']['planned']} processes: no more began", file=sys.stderr)
    noisy = meta.get("too_noisy") or {}
    if noisy:
        print(f"samples: {len(noisy)} row(s) too noisy between processes for +-{100 * WIDE:g}% within the budget "
              f"(--most {a.most}, --seconds {a.seconds:g}) stopped early: "
              + ", ".join(f"{n.split('/real_time')[0]} +-{100 * x['halfwidth']:.0f}% (about {x['needs']} processes "
                          f"would do)" for n, x in list(noisy.items())[:3]) + (", ..." if len(noisy) > 3 else ""),
              file=sys.stderr)
    wide = [n for n in meta.get("wide", []) if not runs[n].too_loaded]  # the loaded ones have their own line
    if wide:
        print(f"samples: {len(wide)} row(s) still wider than +-{100 * WIDE:g}% after {len(docs['p'])} "
              f"processes, when the budget (--most {a.most}, --seconds {a.seconds:g}) ended: "
              f"{', '.join(wide[:3])}{', ...' if len(wide) > 3 else ''}", file=sys.stderr)
    if doc[META].get("loaded"):
        print(f"samples: {len(doc[META]['loaded'])} of {len(docs['p'])} processes ran beside other load "
              f"(over {100 * a.max_interference:g}% of the CPUs) after {meta['reruns']} re-run(s): "
              "left out of every median", file=sys.stderr)
    failed = [b["run_name"] for b in doc["benchmarks"] if b.get("error_occurred")]
    if failed:
        print(f"samples: {len(set(failed))} benchmark(s) failed their check: {failed[0]}", file=sys.stderr)
        return EXIT_WRONG
    return EXIT_INCONCLUSIVE if line else 0


def main(argv=None):
    argv, extra = split_passthrough(sys.argv[1:] if argv is None else argv)
    ap = ArgParser(prog="samples", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="K processes of one bench, merged")
    p.add_argument("--bench", required=True)
    p.add_argument("--out", required=True, type=output_folder, help="the merged result (JSON)")
    p.add_argument("--processes", action=bounded(1, MAX_COUNT), default=DEFAULT_PROCESSES,
                   help=f"processes for every row (default {DEFAULT_PROCESSES})")
    p.add_argument("--most", action=bounded(1, MAX_COUNT), default=MOST_PROCESSES,
                   help=f"processes a row whose median is still wider than +-{100 * WIDE:g}%% may get "
                        f"(default {MOST_PROCESSES}; --processes or fewer: no more)")
    p.add_argument("--seconds", action=bounded(1, 86400, float), default=SECONDS,
                   help=f"no more processes begin that would end past this (default {SECONDS})")
    p.add_argument("--reps", action=bounded(1, MAX_COUNT), default=1,
                   help="repetitions per process (default 1)")
    p.add_argument("--min-time", action=MIN_TIME, help="--benchmark_min_time for each process, seconds")
    p.add_argument("--filter", default=".", help="benchmark regex")
    p.add_argument("--label", help="the machine's name in the result (default: its hardware)")
    p.add_argument("--load-line", choices=["both", "top"], default="both",
                   help="where the 'Inconclusive: ...' line goes: top and bottom of the table (default), or only at "
                        "the top (a report follows that ends with it: run-bench.sh)")
    p.add_argument("--max-interference", action=bounded(0, 1, float), default=MAX_INTERFERENCE)
    add_process_seconds(p)
    a = ap.parse_args(argv)
    a.extra = extra
    return run_tool("samples", lambda: cmd_run(a))


def entry():
    """The program, as scripts/samples.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
