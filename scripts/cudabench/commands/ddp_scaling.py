"""Data-parallel scaling of train: images/s, speedup and scaling efficiency
for 1, 2, 4 ... ranks, with the all-reduce time per step and its bus
bandwidth.

    ddp_scaling.py [--ranks 1,2,4] [--device cpu|cuda] [--launcher local|srun]
                   [--repetitions R] [--out DIR] [-- extra train flags]

Each world size runs train as that many ranks: plain local processes (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, as torchrun sets them; on
GPUs rank r takes GPU r), or `srun -n N` inside a Slurm allocation. The
per-rank batch is fixed (--batch-size, default 64), so the global batch grows
with the ranks (weak scaling), and the learning rate with it (train's linear
rule). Runs are interleaved (1 2 4 1 2 4 ...), R of each, and every number
is the median over them, with the range.

  images/s     the last epoch's, over all ranks (so --epochs 2, the default,
               leaves the first epoch's warm-up out)
  speedup      images/s(n) / images/s(n0) x n0, n0 the smallest world size
               (normally 1: then images/s(n) / images/s(1))
  efficiency   speedup / n
  all-reduce   one step's gradients (the Reducer's buckets), timed apart from
               training after it: seconds per step, algbw = bytes / seconds,
               busbw = algbw x 2(n-1)/n (the nccl-tests bus bandwidth); n/a at n=1,
               where nothing is reduced (null in scaling.json)

On CPUs every rank gets --threads-per-rank threads (default: the CPUs /
the largest world size), the same at every size, so that more ranks means
more cores, not fewer threads each.

Writes into --out (default results/ddp-scaling): scaling.json, scaling.md,
and runs/ (each run's rank-0 JSON and every rank's stderr).
Exit codes: 0 done; 1 a run gave a wrong result (diverged, replicas
differ); 2 bad usage, ours or train's (a rank that exits 2 stops the run
at once, its line passed on, and what this run wrote into --out removed);
3 a run failed; 128+N on signal N.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

from ..base.errors import BadInput, EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, ToolError, one_line
from ..base.processes import ends_with_us, split_passthrough, stop_groups
from ..base.files import check_writable, read_json, refuse_inputs_as_outputs, write_whole
from ..base.cli import ArgParser, bounded, output_folder, run_tool
from ..results.stats import median
from ..base.paths import ROOT


LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
GRACE = 5  # seconds a stopped rank has between SIGTERM and SIGKILL, and after SIGKILL


class WrongResult(Exception):
    pass


def parse_ranks(text):
    try:
        ranks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BadInput(f"--ranks {text}: expected world sizes such as 1,2,4")
    if not ranks or any(n < 1 or n > 4096 for n in ranks) or len(set(ranks)) != len(ranks):
        raise BadInput(f"--ranks {text}: expected distinct world sizes from 1 to 4096, such as 1,2,4")
    return sorted(ranks)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(xs):
    """Median, range and samples; None where nothing was measured (one rank reduces nothing)."""
    if any(x is None for x in xs):
        return None
    xs = sorted(xs)
    return {"median": median(xs), "min": xs[0], "max": xs[-1], "samples": xs}


def per_step(seconds):
    return "n/a (one rank)" if seconds is None else f"{seconds * 1e3:.3f} ms/step"


def launch(a, n, args, errs, procs):
    """Start one run's ranks into `procs`, each in its own process group:
    plain processes with torchrun's variables, or one srun."""
    base = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith("TORCHELASTIC_")}
    if a.launcher == "srun":
        with open(errs[0], "w") as err:
            procs.append(subprocess.Popen(["srun", "-n", str(n), "--kill-on-bad-exit=1", a.train, *args], env=base,
                                          stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                          preexec_fn=ends_with_us()))
        return
    port = free_port()
    for r in range(n):
        env = dict(base, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        with open(errs[r], "w") as err:
            procs.append(subprocess.Popen([a.train, *args], env=env, stdout=subprocess.DEVNULL, stderr=err,
                                          start_new_session=True, preexec_fn=ends_with_us()))


def wait_all(procs, deadline):
    """Wait for every rank; a rank that exits 2 (its arguments are bad)
    ends the wait at once, as it would leave the rest waiting for it.
    False when the deadline passes first."""
    while True:
        codes = [p.poll() for p in procs]
        if None not in codes or EXIT_BAD_INPUT in codes:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def run_once(a, n, rep, train_args, runs_dir):
    """One run at world size n: the rank-0 JSON, or an exception: BadInput
    when a rank exits 2 (train refused what it was given), WrongResult
    for exit 1, ToolError otherwise."""
    tag = f"n{n}-r{rep + 1}"
    out = os.path.join(runs_dir, f"{tag}.json")
    errs = [os.path.join(runs_dir, f"{tag}.rank{r}.err") for r in range(n)]
    procs = []
    try:
        launch(a, n, [*train_args, "--json", out], errs, procs)
        if not wait_all(procs, time.monotonic() + a.run_timeout):
            raise ToolError(f"{tag}: the run took longer than --run-timeout {a.run_timeout:g} s")
    finally:
        stop_groups(procs, GRACE)
    codes = [p.returncode for p in procs]
    if any(c != 0 for c in codes):
        bad = EXIT_BAD_INPUT
        first = codes.index(bad) if bad in codes else next(i for i, c in enumerate(codes) if c != 0)
        with open(errs[min(first, len(errs) - 1)], errors="replace") as f:
            why = one_line(f.read()) or f"exit {codes[first]}"
        raise (BadInput if bad in codes else WrongResult if 1 in codes else ToolError)(f"{tag}: {why}")
    try:
        return read_json(out)
    except BadInput as e:  # train said 0 but left no JSON: its failure, not the user's input
        raise ToolError(f"{tag}: {e}")


def plan(a, extra):
    """(world sizes, train's arguments, threads per rank), from checked arguments."""
    ranks = parse_ranks(a.ranks)
    local_max = 4 * (os.cpu_count() or 1)  # as bench bounds OMP_NUM_THREADS: more would only thrash
    if a.launcher == "local" and ranks[-1] > local_max:
        raise BadInput(f"--ranks {a.ranks}: at most {local_max} local ranks on {os.cpu_count() or 1} CPUs "
                       "(4 per CPU; --launcher srun spreads them over nodes)")
    if not os.access(a.train, os.X_OK):
        raise BadInput(f"--train {a.train}: not an executable (build it: scripts/run-bench.sh, or cmake)")
    threads = a.threads_per_rank or max(1, (os.cpu_count() or 1) // ranks[-1])
    train_args = ["--device", a.device, "--epochs", str(a.epochs), "--batch-size", str(a.batch_size), "--quiet",
                  "--threads", str(threads)]
    if a.backend:
        train_args += ["--backend", a.backend]
    if a.limit:
        train_args += ["--limit", str(a.limit)]
    return ranks, train_args + extra, threads


def first_missing(path):
    """The topmost folder of `path` that does not exist yet (what makedirs creates), or None."""
    path, top = os.path.abspath(path), None
    while not os.path.exists(path):
        top, path = path, os.path.dirname(path)
    return top


def discard(made, runs_dir, kept):
    """Leave nothing half: remove the folder this invocation made, else the
    files it added to an existing runs/ (those in `kept` were there before)."""
    if made:
        shutil.rmtree(made, ignore_errors=True)
        return
    try:
        for name in set(os.listdir(runs_dir)) - kept:
            os.remove(os.path.join(runs_dir, name))
    except OSError:
        pass


def measure(a, ranks, train_args, runs_dir):
    """{world size: each run's rank-0 JSON}, runs interleaved: 1 2 4 1 2 4 ..."""
    docs = {n: [] for n in ranks}
    for rep in range(a.repetitions):
        for n in ranks:
            doc = run_once(a, n, rep, train_args, runs_dir)
            docs[n].append(doc)
            last = doc["per_epoch"][-1]
            print(f"ddp_scaling: {n} rank(s), run {rep + 1}/{a.repetitions}: {last['images_per_second']:.0f} "
                  f"images/s, all-reduce {per_step(doc['distributed']['allreduce']['seconds_per_step'])}",
                  file=sys.stderr)
    return docs


def scale(a, extra):
    ranks, train_args, threads = plan(a, extra)
    runs_dir = os.path.join(a.out, "runs")
    made, kept = first_missing(runs_dir), set()
    try:  # bad usage, found here or by train, leaves no folder or file behind
        try:
            os.makedirs(runs_dir, exist_ok=True)
            kept = set(os.listdir(runs_dir))
        except OSError as e:
            raise BadInput(f"--out {a.out}: cannot create: {e.strerror or e}")
        check_writable(os.path.join(a.out, "scaling.json"), "--out")
        refuse_inputs_as_outputs([("--out", os.path.join(a.out, n)) for n in ("scaling.json", "scaling.md")],
                                         [a.train])
        docs = measure(a, ranks, train_args, runs_dir)
    except BadInput:
        discard(made, runs_dir, kept)
        raise

    base_n = ranks[0]
    ips = {n: summary([d["per_epoch"][-1]["images_per_second"] for d in docs[n]]) for n in ranks}
    series = []
    for n in ranks:
        ar = [d["distributed"]["allreduce"] for d in docs[n]]
        speedup = ips[n]["median"] / ips[base_n]["median"] * base_n
        series.append({
            "world_size": n,
            "global_batch": a.batch_size * n,
            "images_per_second": ips[n],
            "speedup": speedup,
            "efficiency": speedup / n,
            "allreduce_bytes": ar[0]["bytes"],
            "allreduce_buckets": ar[0]["buckets"],
            "allreduce_seconds_per_step": summary([x["seconds_per_step"] for x in ar]),
            "algbw_bytes_per_second": summary([x["algbw_bytes_per_second"] for x in ar]),
            "busbw_bytes_per_second": summary([x["busbw_bytes_per_second"] for x in ar]),
            "test_accuracy": summary([d["final_test_accuracy"] for d in docs[n]]),
        })
    first = docs[ranks[0]][0]
    result = {
        "tool": "ddp_scaling",
        "device": a.device,
        "backend": first["distributed"]["backend"],
        "launcher": a.launcher,
        "batch_per_rank": a.batch_size,
        "epochs": a.epochs,
        "train_images": first["train_images"],
        "threads_per_rank": threads,
        "repetitions": a.repetitions,
        "baseline_world_size": base_n,
        "series": series,
        "environment": first.get("environment", {}),
    }
    md = render(result)
    write_whole(os.path.join(a.out, "scaling.json"), json.dumps(result, indent=2) + "\n")
    write_whole(os.path.join(a.out, "scaling.md"), md)
    print(md, end="")
    return EXIT_OK


def render(r):
    out = [f"# Data-parallel scaling: {r['device']}, {r['backend']}, {r['launcher']}", "",
           f"Per-rank batch {r['batch_per_rank']} (the global batch grows with the ranks), {r['epochs']} epoch(s) of "
           f"{r['train_images']} images, images/s of the last epoch; {r['threads_per_rank']} CPU thread(s) per rank; "
           f"median of {r['repetitions']} interleaved run(s) [min-max]. Efficiency = speedup / ranks, against "
           f"{r['baseline_world_size']} rank(s). busbw = algbw x 2(n-1)/n.", "",
           "| ranks | images/s | speedup | efficiency | all-reduce ms/step | algbw GB/s | busbw GB/s | test acc |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in r["series"]:
        ips = s["images_per_second"]
        # One rank reduces nothing: its all-reduce columns are n/a (None).
        cell = lambda k, scale: f"{s[k]['median'] * scale:.3f}" if s[k] else "n/a (one rank)"
        out.append(f"| {s['world_size']} | {ips['median']:.0f} [{ips['min']:.0f}-{ips['max']:.0f}] | "
                   f"{s['speedup']:.2f} | {100 * s['efficiency']:.0f}% | {cell('allreduce_seconds_per_step', 1e3)} | "
                   f"{cell('algbw_bytes_per_second', 1e-9)} | {cell('busbw_bytes_per_second', 1e-9)} | "
                   f"{100 * s['test_accuracy']['median']:.2f}% |")
    return "\n".join(out) + "\n"


def main(argv=None):
    argv, extra = split_passthrough(sys.argv[1:] if argv is None else argv)
    ap = ArgParser(prog="ddp_scaling", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ranks", default="1,2,4", help="world sizes, comma-separated (default 1,2,4)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--backend", choices=["gloo", "nccl"], help="default: NCCL on cuda, Gloo on cpu")
    ap.add_argument("--launcher", default="local", choices=["local", "srun"])
    ap.add_argument("--repetitions", action=bounded(1, 1000), default=3,
                    help="runs per world size, interleaved (default 3)")
    ap.add_argument("--epochs", action=bounded(1, 10000), default=2,
                    help="epochs per run; the last one is measured (default 2)")
    ap.add_argument("--batch-size", action=bounded(1, 65536), default=64, help="per-rank batch (default 64)")
    ap.add_argument("--limit", action=bounded(1, 1 << 30), help="train on the first N images only")
    ap.add_argument("--threads-per-rank", action=bounded(0, 4096), default=0,
                    help="CPU threads per rank (default 0: CPUs / most ranks)")
    ap.add_argument("--train", default=os.path.join(os.environ.get("CUDABENCH_BUILD_DIR", os.path.join(ROOT, "build")),
                                                    "train"), help="the train executable (default build/train)")
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "ddp-scaling"), type=output_folder, help="output folder")
    ap.add_argument("--run-timeout", action=bounded(0, 7 * 86400, float, "(]"), default=3600,
                    help="seconds one run may take (default 3600)")
    a = ap.parse_args(argv)

    def body():
        try:
            return scale(a, extra)
        except WrongResult as e:
            print(f"ddp_scaling: wrong result: {one_line(e)}", file=sys.stderr)
            return EXIT_REGRESSION

    return run_tool("ddp_scaling", body)


def entry():
    """The program, as scripts/ddp_scaling.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
