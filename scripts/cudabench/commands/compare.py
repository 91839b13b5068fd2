"""Compare Google Benchmark JSON files: verdicts, tables, and an exit code.

    compare.py BASELINE.json CONTENDER.json [MORE.json ...] [options]

The first file is the baseline. Benchmarks are paired by name (the run name,
without aggregate suffixes); every repetition is a sample. For each pair:

  relative change of the medians  d = (median_new - median_base) / median_base
  (for time; for --metric bytes_per_second or items_per_second, higher is
  better and d is reported so that positive still means slower), and a
  two-sided Mann-Whitney U test on the samples (scipy.stats.mannwhitneyu).

  same     |d| <= the bar: the threshold, or with --floors the measured
           noise floor when that is higher
  faster / slower   |d| > the bar and p < alpha
  noisy    |d| > the bar but p >= alpha, or too few repetitions to test
           (a single sample, or fewer than the test needs to reach alpha),
           or the GPU throttled during a sample of either file (cudabench's
           label "throttled: <reasons>"): a slowdown then says nothing
           about the code
  error    a run failed (error_occurred) in either file
  skipped  skipped (Google Benchmark 1.8+'s "skipped" with its
           "skip_message", shown in the row) in the baseline, or in both:
           nothing to compare, never a failure
  missing  in the baseline but not in a later file (it stopped running), or
           measured in the baseline and skipped in a later one: fails the
           gate like slower
  new      in a later file but not in the baseline: listed, never a failure

A verdict (slower, faster, same, noisy) rests only on samples that measure how
processes differ: files of many processes (scripts/samples.py's, ab.py's, a
reference). Where a file's samples are repetitions inside one process
(Google Benchmark's own file), which share its memory placement, clocks and
neighbours, those rows are "undecided" with their ratio, and one Note says
why and which command takes samples from processes.

With --filter, only the benchmarks whose name matches count (the others are
not read at all).

The report starts with what differs between the two runs: the recorded
context (toolkit, driver, GPU and its settings, host) and the GPU clocks
measured during the runs (the medians of cudabench's sm_clock_mhz and
mem_clock_mhz counters), since a different clock explains a difference.

--floors FILE takes the noise floors an A/A run measured (scripts/ab.py
calibrate): for each benchmark, the process medians of identical builds.
The floor for n_base vs n_new samples is the change that comparisons of
n_base vs n_new of those medians exceed only 0.1% of the time (resampled); it is
shown beside each verdict. Use it with files whose samples are one per
process (what scripts/ab.py writes); repetitions within one process are not
independent samples.

Exit codes: 0 no regression; 1 some benchmark is slower beyond the bar
with significance, missing from a later file, or failed its check there
(the CI gate; --report-only always exits 0 here); 2 bad input
(unreadable JSON, not Google Benchmark output, no benchmarks in common,
mismatched or unknown units, a bad floors file, an output that is one of
the inputs or the tool, even through a link, one repetition written twice
with different numbers (written twice with the same numbers, it is one
sample, and a Note says so), a json_schema_version other than 1, an
option the mode chosen does not read); 3 the tool could not run
(scipy missing, or an internal error), never read as a regression; 5
inconclusive: nothing slower or wrong, but rows ran beside other load and
could not be told (also with --report-only). Run with a
python that lacks scipy, it re-runs itself with the project's venv
(~/.cache/cudabench/venv, made by scripts/setup.sh). Works on any Google
Benchmark program's JSON.

Why Python: scipy's Mann-Whitney U and matplotlib (scripts/report.py) are the
well-kept libraries for the statistics and the plots; the C++ side needs none.
"""
import argparse
import os
import sys

from ..base.errors import EXIT_INCONCLUSIVE, EXIT_OK, BadInput
from ..base.files import check_writable, make_folder, refuse_inputs_as_outputs
from ..base.cli import ArgParser, bounded, ensure_venv, output_folder, run_tool
from ..results.gbench import compile_filter, load
from ..results.stats import load_floors
from ..results.context import hardware_of, machine_of, set_labels, with_baseline_first
from ..results.verdicts import without_process_samples, judge_all
from ..models.references import FAR, REFERENCES, add_machine, kept_by, find_reference, load_machines, recorded_as
from ..models import kind
from ..models import machines
from ..models import report as plots
from ..models.comparison import load_line, report_verdicts

# The options each mode reads; another one given would be ignored without a
# word (--filter with --add-machine kept every row), so it is refused.
MODES = {"add_machine": ("--add-machine", {"files", "add_machine", "machine", "reference", "outlier_ok"}),
         "reference": ("--reference", {"files", "reference", "if_any", "metric", "threshold", "alpha", "filter",
                                        "markdown", "format", "report_only", "load_line"})}
ONLY_WITH = {"machine": "add_machine", "outlier_ok": "add_machine", "if_any": "reference"}


def refuse_ignored(a, ap):
    """BadInput naming an option that the mode chosen would not read."""
    for dest, (flag, reads) in MODES.items():
        if getattr(a, dest) not in (None, False):
            given = [k for k, v in vars(a).items() if k not in reads and v != ap.get_default(k)]
            if given:
                raise BadInput(f"--{given[0].replace('_', '-')}: not with {flag}, which does not read it")
            break
    for dest, needs in ONLY_WITH.items():
        if getattr(a, dest) not in (None, False) and getattr(a, needs) in (None, False):
            raise BadInput(f"--{dest.replace('_', '-')}: only with {MODES[needs][0]}")


def compare_files(a, files):
    """Verdicts, the report (for machines when the files name different
    machines or one is a reference), the plots, the exit code."""
    floors = load_floors(a.floors) if a.floors else None
    names, results = judge_all(files, a.metric, a.threshold, a.alpha, a.filter, floors)
    without_process_samples(files, results)
    report = None
    if len({(machine_of(f), hardware_of(f.context)) for f in files}) > 1:  # two machines, or two kinds
        machines.relabel(results, files)
        machines.clear_of_the_bar(results, files, a.metric, a.threshold)
        report = machines.render
    if a.plot:
        plots.write_report([f.path for f in files], a.plot, [f.label for f in files])
    return report_verdicts(files, names, results, a.metric, a.threshold, a.alpha, a.markdown, a.format, a.report_only,
                           report=report, load_line_at=a.load_line)


def against_reference(a, wanted):
    """The one file among the recorded machines of its hardware (models/kind.py)."""
    if len(a.files) != 1:
        raise BadInput("--reference takes one result file (the run to hold against its hardware's reference)")
    f = load(a.files[0], a.metric, wanted)
    path = find_reference(f, a.reference or None)
    hw = hardware_of(f.context) or "unknown hardware"
    if not path:
        if a.if_any:  # nothing to hold it against; after run-bench's table, its load line still ends the run
            line = load_line([f], {}) if a.load_line == "end" else ""
            if line:
                print(line)
            return EXIT_INCONCLUSIVE if line else EXIT_OK
        raise BadInput(f"--reference: no reference for {hw} in {a.reference or REFERENCES} "
                       f"(make one: compare.py --add-machine RUN.json; docs/comparing-machines.md)")
    check_outputs(a, [path])
    whole, recorded = load_machines(path, a.metric, wanted)
    whole.label, f.label = f"reference {hw}", machine_of(f) or "this machine"
    if f.label in (whole.label, hw):
        f.label = "this machine"
    names, results = kind.judge_kind(whole, recorded, f, a.metric, a.threshold)
    without_process_samples([f], results)  # the recorded machines' are processes: this run's may not be
    machines.relabel(results, [whole, f])
    kept = recorded_as(a.files[0], os.path.dirname(path))
    report = lambda *args: kind.render(recorded, hw, f, results, a.metric, args[-1], a.files[0], kept)
    return report_verdicts([whole, f], names, results, a.metric, a.threshold, a.alpha, a.markdown, a.format,
                           a.report_only, report=report, load_line_at=a.load_line)


def check_outputs(a, inputs):
    """No output (--markdown, --plot's files) is one of the inputs or lands
    in a references' folder (the default's, or --reference DIR's)."""
    outputs = [("--markdown", a.markdown)] + [("--plot", os.path.join(a.plot, n)) for n in plots.OUTPUTS if a.plot]
    refuse_inputs_as_outputs(outputs, inputs)
    for flag, out in outputs:
        keeper = kept_by(out, (REFERENCES, a.reference or REFERENCES)) if out else ""
        if keeper:
            raise BadInput(f"{flag} {out}: inside the reference {keeper}, which keeps its machines' runs: "
                           f"write it elsewhere")


def main(argv=None):
    ap = ArgParser(prog="compare", description=__doc__.split("\n\n")[0],
                   formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("files", nargs="+", help="Google Benchmark JSON files; the first is the baseline")
    ap.add_argument("--metric", default="time", choices=["time", "bytes_per_second", "items_per_second"])
    ap.add_argument("--threshold", action=bounded(0, 10, float, "(]"), default=0.05,
                    help="relative change that counts (default 0.05)")
    ap.add_argument("--alpha", action=bounded(0, 1, float, "()"), default=0.05,
                    help="significance level (default 0.05)")
    ap.add_argument("--filter", help="only benchmarks whose name matches this regex")
    ap.add_argument("--labels", help="comma-separated column labels, one per file")
    ap.add_argument("--floors", metavar="FILE", help="noise floors from an A/A run (scripts/ab.py calibrate)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown (e.g. $GITHUB_STEP_SUMMARY)")
    ap.add_argument("--format", choices=["text", "markdown"], default="text", help="what to print")
    ap.add_argument("--report-only", action="store_true", help="never exit 1 for a regression")
    ap.add_argument("--baseline", metavar="LABEL", help="the column the others are held against (default the first)")
    ap.add_argument("--reference", nargs="?", const="", metavar="DIR",
                    help="hold each file against the reference for its hardware (in DIR, default results/reference)")
    ap.add_argument("--if-any", action="store_true", help="with --reference: no reference for this hardware is not an error")
    ap.add_argument("--add-machine", action="store_true",
                    help="keep the files (runs of one machine) as a machine of the reference for their hardware "
                         "(in --reference DIR), made when there is none")
    ap.add_argument("--machine", metavar="NAME", help="with --add-machine: the machine's name (default m<N>-<date>)")
    ap.add_argument("--load-line", choices=["both", "end"], default="both",
                    help="where the 'Inconclusive: ...' line goes: top and bottom (default), or only at the end "
                         "(after a run that printed its own at the top: run-bench.sh)")
    ap.add_argument("--outlier-ok", action="store_true",
                    help=f"with --add-machine: add a machine whose rows lie far outside the recorded ones (over "
                         f"{FAR:g}x slower or faster); the reference marks it")
    ap.add_argument("--plot", metavar="DIR", type=output_folder, help="also plots and report.md through report.py")
    a = ap.parse_args(argv)

    def body():
        ensure_venv()
        refuse_ignored(a, ap)
        if a.add_machine:
            path, name, notes = add_machine(a.files, a.machine, a.reference or None, a.outlier_ok)
            for n in notes:
                print(f"compare: {n}", file=sys.stderr)
            print(f"compare: machine {name} added: {path} (its runs under {os.path.dirname(path)}/machines/{name})")
            return EXIT_OK
        if len(a.files) < 2 and a.reference is None:
            raise BadInput("need at least two files (baseline first)")
        wanted = compile_filter(a.filter) if a.filter is not None else None
        check_outputs(a, a.files + [a.floors])
        if a.markdown:
            check_writable(a.markdown, "--markdown")
        if a.plot:
            make_folder(a.plot, "--plot")
        if a.reference is not None:
            return against_reference(a, wanted)
        files = [load(p, a.metric, wanted) for p in a.files]
        set_labels(files, a.labels.split(",") if a.labels is not None else None)
        files = with_baseline_first(files, a.baseline)
        return compare_files(a, files)

    return run_tool("compare", body)


def entry():
    """The program, as scripts/compare.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
