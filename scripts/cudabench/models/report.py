"""The plots and the Markdown report of result files (scripts/report.py's
docstring lists what it writes), for report.py and compare.py --plot."""
import os
import re
from collections import defaultdict

from ..base.errors import BadInput
from ..base.files import hold_lock, make_folder, refuse_inputs_as_outputs, write_whole
from ..base.cli import ensure_venv
from ..base.text import table, visible
from ..results.gbench import load, partial_note, positive_number
from ..results.stats import median
from ..results.context import set_labels
from ..results.verdicts import judge_all, without_process_samples
from .comparison import render


plt = None  # matplotlib.pyplot, imported once the venv is known to have it (main)


def import_matplotlib():
    global plt
    ensure_venv("report", ("scipy.stats", "matplotlib"))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    plt = matplotlib.pyplot

OUTPUTS = ("report.md", "vector_add.png", "transfer.png", "mnist.png")  # what it writes into --out
NAME_RX = re.compile(r"^(?P<family>[^/]+)/(?P<impl>[^/]+)/(?P<arg>[a-z]+):(?P<value>\d+)(?:/dev:(?P<dev>\d+))?")


def rows(path):
    """(family, impl, arg value, GB/s, items/s) per benchmark, medians over
    repetitions; a process taken beside other load is left out, as every
    median is (none shown where every one was)."""
    doc = load(path, "time")
    per = defaultdict(lambda: {"bps": [], "ips": []})
    for b in doc.benchmarks:
        if b.get("run_type") == "aggregate" or b.get("error_occurred") or b.get("skipped") is True \
                or b.get("loaded") is True:
            continue
        m = NAME_RX.match(b.get("run_name") or b["name"])
        if not m:
            continue
        # Runs on several GPUs (--devices) are plotted as one line per device.
        impl = m["impl"] if m["dev"] is None else f"{m['impl']} dev:{m['dev']}"
        key = (m["family"], impl, int(m["value"]))
        for counter, k in (("bytes_per_second", "bps"), ("items_per_second", "ips")):
            if counter in b:
                per[key][k].append(positive_number(b, counter, path))
    out = {}
    for k, v in per.items():
        out[k] = (median(v["bps"]) / 1e9 if v["bps"] else None,
                  median(v["ips"]) if v["ips"] else None)
    return doc, out


def save(fig, path):
    try:
        write_whole(path, lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
    finally:
        plt.close(fig)


def plot_lines(datasets, labels, family, title, xlabel, path):
    impls = sorted({k[1] for d in datasets for k in d if k[0] == family and d[k][0]})
    if not impls:
        return False
    cols = min(3, len(impls))
    nrows = (len(impls) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.4 * nrows), squeeze=False, sharey=True)
    for ax, impl in zip(axes.flat, impls):
        for d, label in zip(datasets, labels):
            pts = sorted((k[2], v[0]) for k, v in d.items() if k[0] == family and k[1] == impl and v[0])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(impl, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
    for ax in axes.flat[len(impls):]:
        ax.axis("off")
    axes[0][0].set_ylabel("GB/s")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    save(fig, path)
    return True


def plot_mnist(datasets, labels, path):
    keys = sorted({(k[1], k[2]) for d in datasets for k in d if k[0] == "MnistTrain" and d[k][1]})
    if not keys:
        return False
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(keys) * len(datasets)), 4))
    width = 0.8 / len(datasets)
    for i, (d, label) in enumerate(zip(datasets, labels)):
        ys = [d.get(("MnistTrain", v, b), (None, 0))[1] or 0 for v, b in keys]
        ax.bar([j + i * width for j in range(len(keys))], ys, width, label=label)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
    ax.set_xticklabels([f"{v}\nbatch {b}" for v, b in keys], fontsize=8)
    ax.set_ylabel("images/s")
    ax.set_yscale("log")
    ax.set_title("MnistTrain: one training step, images/s")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    save(fig, path)
    return True


def headline_table(datasets, labels):
    sizes = {10_000_000: "1e7", 1 << 27: "2^27"}
    rows = []
    for k in sorted({k for d in datasets for k in d if k[0] in ("VectorAdd", "VectorAddFlow") and k[2] in sizes}):
        rows.append([f"{k[0]}/{k[1]} n={sizes[k[2]]}"] + [f"{d[k][0]:.1f} GB/s" if d.get(k) and d[k][0] else "-"
                                                          for d in datasets])
    for k in sorted({k for d in datasets for k in d if k[0] in ("MnistTrain", "MnistEval")}):
        rows.append([f"{k[0]}/{k[1]} batch={k[2]}"] + [f"{d[k][1]:.0f} img/s" if k in d and d[k][1] else "-"
                                                       for d in datasets])
    return table(["benchmark"] + labels, rows, True) if rows else ""


def write_report(paths, out, labels=None, title="cudabench report"):
    """report.md and the plots of the result files `paths` into the folder
    `out` (scripts/report.py's docstring lists them); every input is read and
    checked before anything is written. labels: one per file, or None."""
    import_matplotlib()
    loaded = [rows(p) for p in paths]
    docs = [doc for doc, _ in loaded]
    set_labels(docs, labels)
    labels = [doc.label for doc in docs]
    prepare_out(out, OUTPUTS, paths)
    datasets = [d for _, d in loaded]
    runs = [[label, os.path.relpath(doc.path, out), doc.context.get("cuda_toolkit", "-"),
             doc.context.get("gpu_name", "-"), doc.context.get("cuda_driver_version") or "none",
             doc.context.get("libtorch", "-"), doc.context.get("host_name", "-"), doc.context.get("num_cpus", "-")]
            for label, doc in zip(labels, docs)]
    md = [f"# {title}", "", table(["run", "file", "toolkit", "GPU", "driver", "LibTorch", "host", "CPUs"],
                                            runs, True), ""]
    md += [f"Note: {visible(partial_note(label, doc.partial))}" for label, doc in zip(labels, docs) if doc.partial]
    for fname, ok, caption in (
            ("vector_add.png", plot_lines(datasets, labels, "VectorAdd", "VectorAdd: c = a + b, GB/s (12 bytes/element)",
                                          "elements", os.path.join(out, "vector_add.png")), "Vector add throughput"),
            ("transfer.png", plot_lines(datasets, labels, "Transfer", "Host<->device copies, GB/s", "bytes",
                                        os.path.join(out, "transfer.png")), "Copies"),
            ("mnist.png", plot_mnist(datasets, labels, os.path.join(out, "mnist.png")), "Training throughput")):
        if ok:
            md += [f"## {caption}", "", f"![{caption}]({fname})", ""]
    headline = headline_table(datasets, labels)
    if headline:
        md += ["## Headline numbers (medians)", "", headline, ""]
    if len(loaded) >= 2:
        try:
            names, results = judge_all(docs)
            known = [len(d.notes) for d in docs]
            without_process_samples(docs, results)
            md += ["## Compared with the first run", "",
                   render(docs, names, results, "time", 0.05, 0.05, True), ""]
            md += [f"Note: {visible(n)}" for d, k in zip(docs, known) for n in d.notes[k:]]
        except BadInput as e:
            md += ["## Compared with the first run", "", f"not compared: {e}", ""]
    write_whole(os.path.join(out, "report.md"), "\n".join(md) + "\n")
    print(f"report: wrote {os.path.join(out, 'report.md')}")
    return 0


def prepare_out(out, names, inputs):
    """The output folder, made if missing and held (one run at a time writes
    into it: its .lock); BadInput naming --out when it cannot be written,
    another run holds it, or a file it would write there is an input."""
    refuse_inputs_as_outputs([("--out", os.path.join(out, n)) for n in names], inputs)
    make_folder(out, "--out")
    hold_lock(os.path.join(out, ".lock"), out)
