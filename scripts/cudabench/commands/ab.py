"""A/B runs of two builds, with the process as the unit of sampling.

    ab.py run --a BENCH_A --b BENCH_B [options] [-- extra bench flags]
    ab.py calibrate --bench BENCH --floors-out FILE [options]
    ab.py trials N --a BENCH_A --b BENCH_B [options] --out DIR

run: a sequential gate. Processes interleaved A B B A A B B A ... (so slow
drift of a shared machine falls on both sides alike), each running the
chosen benchmarks with Google Benchmark's random interleaving and a few
repetitions; its median per benchmark is one sample. After 6 processes a
side, and each time their number has grown by a third, every row not yet
decided gets the interval of its change (Hodges-Lehmann over the process
samples, at 1 - alpha / the number of looks): above zero and the change
beyond the bar, slower; the mirror, faster; inside +-bar, same. The bar is
--threshold, or the row's noise floor (--floors) at 40 vs 40 processes when
that is higher. Decided rows leave the later processes; the run ends when
none is left, at --processes a side, or before a look that would pass
--seconds, and a row still open is "undecided", with its interval. Writes
into --out: a.json and b.json (one entry per process: Google Benchmark JSON
that compare.py and report.py read), report.md, and processes/ (each
process's own JSON and stderr, per look).

Why process medians: repetitions inside one process share its state
(memory placement, huge pages, frequency, neighbours), so they are not
independent samples, and a test over them is overconfident. Processes are.

calibrate: an A/A run (the same build on both sides) that stores, per
benchmark, the process medians relative to their median: the noise floors
(compare.py --floors) for this kind of machine.

trials: N runs in a row; a table of how many gave each verdict, per benchmark
(the false-alarm rate of A/A runs, the power against a known slowdown).

Options: --processes K per side (the most: default 40; calibrate: 20; 2 to
1000), --seconds S (the gate's budget, default 150), --filter REGEX,
--reps R repetitions per process (default 3; 1 to 1000), --min-time S
(--benchmark_min_time, up to 3600 s), --process-seconds S (a bench process
still running after this long is stopped and the run fails: default 3600),
--a-env/--b-env KEY=VALUE (repeatable), --a-wrap/--b-wrap "CMD ARGS" (a
command prefix, e.g. "scripts/cpu-quota.sh 0.9"), --labels A,B, --threshold,
--alpha, --floors FILE, --report-only, --fail-undecided (exit 5 when a row
stays undecided: "could not tell" fails the job), --confirm (run what came out slower
again, in a second interleaved run of its own, and count only a slowdown
found twice), --max-interference SHARE (a process
that ran while others took more than this share of the machine's CPU time,
steal included, runs again, up to 3 times, and at most K re-runs in all;
default 0.05), --history DIR
--rev-a SHA --rev-b SHA
(store b.json as DIR/<rev-b>.json with its verdicts, and a.json as
DIR/<rev-a>.json when that is absent).

One run at a time writes into --out: it holds --out/.lock, and a second
exits 2 naming the first.

Exit codes: 0 no regression; 1 a benchmark slower beyond the bar with
significance, missing from B's results, or a failed check in build B; 2 bad
input (a bench that is not there, options it refuses (its first process
exits 2), a filter that matches nothing, a bad floors file, a number out of
its range, an --out that cannot be written or that another run holds, an
output that is an input); 3 a process failed without a usable result
(crash, killed, a malformed JSON, exit 2 after good ones: each named with
its log; a full disk), or an internal error; 5 inconclusive (nothing
slower or wrong, but rows ran beside other load: one "Inconclusive: ..."
line names the busiest other programs; with --fail-undecided also rows it
could not tell within the budget); 130 interrupted. A failed
check in A alone is reported, not failed on: a commit that fixes its
parent must pass.
"""
import argparse
import functools
import os
import shlex
import shutil
import sys
import time

from ..sampling import sampler
from ..base.errors import BadInput, EXIT_INCONCLUSIVE, EXIT_REGRESSION
from ..base.processes import split_passthrough
from ..base.files import check_writable, hold_lock, make_folder, refuse_inputs_as_outputs, write_json, write_whole
from ..base.cli import ArgParser, bounded, ensure_venv, output_folder, run_tool
from ..base.progress import Progress
from ..base.text import table, visible
from ..results.gbench import MAX_FILTER, load, load_doc, name_prefix
from ..results import entries, merged
from ..results.stats import load_floors, median, noise_floor
from ..results.verdicts import judge_all
from ..results.sequential import GATE_PROCESSES, GATE_SECONDS, Budget, bars, headline, look, looks, rule, settle
from ..models.comparison import render, report_verdicts

EXIT_WRONG = sampler.EXIT_WRONG
CALIBRATE_PROCESSES = 20


def schedule(k):
    """The order of 2k processes: A B B A, A B B A, ... (k=3: A B B A A B)."""
    out = []
    for i in range(k):
        out += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return out


def parse_env(pairs, opt):
    env = {}
    for p in pairs or []:
        if "=" not in p or not p.split("=", 1)[0]:
            raise BadInput(f"{opt} '{p}': expected KEY=VALUE")
        k, v = p.split("=", 1)
        env[k] = v
    return env


def run_ab(args, a, b, extra, workdir, progress=True):
    """The interleaved processes (sampler.run_schedule); returns the merged (a_doc, b_doc)."""
    s = sampler.Sampling(args.filter, args.reps, args.min_time, args.max_interference, extra, args.process_seconds)
    shown = Progress("ab", 2 * args.processes, enabled=progress)
    docs, loads, meta = sampler.run_schedule({"A": a, "B": b}, schedule(args.processes), s, workdir, shown)
    shown.end()
    meta["tool"] = "ab"
    return (merged.merge(docs["A"], "A", dict(meta, bench=a.bench, env=a.env, wrap=a.wrap), loads["A"]),
            merged.merge(docs["B"], "B", dict(meta, bench=b.bench, env=b.env, wrap=b.wrap), loads["B"]))


def loaded(path, label):
    f, f.label = load(path), label
    return f


def sides(args):
    wrap_a = shlex.split(args.a_wrap or "")
    wrap_b = shlex.split(args.b_wrap or "")
    a = sampler.Arm("A", args.a, parse_env(args.a_env, "--a-env"), wrap_a).check("--a")
    b = sampler.Arm("B", args.b, parse_env(args.b_env, "--b-env"), wrap_b).check("--b")
    return a, b


def check_args(args):
    """Every input of a run, before anything is made: the sides, the labels,
    the floors file to write, no output that is an input; then the output
    folder, made and held (one run at a time writes into it)."""
    sides(args)
    labels(args)
    if getattr(args, "floors_out", None):
        check_writable(args.floors_out, "--floors-out")
    refuse_inputs_as_outputs(outputs(args), [args.a, args.b, getattr(args, "floors", None)])
    if getattr(args, "history", None):
        make_folder(args.history, "--history")
    make_folder(args.out, "--out")
    hold_lock(os.path.join(args.out, ".lock"), args.out)


def outputs(args):
    """(flag, path) of every file the run writes, replaces or removes: its
    results under --out (each run's processes/ is emptied first), the
    floors and the history file."""
    runs = {"run": [args.out, os.path.join(args.out, "confirm")], "calibrate": [args.out],
            "trials": [os.path.join(args.out, "last")]}[args.cmd]
    paths = [os.path.join(d, n) for d in runs for n in ("a.json", "b.json", "report.md")]
    paths += [os.path.join(args.out, n) for n in ("trials.md", "trials.json")]
    for d in runs:
        procs = os.path.join(d, "processes")
        paths += [os.path.join(procs, n) for n in (os.listdir(procs) if os.path.isdir(procs) else [])]
    history = getattr(args, "history", None) and os.path.join(args.history, f"{args.revs[1]['commit']}.json")
    return [("--out", p) for p in paths] + [("--floors-out", getattr(args, "floors_out", None)),
                                            ("--history", history)]


def labels(args):
    ls = (args.labels or "A,B").split(",")
    if len(ls) != 2 or not all(ls) or ls[0] == ls[1]:
        raise BadInput(f"--labels '{args.labels}': expected two different names, e.g. parent,this")
    return [visible(x) for x in ls]  # a newline or an escape in a name is shown, never printed


def one_run(args, extra, out, floors, progress=True):
    """Run, merge, compare: returns (files, names, results)."""
    a, b = sides(args)
    la, lb = labels(args)
    procdir = os.path.join(out, "processes")
    make_folder(procdir, "--out")
    for f in os.listdir(procdir):
        os.remove(os.path.join(procdir, f))
    doc_a, doc_b = run_ab(args, a, b, extra, procdir, progress)
    write_json(os.path.join(out, "a.json"), doc_a)
    write_json(os.path.join(out, "b.json"), doc_b)
    files = [loaded(os.path.join(out, "a.json"), la), loaded(os.path.join(out, "b.json"), lb)]
    names, results = judge_all(files, "time", args.threshold, args.alpha, None, floors)
    return files, names, results, doc_a, doc_b


def gate_run(args, extra, out, floors, progress=True):
    """The sequential run: interleaved processes, looked at as looks()
    says; at each look every undecided row's interval of the change (at
    1 - alpha / looks, so that looking often does not inflate false alarms)
    is held against its bar (results.verdicts.sequential_verdict); decided
    rows leave the later processes' filter. Stops when all are decided, at
    --processes per side, or when the next look would pass --seconds.
    Returns (files, names, results, doc_a, doc_b); rows still undecided are
    "undecided", with the reason."""
    a, b = sides(args)
    procdir = os.path.join(out, "processes")
    shutil.rmtree(procdir, ignore_errors=True)
    make_folder(procdir, "--out")
    plan = looks(args.processes)
    confidence = 1 - args.alpha / len(plan)
    docs, loads, orders, reruns, others = {"A": [], "B": []}, {"A": [], "B": []}, "", 0, []
    decided, started, filt, why = {}, time.monotonic(), args.filter, f"{args.processes} processes a side"
    before = 0.0
    shown = Progress("ab", 2 * plan[-1], budget=args.seconds, enabled=progress)
    for j, n in enumerate(plan):
        s = sampler.Sampling(filt, args.reps, args.min_time, args.max_interference, extra, args.process_seconds)
        work = os.path.join(procdir, f"look{j + 1}")
        make_folder(work, "--out")
        d, lo, meta = sampler.run_schedule({"A": a, "B": b}, schedule(n - len(docs["A"])), s, work, shown,
                                           deadline=started + args.seconds)
        ended = meta.get("budget_ended")
        for side in docs:
            docs[side] += d[side]
            loads[side] += lo[side]
        n = len(docs["A"])  # the processes a side that ran: fewer than planned when the budget ended
        orders, reruns, others = orders + meta["order"], reruns + meta["reruns"], others + meta["busiest"]
        meta = dict(meta, filter=args.filter, order=orders, reruns=reruns, tool="ab", looks=plan[:j + 1],
                    wall_s=round(time.monotonic() - started, 1), confidence=confidence,
                    busiest=merged.busiest(others))
        files = merged_files(args, a, b, docs, loads, meta)
        names, results = judge_all(files, "time", args.threshold, args.alpha, None, floors)
        left = look(files, results[files[1].label], bars(names, floors, args.threshold), confidence, n, decided)
        spent = time.monotonic() - started
        say_look(shown, n, spent, decided, left)
        if not left:
            break
        if ended:
            why = f"the budget of {args.seconds:g} s ended after {n} processes a side"
            break
        if sampler.stays_busy(lo["A"] + lo["B"], args.max_interference):
            why = "every process of the last look ran beside other load, after re-runs: the machine stays busy"
            break
        # The next look's time from this look's processes: decided rows have left them.
        each = (spent - before) / (n - (plan[j - 1] if j else 0))
        before = spent
        if j + 1 < len(plan) and spent + each * (plan[j + 1] - n) > args.seconds:
            why = f"the next look would pass the budget of {args.seconds:g} s"
            break
        named = "|".join(name_prefix(x) for x in left)
        filt = named if len(named) <= MAX_FILTER else args.filter
    shown.end()
    budget = Budget((time.monotonic() - started) / n, args.seconds, args.processes, confidence)
    for v in results[files[1].label]:
        settle(v, decided, n, why, args.threshold, budget, (files[0].runs.get(v.name), files[1].runs.get(v.name)))
    write_json(os.path.join(out, "a.json"), files[0].doc)
    write_json(os.path.join(out, "b.json"), files[1].doc)
    return files, names, results, files[0].doc, files[1].doc


def merged_files(args, a, b, docs, loads, meta):
    la, lb = labels(args)
    out = []
    for side, arm, label in (("A", a, la), ("B", b, lb)):
        doc = merged.merge(docs[side], side, dict(meta, bench=arm.bench, env=arm.env, wrap=arm.wrap), loads[side])
        f = load_doc(doc, side)
        f.label, f.doc = label, doc
        out.append(f)
    return out


def say_look(shown, n, spent, decided, left):
    shown.say(f"look at {n} vs {n} processes, {spent:.0f} s: {len(decided)} row(s) decided, {len(left)} open"
              + (f" ({', '.join(x.split('/real_time')[0] for x in left[:3])}{', ...' if len(left) > 3 else ''})"
                 if left else ""))


def cmd_run(args, extra):
    floors = load_floors(args.floors) if args.floors else None
    if args.history and not (args.rev_a and args.rev_b):
        raise BadInput("--history needs --rev-a and --rev-b")
    args.revs = (entries.git_info(args.rev_a, "--rev-a"), entries.git_info(args.rev_b, "--rev-b")) if args.history else None
    check_args(args)  # bad input is found before anything is made
    files, names, results, doc_a, doc_b = gate_run(args, extra, args.out, floors)
    top = headline(results[files[1].label], args.processes)
    rc = report_verdicts(files, names, results, "time", args.threshold, args.alpha,
                        os.path.join(args.out, "report.md"), "text", args.report_only, tool="ab",
                        report=lambda *a: (top + "\n\n" if top else "") + render(*a, rule=rule(args)))
    undecided = [v.name for v in results[files[1].label] if v.verdict == "undecided"]
    if args.fail_undecided and rc == 0 and undecided:
        print(f"ab: could not tell {len(undecided)} row(s) within the budget (--fail-undecided)", file=sys.stderr)
        rc = EXIT_INCONCLUSIVE
    if args.confirm and rc == EXIT_REGRESSION:
        rc = confirm(args, extra, floors, results[files[1].label])
    if args.history:
        try:
            entries.store_commit(args.history, args.revs, doc_a, doc_b, results)
        except OSError as e:
            print(f"ab: the history was not kept: {e}", file=sys.stderr)
    a, b = files[0].runs, files[1].runs
    for side, runs in (("A", a), ("B", b)):
        failed = [n for n in names if n in runs and runs[n].error]
        if failed:
            print(f"ab: {len(failed)} benchmark(s) of {side} ({files[0 if side == 'A' else 1].label}) failed "
                  f"their check: {failed[0]}: {runs[failed[0]].error}", file=sys.stderr)
    if any(n in b and b[n].error for n in names):
        return EXIT_WRONG
    return rc


def confirm(args, extra, floors, verdicts):
    """Run the benchmarks found slower again, in a second interleaved run of
    their own; a slowdown is confirmed when that run finds it too. A verdict
    the second run does not repeat becomes noisy. Returns the exit code."""
    slower = [v for v in verdicts if v.verdict == "slower"]
    if not slower or any(v.verdict == "missing" or v.new_failed for v in verdicts):
        return EXIT_REGRESSION  # missing from B, or a failed check there: nothing to run again
    print(f"ab: confirming {len(slower)} slower benchmark(s) in a second run of their own", file=sys.stderr)
    again = argparse.Namespace(**vars(args))
    named = "|".join(name_prefix(v.name) for v in slower)
    again.filter = named if len(named) <= MAX_FILTER else args.filter  # too many to name: all of them again
    out = os.path.join(args.out, "confirm")
    files, names, results, _, _ = gate_run(again, extra, out, floors)
    rc = report_verdicts(files, names, results, "time", args.threshold, args.alpha,
                        os.path.join(out, "report.md"), "text", args.report_only, tool="ab",
                        report=functools.partial(render, rule=rule(args)))
    confirmed = {v.name for v in results[files[1].label] if v.verdict == "slower"}
    for v in slower:
        if v.name not in confirmed:
            v.verdict, v.note = "noisy", "slower once, not in the confirming run"
    if not confirmed:
        print("ab: no slowdown confirmed", file=sys.stderr)
    return rc


def relative(xs):
    m = median(xs)
    return [round(x / m, 6) for x in xs]


def cmd_calibrate(args, extra):
    args.a = args.b = args.bench
    check_args(args)
    files, names, results, doc_a, doc_b = one_run(args, extra, args.out, None)
    pools = {}
    for f in files:
        for n, r in f.runs.items():
            if r.error:
                raise BadInput(f"{n} failed its check during calibration: {r.error}")
            pools.setdefault(n, []).extend(r.samples)
    ctx = doc_a.get("context", {})
    doc = {"what": "noise floors: per benchmark, the process medians of an A/A run (the same build on both "
                   "sides), relative to their median; compare.py --floors",
           "host_cpu_model": ctx.get("host_cpu_model"), "host_cores": ctx.get("host_cores"),
           "gpu_name": ctx.get("gpu_name"), "cudabench_git": ctx.get("cudabench_git"),
           "date": ctx.get("date"), "processes": 2 * args.processes, "reps_per_process": args.reps,
           "min_time": args.min_time, "filter": args.filter,
           "benchmarks": {n: {"process_medians": relative(p)} for n, p in sorted(pools.items())}}
    write_json(args.floors_out, doc)
    rows = []
    for n, p in sorted(pools.items()):
        rel = relative(p)
        spread = (max(rel) - min(rel)) * 100
        fl = noise_floor(rel, GATE_PROCESSES, GATE_PROCESSES)
        rows.append([n, len(p), f"{spread:.1f}%", f"{100 * fl:.1f}%"])
    print(table(["benchmark", "processes", "range", f"floor at {GATE_PROCESSES} vs {GATE_PROCESSES}"],
                        rows, False))
    print(f"ab: floors written to {args.floors_out}", file=sys.stderr)
    return 0


def cmd_trials(args, extra):
    floors = load_floors(args.floors) if args.floors else None
    check_args(args)
    tally, changes, walls, reruns, by_trial = {}, {}, [], [], []
    for t in range(args.n):
        files, names, results, doc_a, _ = gate_run(args, extra, os.path.join(args.out, "last"), floors, False)
        walls.append(doc_a[sampler.META]["wall_s"])
        reruns.append(doc_a[sampler.META]["reruns"])
        by_trial.append({v.name: v.verdict for v in results[files[1].label]})
        for v in results[files[1].label]:
            tally.setdefault(v.name, {})
            tally[v.name][v.verdict] = tally[v.name].get(v.verdict, 0) + 1
            changes.setdefault(v.name, []).append(v.change)
        line = ", ".join(f"{n.split('/real_time')[0]}: {v.verdict}" for n, v in
                         ((x.name, x) for x in results[files[1].label]) if v.verdict != "same")
        print(f"ab: trial {t + 1}/{args.n} ({walls[-1]:.0f} s, {doc_a[sampler.META]['processes']} vs "
              f"{doc_a[sampler.META]['processes']} processes, {reruns[-1]} run again): "
              f"{line or 'all same'}", file=sys.stderr, flush=True)
    verdicts = ["slower", "faster", "same", "undecided", "noisy", "error"]
    verdicts += [v for v in ("missing", "new") if any(v in c for c in tally.values())]
    rows = []
    for n, c in tally.items():
        ch = sorted(changes[n])
        rows.append([n] + [c.get(v, 0) for v in verdicts] +
                    [f"{100 * median(ch):+.1f}%", f"{100 * ch[0]:+.1f}% .. {100 * ch[-1]:+.1f}%"])
    head = ["benchmark"] + verdicts + ["median change", "range"]
    desc = (f"{args.n} trials of the sequential gate (at most {args.processes} vs {args.processes} processes and "
            f"{args.seconds:g} s; alpha {args.alpha:g}), {args.reps} repetitions a process; "
            f"A: {args.a} {' '.join(args.a_env or [])} {args.a_wrap or ''}; "
            f"B: {args.b} {' '.join(args.b_env or [])} {args.b_wrap or ''}; "
            f"median wall time per trial {median(walls):.0f} s; processes run again for other load: "
            f"{sum(reruns)}")
    print(desc)
    print(table(head, rows, False))
    write_whole(os.path.join(args.out, "trials.md"),
                        f"{desc}\n\n{table(head, rows, True)}\n")
    write_json(os.path.join(args.out, "trials.json"),
               {"trials": args.n, "processes": args.processes, "reps": args.reps, "filter": args.filter,
                "a": {"bench": args.a, "env": args.a_env, "wrap": args.a_wrap},
                "b": {"bench": args.b, "env": args.b_env, "wrap": args.b_wrap},
                "floors": args.floors, "threshold": args.threshold, "alpha": args.alpha,
                "wall_s": walls, "reruns": reruns, "verdicts": tally, "changes": changes, "by_trial": by_trial})
    return 0


def main(argv=None):
    argv, extra = split_passthrough(sys.argv[1:] if argv is None else argv)
    ap = ArgParser(prog="ab", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p, two_sides=True):
        if two_sides:
            p.add_argument("--a", required=True, help="the baseline's bench executable")
            p.add_argument("--b", required=True, help="the contender's bench executable")
            p.add_argument("--a-env", action="append", metavar="KEY=VALUE")
            p.add_argument("--b-env", action="append", metavar="KEY=VALUE")
            p.add_argument("--a-wrap", metavar="CMD")
            p.add_argument("--b-wrap", metavar="CMD")
            p.add_argument("--labels", help="two names, baseline first (default A,B)")
            p.add_argument("--floors", metavar="FILE", help="noise floors (ab.py calibrate)")
            p.add_argument("--report-only", action="store_true")
        most = GATE_PROCESSES if two_sides else CALIBRATE_PROCESSES
        p.add_argument("--processes", action=bounded(2, sampler.MAX_COUNT), default=most,
                       help=f"processes per side (default {most}" + (": the most the gate takes)" if two_sides else ")"))
        if two_sides:
            p.add_argument("--seconds", action=bounded(1, 86400, float), default=GATE_SECONDS,
                           help=f"the gate's time budget: no look begins that would end past it (default {GATE_SECONDS})")
        p.add_argument("--filter", default=".", help="benchmark regex")
        p.add_argument("--reps", action=bounded(1, sampler.MAX_COUNT), default=3,
                       help="repetitions per process (default 3)")
        p.add_argument("--min-time", action=sampler.MIN_TIME, help="--benchmark_min_time for each process, seconds")
        sampler.add_process_seconds(p)
        p.add_argument("--threshold", action=bounded(0, 10, float, "(]"), default=0.05)
        p.add_argument("--alpha", action=bounded(0, 1, float, "()"), default=0.05)
        p.add_argument("--out", default="build/ab", type=output_folder, help="output folder (default build/ab)")
        p.add_argument("--max-interference", action=bounded(0, 1, float), default=sampler.MAX_INTERFERENCE,
                       help=f"run a process again when others took more than this share of the CPUs "
                            f"meanwhile (default {sampler.MAX_INTERFERENCE}; 1 never)")

    p = sub.add_parser("run", help="compare two builds")
    common(p)
    p.add_argument("--history", metavar="DIR", help="store the results per commit here")
    p.add_argument("--confirm", action="store_true",
                   help="run benchmarks found slower again; only a slowdown found twice counts")
    p.add_argument("--fail-undecided", action="store_true", help="exit 5 when a row could not be told")
    p.add_argument("--rev-a")
    p.add_argument("--rev-b")
    p = sub.add_parser("calibrate", help="A/A run: store the noise floors")
    common(p, two_sides=False)
    p.add_argument("--bench", required=True)
    p.add_argument("--floors-out", required=True, metavar="FILE")
    p = sub.add_parser("trials", help="N runs; verdict counts per benchmark")
    p.add_argument("n", action=bounded(1, sampler.MAX_COUNT), metavar="N", help="trials")
    common(p)
    args = ap.parse_args(argv)

    def body():
        ensure_venv("ab")
        if args.cmd == "calibrate":
            args.a_env = args.b_env = args.a_wrap = args.b_wrap = None
            args.labels = "A,A'"
            return cmd_calibrate(args, extra)
        if args.cmd == "trials":
            return cmd_trials(args, extra)
        return cmd_run(args, extra)

    # SIGTERM and SIGHUP end the run like ^C does (cli.run_tool raises
    # them where the program is): the children's process group gets SIGTERM,
    # files already written are whole, partial ones are removed; exit 128+N.
    return run_tool("ab", body)


def entry():
    """The program, as scripts/ab.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
