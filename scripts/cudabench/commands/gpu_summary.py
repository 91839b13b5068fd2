"""summary.txt of a GPU check: each headline number beside its goal.

    gpu_summary.py RESULTS_DIR

Reads what scripts/gpu-check.sh has written so far (plan.txt, steps.txt, env.json,
ctest.log, sanitizer.txt, vector_add_headline.json and vector_add.json,
flush_*.json, mnist.json,
train_*.json) and prints, for whatever exists: the machine, the steps, the
tests and sanitizers, the goals marked with a check or a cross, the L2 flush
A/B, and the tables. Works on a partial folder (a run stopped early). Only the
standard library: the GPU machine's python3 may have nothing else.

The goals and how each is judged: models/gpu_goals.py.
"""
import glob
import os
import re
import sys
from collections import defaultdict

from ..base.errors import BadInput
from ..base.files import read_bytes, read_json
from ..base.cli import run_tool
from ..base.text import visible
from ..results.gbench import SAMPLES_META, partial_note
from ..models.gpu_goals import BIG, HEADLINE, RATIO_GOALS, TRAIN_GOALS, Goal, bandwidth_goals, median, ratio_goal, \
    train_goal, train_seconds


NAME = re.compile(r"^(?P<family>[^/]+)/(?P<impl>[^/]+)/(?P<arg>[a-z]+):(?P<value>\d+)(?:/dev:(?P<dev>\d+))?")


def load(path):
    """A JSON file's content, or None when it is missing or unreadable
    (read_json: never a FIFO, never without a size bound)."""
    try:
        return read_json(path)
    except BadInput:
        return None


# The bench step's two files: the headline rows, then the rest.
BENCH_FILES = ("vector_add_headline.json", "vector_add.json")


def bench_rows(d):
    """The bench step's rows from both its files, as one document (None when neither is there)."""
    docs = [x for x in (load(os.path.join(d, f)) for f in BENCH_FILES) if x]
    return {"benchmarks": [b for x in docs for b in x.get("benchmarks", [])]} if docs else None


def runs(doc, device=0):
    """{(family/impl, value): {time_s, bytes_per_second, items_per_second, ...}} medians over
    repetitions, for one device (names without /dev:N are the single selected device)."""
    per = defaultdict(lambda: defaultdict(list))
    for b in (doc or {}).get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred") or not isinstance(b.get("real_time"), (int, float)):
            continue
        m = NAME.match(str(b.get("run_name") or b.get("name", "")))
        if not m or (m["dev"] is not None and int(m["dev"]) != device):
            continue
        key = (f"{m['family']}/{m['impl']}", int(m["value"]))
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}.get(b.get("time_unit", "ns"), 1e-9)
        per[key]["time_s"].append(b["real_time"] * scale)
        for k in ("bytes_per_second", "items_per_second", "frac_of_peak", "frac_of_copy", "sm_clock_mhz"):
            if k in b:
                per[key][k].append(b[k])
        if "throttled:" in (b.get("label") or ""):
            per[key]["throttled"].append(1)
    return {k: {m: (median(v) if m != "throttled" else len(v)) for m, v in d.items()} for k, d in per.items()}


def goals(d, va, l2_bytes):
    """Every goal (models/gpu_goals.py), each training one on its files, an odd file costing its own line only."""
    out = bandwidth_goals(va, l2_bytes)
    for name, f, limit in TRAIN_GOALS:
        out += section_or_why(train_goal, load(os.path.join(d, f)), name, limit)
    for name, cpp, py, limit in RATIO_GOALS:
        out += section_or_why(ratio_goal, load(os.path.join(d, cpp)), load(os.path.join(d, py)), name, limit)
    return out


def flush_ab(d):
    """{(impl, n): {mode: [per-process median time]}} from flush_<mode>_<i>.json."""
    out = defaultdict(lambda: defaultdict(list))
    for path in sorted(glob.glob(os.path.join(d, "flush_*_*.json"))):
        mode = os.path.basename(path).split("_")[1]
        for (impl, n), v in runs(load(path)).items():
            out[(impl.split("/")[1], n)][mode].append(v["time_s"])
    return out


def render(d):
    env = load(os.path.join(d, "env.json")) or {}
    bench = bench_rows(d)  # read once: three parts use it
    va = runs(bench)
    sections = [(machine_lines, d, env), (steps_lines, d), (tests_lines, d), (sanitizer_lines, d),
                (error_lines, d, bench), (goal_lines, d, env, va), (flush_lines, d), (vector_add_lines, va),
                (mnist_lines, d), (train_lines, d), (ddp_lines, d)]
    return "\n".join(line for section, *args in sections for line in section_or_why(section, *args)) + "\n"


def section_or_why(section, *args):
    """A section's result, or one line saying why it is missing: a file of an
    unexpected shape costs its own section, never the whole summary."""
    try:
        return section(*args)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, IndexError, AttributeError) as e:
        return [f"({section.__name__} could not be shown: {type(e).__name__}: {e})"]


def first_gpu(env):
    gpus = env.get("gpus") or []
    return gpus[0] if gpus else {}


def machine_lines(d, env):
    """The GPU, driver and runtime; NVML's settings; the environment's warnings and errors."""
    gpus, g, drv = env.get("gpus") or [], first_gpu(env), env.get("driver", {})
    if not env:
        return [f"GPU check of {os.path.basename(os.path.normpath(d))}: no environment report (the env step did not run)"]
    lines = [f"GPU check of {os.path.basename(os.path.normpath(d))}: {g.get('name', '?')} "
             f"sm_{g.get('compute_capability', '?')}, {g.get('sms', '?')} SMs, "
             f"peak {g.get('peak_bandwidth_bytes_per_s', 0) / 1e9:.0f} GB/s, {len(gpus)} GPU(s); driver "
             f"{drv.get('nvml_driver_version') or drv.get('libcuda_file_version', '?')} "
             f"(CUDA {drv.get('cuda_version', '?')}); "
             f"runtime {env.get('runtime', {}).get('loaded_version', '?')}"]
    nv = g.get("nvml") or {}
    if nv.get("found"):
        lines.append(f"  clocks max {nv.get('max_sm_clock_mhz')}/{nv.get('max_mem_clock_mhz')} MHz, power limit "
                     f"{nv.get('power_limit_w')} W, PCIe gen {nv.get('pcie_gen_max')} x{nv.get('pcie_width_max')}, "
                     f"persistence {nv.get('persistence_mode')}, MIG {nv.get('mig_current')}")
    for v in env.get("verdicts", []):
        if v.get("level") in ("warning", "error"):
            lines.append(f"  {v['level'].upper()}: {v['message']}")
            lines.extend(f"    seen: {e}" for e in (v.get("evidence") or [])[:4])
    return lines


# A step's result in steps.txt, the run's exit code for it (gpu-check.sh),
# and how bad it is: the run's status is the worst step's. A step of the
# plan that steps.txt does not have yet was not reached (a run still going,
# or one that ended early).
STEP_EXIT = {"ok": (0, 0), "skipped": (4, 1), "not-reached": (4, 1), "loaded": (5, 2), "failed": (3, 3),
             "timed-out": (3, 3), "stopped": (3, 3), "WRONG": (1, 4)}
STATUS_TEXT = {0: "every step ran and passed", 1: "a wrong result", 3: "a step failed or timed out",
               4: "a step was skipped", 5: "a step's rows ran beside other load"}


def read_text(path):
    """A text file's content ("" when missing or unreadable), through
    read_bytes: never a FIFO, never past its size bound."""
    try:
        return read_bytes(path, "a log").decode("utf-8", "replace")
    except BadInput:
        return ""


def read_lines(path):
    return [l for l in read_text(path).splitlines() if l.strip()]


def steps_lines(d):
    """Every step of the plan (plan.txt, in order) with its result and time
    (steps.txt) and its estimate; why one was skipped; the last lines of the
    log of one that did not pass; and the run's status (the worst step's)."""
    plan, total, budget = {}, 0, None
    for row in read_lines(os.path.join(d, "plan.txt")):
        m = re.match(r"# budget (\d+) s, (\d+) s kept for the end", row)
        if m:
            budget = (int(m[1]), int(m[2]))
        elif not row.startswith("#"):
            name, est, _, _, source = (row.split(None, 4) + [""] * 5)[:5]
            plan[name] = f"[estimate {est} s: {source}]"
            total += int(est)
    done = {row.split()[0]: row for row in read_lines(os.path.join(d, "steps.txt"))}
    if not plan and not done:
        return ["\nSteps: none recorded"]
    lines, worst = ["\nSteps:"] + ([plan_line(total, *budget)] if budget else []), (0, 0)
    for name in list(plan) + [n for n in done if n not in plan]:
        row = done.get(name) or f"{name:<10s} not-reached"
        result = row.split()[1] if len(row.split()) > 1 else ""
        lines.append(f"  {row}  {plan.get(name, '')}".rstrip())
        code, rank = STEP_EXIT.get(result, (3, 3))
        worst = max(worst, (rank, code))
        if result not in ("ok", "skipped", "not-reached"):
            lines.extend("    | " + l for l in log_tail(os.path.join(d, "logs", name + ".log")))
    return [f"Status: exit {worst[1]} ({STATUS_TEXT[worst[1]]})"] + lines


def plan_line(total, budget, kept):
    """The plan's estimates against the budget: what is left over is the
    reserve for steps slower than their estimates."""
    if total + kept > budget:
        return (f"  Plan: estimates sum to {total} s, over the {budget} s budget less the {kept} s kept for the end:"
                " the last steps will be skipped")
    return (f"  Plan: estimates sum to {total} s of the {budget} s budget ({budget - total} s reserve:"
            f" {kept} s kept for the end, {budget - total - kept} s for steps slower than estimated)")


def log_tail(path, n=6):
    """The last n lines of a step's log (the MISSING lines of a preflight)."""
    text = read_text(path)[-20000:].splitlines()
    missing = [l for l in text if l.startswith("MISSING")]
    return missing or text[-n:]


def tests_lines(d):
    """CTest's count of passed, failed and skipped tests, from ctest.log."""
    log = read_text(os.path.join(d, "ctest.log"))
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", log)
    if not m:
        return []
    skipped = len(re.findall(r"^\s*\d+ - \S+ \(Skipped\)$", log, flags=re.M))
    return [f"Tests: {int(m[3]) - int(m[2])}/{m[3]} passed, {skipped} skipped"
            + "".join(f"\n  FAILED {t}" for t in re.findall(r"\d+ - (\S+) \(Failed\)", log))]


def sanitizer_lines(d):
    """Each compute-sanitizer run in sanitizer.txt ("== TOOL: LABEL (exit N)"
    and its output; a header alone is a note) and what it found."""
    san = read_text(os.path.join(d, "sanitizer.txt"))
    if not san:
        return []
    runs = [p.partition("\n") for p in re.split(r"^== ", san, flags=re.M)[1:]]
    if not runs:
        return ["Sanitizer: " + san.strip()[:200]]
    return ["Sanitizer (a tool counts only once it catches its canary, an error planted for it):"] + [
        f"  {head}: {sanitizer_finding(head, body)}" if body.strip() else f"  {head}" for head, _, body in runs]


def sanitizer_finding(head, body):
    """What one run found: its error count, or why it has none."""
    code = re.search(r" \(exit (\d+)\)$", head)
    code = int(code[1]) if code else None
    if re.search(r"^========= .*[Dd]evice not supported", body, flags=re.M):
        return "the tool does not work here (device not supported)"
    # memcheck and initcheck: "ERROR SUMMARY: N errors"; racecheck: "(N errors, M warnings)".
    counts = re.findall(r"ERROR SUMMARY: (\d+) errors?|RACECHECK SUMMARY: .*\((\d+) errors?", body)
    if not counts:
        why = re.findall(r"^========= Error: (.*)", body, flags=re.M)  # the last is the most telling
        return "no error summary, the run did not finish" + (f": {why[-1]}" if why else "")
    n = sum(int(a or b) for a, b in counts)
    if "canary" in head:
        return f"caught ({n} errors)" if n and code in (None, 86) else f"missed ({n} errors): the tool proves nothing here"
    return f"{n} errors" + (" (the program itself failed)" if code not in (None, 0, 86) else "")


def error_lines(d, bench):
    """The bench step's files kept from a stopped run (partial), the
    benchmarks that failed, any faster than its peak, and how many ran
    while the GPU throttled (bench: the bench step's rows)."""
    errors, throttled = [], []
    for f in BENCH_FILES + ("mnist.json",):
        partial = ((load(os.path.join(d, f)) or {}).get(SAMPLES_META) or {}).get("partial")
        if isinstance(partial, dict):
            errors.append(f"PARTIAL {visible(partial_note(f, partial))}: its rows are shown below")
    for doc in (bench, load(os.path.join(d, "mnist.json"))):
        for b in (doc or {}).get("benchmarks", []):
            if b.get("error_occurred"):
                errors.append(f"ERROR {b['name']}: {b.get('error_message')}")
            frac = b.get("frac_of_peak")
            if isinstance(frac, (int, float)) and frac > 1 and b.get("run_type") != "aggregate":
                errors.append(f"WARNING {b['name']}: {frac:.2f} of its peak: the peak is wrong (the context's "
                              "gpu_pcie_peak and gpu_peak_bandwidth_source say how each was obtained)")
            if "throttled:" in (b.get("label") or ""):
                throttled.append(b["name"])
    if throttled:
        errors.append(f"Throttled: {len(set(throttled))} benchmark(s), e.g. {sorted(set(throttled))[0]}")
    return errors


def goal_lines(d, env, va):
    name = first_gpu(env).get("name", "H200")
    return ([f"\nGoals{'' if 'H200' in name else ' (set for an H200; this is not one)'}:"]
            + ["  " + (x.line() if isinstance(x, Goal) else x)
               for x in goals(d, va, first_gpu(env).get("l2_bytes") or 0)])


def flush_lines(d):
    """The L2 flush A/B: the timed kernel's time after each flush, and what the gap means."""
    ab = flush_ab(d)
    if not ab:
        return []
    lines = ["\nL2 flush A/B (time of the timed kernel, median of each process's median):",
             f"  {'benchmark':24s} {'read':>10s} {'memset':>10s} {'memset/read':>12s}"]
    for (impl, n), modes in sorted(ab.items()):
        r, m = median(modes.get("read", [])), median(modes.get("memset", []))
        if r and m:
            lines.append(f"  {impl + ' ' + str(n):24s} {r * 1e6:8.2f}us {m * 1e6:8.2f}us {m / r:12.3f}")
    lines.append("  One launch after a flush: read leaves the kernel's dirty output to be written back after the\n"
                 "  stop event (too low), memset makes the kernel write back the flush's (too high). At >= 8x L2\n"
                 "  (2^27) they should agree within a few %; smaller sizes are timed back to back, rotating buffers.")
    return lines


def vector_add_lines(va):
    """The VectorAdd and Transfer rows at the headline sizes (va: runs() of the bench step's rows)."""
    if not va:
        return []
    lines = [f"\n{'benchmark':42s} {'time':>10s} {'GB/s':>9s} {'of peak':>8s} {'of copy':>8s} {'SM MHz':>7s}"
             "   (GB = 1e9 bytes)"]
    pct = lambda m, k: f"{100 * m[k]:.0f}%" if k in m else "-"
    for (name, n), m in sorted(va.items()):
        if n in (HEADLINE, BIG // 2, BIG, 40000000, 536870912):
            sm = f"{m['sm_clock_mhz']:.0f}" if "sm_clock_mhz" in m else "-"
            lines.append(f"{name + '/' + str(n):42s} {m['time_s'] * 1e6:8.1f}us {m.get('bytes_per_second', 0) / 1e9:9.1f} "
                         f"{pct(m, 'frac_of_peak'):>8s} {pct(m, 'frac_of_copy'):>8s} {sm:>7s}")
    turnaround, gap = (va.get(("Launch/empty_kernel", k), {}).get("time_s") for k in (1, 64))
    if turnaround or gap:
        lines.append("launch overhead (empty kernels): " + ", ".join(
            f"{t * 1e6:.2f} us {what}" for t, what in ((turnaround, "one launch's turnaround"),
                                                       (gap, "from one launch to the next, back to back")) if t))
    return lines


def mnist_lines(d):
    mn = runs(load(os.path.join(d, "mnist.json")))
    if not mn:
        return []
    return [f"\n{'benchmark':42s} {'images/s':>10s} {'step':>10s}"] + [
        f"{name + '/' + str(n):42s} {m.get('items_per_second', 0):10.0f} {m['time_s'] * 1e3:8.3f}ms"
        for (name, n), m in sorted(mn.items())]


def train_lines(d):
    lines = []
    for f in ("train_cuda", "train_cuda_graph", "train_py_cuda", "train_py_compiled"):
        t = load(os.path.join(d, f + ".json"))
        if t:
            ep = t["per_epoch"]
            ips = median([e["images_per_second"] for e in ep])
            lines.append(f"{f:18s} {len(ep)} epochs {train_seconds(t):7.2f} s train time, median {ips:8.0f} img/s, "
                         f"final Fashion-MNIST test accuracy {100 * t['final_test_accuracy']:.2f}%")
    return lines


def ddp_lines(d):
    """Data-parallel train over NCCL at one rank: the throughput of a run
    without --check-sync; the replica check on two ranks, as a check; then
    the scaling series."""
    out = []
    t = load(os.path.join(d, "train_ddp_nccl1.json"))
    if t and "distributed" in t:
        x, ar = t["distributed"], t["distributed"]["allreduce"]
        per_step = ("n/a (one rank)" if x.get("world_size") == 1 or ar.get("seconds_per_step") is None
                    else f"{ar['seconds_per_step'] * 1e3:.3f} ms/step")
        out.append(f"\ndata-parallel, {x['backend']} x {x['world_size']}: {t['per_epoch'][-1]['images_per_second']:.0f} "
                   f"img/s, all-reduce {per_step} ({ar['bytes'] / 1e6:.2f} MB in {ar['buckets']} buckets), "
                   f"final Fashion-MNIST test accuracy {100 * t['final_test_accuracy']:.2f}%")
    c = load(os.path.join(d, "train_ddp_check.json"))
    if c and "distributed" in c:
        x = c["distributed"]
        out.append(f"  replica check (--check-sync, {x['world_size']} ranks over {x['backend']}, its speed not a "
                   f"measurement): replicas {'identical' if x.get('replicas_identical') else 'DIFFER'} after "
                   f"{x['replicas_checked_after_steps']} checked steps")
    scaling = read_text(os.path.join(d, "ddp-scaling", "scaling.md"))
    if scaling:
        out.append("\n" + scaling.rstrip())
    return out


def main(argv):
    if argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: gpu_summary.py RESULTS_DIR", file=sys.stderr)
        return 2
    sys.stdout.write(render(argv[1]))
    return 0


def entry():
    """The program, as scripts/gpu_summary.py runs it: its exit code."""
    return run_tool("gpu_summary", lambda: main(sys.argv))


if __name__ == "__main__":
    sys.exit(entry())
