"""What a GPU check's numbers are held to (gpu_summary.py marks each): the
goals on an H200, from published numbers and this workplace's own reading
of a device copy, about 4.3 TB/s. Each DRAM-bound goal is judged at every
DRAM-bound size the headline holds (a working set of 8x L2 and up: 2^26
and 2^27), by the worst of them:

  best raw VectorAdd kernel                  >= 4.3 TB/s
  ... against the best device copy           >= 0.95 of its bandwidth (frac_of_copy: the faster of
                                             the vectorised copy kernel and cudaMemcpyAsync)
  the vectorised copy kernel at 2^27         >= 4.0 TB/s
  best raw kernel vs cublasSgeam, Thrust and torch add
                                             at least as fast (ratio >= 0.99: 1% noise)
  VectorAdd at 1e7 elements, best raw kernel <= 30 us
  pinned host-to-device copy of 40 MB        >= 50 GB/s
  10 Fashion-MNIST epochs at batch 64        <= 6 s eager, <= 2 s with the CUDA graph
  build/train against the same loop in Python (median epoch past the first, one run):
                                             eager >= 1.3x Python eager; CUDA graph >= 1.0x Python
                                             compiled (torch.compile, reduce-overhead)

Only the standard library: the GPU machine's python3 may have nothing else."""
import re

RAW = re.compile(r"^VectorAdd/cuda_v\d+$")
LIBRARIES = ["cublas_geam", "thrust", "torch_cuda"]
BIG = 134217728
HEADLINE = 10000000
ADD_BYTES = 12  # per element: a and b read, c written
OK, NO = "\u2714", "\u2718"
# The training goals: (what, build/train's file, the limit in seconds for 10 epochs).
TRAIN_GOALS = (("10 Fashion-MNIST epochs, batch 64, eager", "train_cuda.json", 6.0),
               ("10 Fashion-MNIST epochs, batch 64, CUDA graph", "train_cuda_graph.json", 2.0))
# build/train against the same loop in Python: (what, C++ file, Python file, the least ratio).
RATIO_GOALS = (("C++ eager vs Python eager", "train_cuda.json", "train_py_cuda.json", 1.3),
               ("C++ CUDA graph vs Python compiled", "train_cuda_graph.json", "train_py_compiled.json", 1.0))


def median(xs):
    """The median, None for no values."""
    s = sorted(xs)
    n = len(s)
    return None if not n else s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def best_raw(r, n):
    """(implementation, bytes/s) of the fastest raw kernel at n elements, or None."""
    cands = [(k[0], v["bytes_per_second"]) for k, v in r.items()
             if k[1] == n and RAW.match(k[0]) and "bytes_per_second" in v]
    return max(cands, key=lambda c: c[1]) if cands else None


def train_seconds(doc):
    return sum(e["seconds"] for e in doc["per_epoch"]) if doc else None


class Goal:
    def __init__(self, what, value, text, goal, ok):
        self.what, self.value, self.text, self.goal, self.ok = what, value, text, goal, ok

    def line(self):
        mark = "-" if self.value is None else (OK if self.ok else NO)
        return f"{mark} {self.what:46s} {self.text if self.value is not None else 'not measured':34s} {self.goal}"


def dram_sizes(va, l2_bytes):
    """The VectorAdd sizes whose working set is 8x L2 and up (bench's
    kDramBoundL2s: below it the L2 and the launch weigh in; 2^27 and up
    when the L2 is unknown)."""
    return sorted(n for n in {k[1] for k in va if k[0].startswith("VectorAdd/")}
                  if (ADD_BYTES * n >= 8 * l2_bytes if l2_bytes else n >= BIG))


def worst_best_raw(va, sizes, figure):
    """(figure, implementation, n) of the best raw kernel at the size where
    `figure` of it is lowest, or None."""
    out = []
    for n in sizes:
        b = best_raw(va, n)
        if b and va[(b[0], n)].get(figure) is not None:
            out.append((va[(b[0], n)][figure], b[0].split("/")[1], n))
    return min(out) if out else None


def at(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def bandwidth_goals(va, l2_bytes):
    """The VectorAdd, copy and transfer goals. va: the bench step's rows as
    gpu_summary.runs() gives them; l2_bytes: the GPU's L2 (0: unknown)."""
    dram = dram_sizes(va, l2_bytes)
    b = worst_best_raw(va, dram, "bytes_per_second")
    out = [Goal(f"best raw VectorAdd kernel, DRAM-bound ({', '.join(map(at, dram)) or 'none'})", b and b[0],
                b and f"{b[0] / 1e12:.2f} TB/s ({b[1]} at {at(b[2])})", ">= 4.3 TB/s", b and b[0] >= 4.3e12)]
    # What this GPU can really move: the add against the copy measured beside it.
    f = worst_best_raw(va, dram, "frac_of_copy")
    out.append(Goal("... against the best device copy", f and f[0], f and f"{f[0]:.3f}x of the copy ({f[1]} at "
                    f"{at(f[2])})", ">= 0.95x", f and f[0] >= 0.95))
    c = va.get(("Copy/cuda_float4", BIG), {}).get("bytes_per_second")
    out.append(Goal("vectorised copy kernel at 2^27", c, c and f"{c / 1e12:.2f} TB/s", ">= 4.0 TB/s", c and c >= 4.0e12))
    out.append(library_goal(va, dram))
    b = best_raw(va, HEADLINE)
    t = b and va[(b[0], HEADLINE)]["time_s"]
    out.append(Goal("VectorAdd at 1e7 elements, best raw kernel", t, t and f"{t * 1e6:.1f} us ({b[0].split('/')[1]})",
                    "<= 30 us", t and t <= 30e-6))
    h2d = va.get(("Transfer/h2d_pinned", 40000000), {}).get("bytes_per_second")
    frac = va.get(("Transfer/h2d_pinned", 40000000), {}).get("frac_of_peak")
    out.append(Goal("pinned host-to-device copy, 40 MB", h2d,
                    h2d and f"{h2d / 1e9:.1f} GB/s" + (f" ({100 * frac:.0f}% of PCIe)" if frac else ""),
                    ">= 50 GB/s", h2d and h2d >= 50e9))
    return out


def library_goal(va, dram):
    """The best raw kernel against each library, at every DRAM-bound size."""
    worst = None
    for n in dram:
        raw = best_raw(va, n)
        for lib in LIBRARIES:
            v = va.get((f"VectorAdd/{lib}", n))
            if raw and v and "bytes_per_second" in v:
                ratio = raw[1] / v["bytes_per_second"]
                if worst is None or ratio < worst[0]:
                    worst = (ratio, lib, n, raw[0].split("/")[1])
    return Goal("raw kernel vs cuBLAS, Thrust, torch (DRAM)", worst and worst[0],
                worst and f"{worst[0]:.3f}x (worst: {worst[3]} vs {worst[1]} at {worst[2]})",
                ">= 1.00x (0.99: noise)", worst and worst[0] >= 0.99)


def median_epoch(doc):
    """A training run's median epoch throughput (images/s) past its first:
    the first epoch's warm-up (cuDNN's plans, a capture, a compile) is left
    out on both sides of a ratio, whatever their epochs."""
    ips = [e["images_per_second"] for e in doc["per_epoch"]] if doc and doc.get("per_epoch") else []
    return median(ips[1:] or ips)


def ratio_goal(cpp, py, name, limit):
    """[the Goal of build/train's median epoch over the Python loop's, in one run]."""
    c, p = median_epoch(cpp), median_epoch(py)
    r = c / p if c and p else None
    return [Goal(name, r, r and f"{r:.2f}x ({c:.0f} vs {p:.0f} img/s, median epoch past the first)", f">= {limit:g}x",
                 r and r >= limit)]


def train_goal(doc, name, limit):
    """[the Goal of a train JSON]: not measured without epochs. A quick
    run's 2 epochs are scaled to ten by its median epoch beyond the first
    (its warm-up counted once, not five times), and it says so."""
    doc = doc if doc and doc.get("per_epoch") else None
    s = train_seconds(doc)
    n = len(doc["per_epoch"]) if doc else 0
    if doc and n != 10:
        ep = [e["seconds"] for e in doc["per_epoch"]]
        s = ep[0] + (10 - 1) * (median(ep[1:]) if n > 1 else ep[0])
    return [Goal(name, s, s and f"{s:.2f} s" + (f" ({n} epochs: the first, then 9 x the median of the rest)"
                                                if n != 10 else "")
                 + f", {100 * doc['final_test_accuracy']:.1f}% Fashion-MNIST test accuracy", f"<= {limit:g} s",
                 s and s <= limit)]
