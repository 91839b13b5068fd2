"""The stack matrix's helpers (scripts/matrix.sh).

    matrix.py merge OUT.json ROUND1.json ROUND2.json ...
    matrix.py labels STACK.json ...
    matrix.py summary STACK.json ... [--markdown OUT.md]

merge joins the rounds of one stack into one Google Benchmark JSON with one
sample per round, the way scripts/ab.py merges its processes (the matrix runs
the stacks in turn, round after round, so that drift in a noisy machine falls
on every stack alike instead of on whichever ran last).

labels prints the stacks' names for compare.py and report.py, comma-separated:
each names the kernels' toolkit and LibTorch with its CUDA, as PyTorch writes
it: "CUDA 13.0.88 + torch 2.11.0+cu130".

summary prints, from the merged files' contexts, one line per stack naming
every CUDA in play (the driver's, the kernels' toolkit, LibTorch's) and
whether the GPU was usable for each, then each benchmark some stack did not
run, with that stack's reason, so that a row one stack cannot run is shown,
not dropped.
"""
import re
import sys

from ..base.files import check_writable, read_json, refuse_inputs_as_outputs, write_json, write_whole
from ..base.cli import print_usage, run_tool
from ..base.text import table
from ..results import merged



def fail(msg):
    """Bad input: one line, exit 2 (never 1, which means a wrong result)."""
    print(f"matrix: {msg}", file=sys.stderr)
    sys.exit(2)


def read(path):
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        fail(f"{path}: not a Google Benchmark JSON file")
    return doc


def merge(out, rounds):
    """One process per round: results.merged's merge, one sample per process."""
    doc = merged.merge([read(p) for p in rounds], "matrix", {"tool": "matrix", "rounds": len(rounds)})
    write_json(out, doc)


# LibTorch's rows: they need LibTorch's GPU (its CUDA may differ from the
# kernels'; docs/stacks.md) and, as bench times them, the kernels' too.
TORCH_ROW = re.compile(r"^Mnist|/torch_")


def reason(usable):
    return usable[len("no: "):] if usable.startswith("no: ") else "this build did not run it"


def why_not_run(name, facts):
    if TORCH_ROW.search(name) and facts["torch_gpu"].startswith("no: "):
        return reason(facts["torch_gpu"])
    return reason(facts["gpu"])


def stack_facts(doc):
    """The facts of one stack, from its context."""
    c = doc.get("context", {})
    torch_cuda = c.get("libtorch_cuda", "")
    torch = c.get("libtorch", "absent")
    if torch != "absent" and torch_cuda not in ("", "none"):
        torch += "+cu" + torch_cuda.replace(".", "")
    return {
        "stack": c.get("cudabench_stack", "?"),
        "driver": c.get("cuda_driver", "?"),
        "kernels": f"{c.get('cuda_toolkit', '?')} ({c.get('cuda_toolkit_root') or 'no toolkit'})",
        "torch": torch,
        "label": f"CUDA {c.get('cuda_toolkit', '?')} + torch {torch}",
        "gpu": c.get("gpu_usable", ""),
        "torch_gpu": c.get("libtorch_gpu_usable", ""),
    }


def summary_lines(docs):
    facts = [stack_facts(d) for d in docs]
    rows = [("stack", "driver's CUDA", "kernels' toolkit", "LibTorch", "GPU for the kernels", "GPU for LibTorch")]
    rows += [(f["stack"], f["driver"], f["kernels"], f["torch"], f["gpu"], f["torch_gpu"]) for f in facts]
    lines = table(rows[0], rows[1:], True).split("\n")
    names = []
    for d in docs:
        for b in d["benchmarks"]:
            if b.get("run_type", "iteration") == "iteration" and b.get("name") not in names:
                names.append(b.get("name"))
    ran = [{b.get("name") for b in d["benchmarks"]} for d in docs]
    missing = [f"- `{n}`: not run by {f['stack']}: {why_not_run(n, f)}"
               for n in names for f, r in zip(facts, ran) if n not in r]
    if missing:
        lines += ["", "Rows a stack did not run:"] + missing
    return lines


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        return print_usage("matrix.py", __doc__)
    if len(argv) >= 3 and argv[0] == "merge":
        check_writable(argv[1], "merge OUT")
        refuse_inputs_as_outputs([("merge OUT", argv[1])], argv[2:])
        merge(argv[1], argv[2:])
    elif len(argv) >= 2 and argv[0] == "labels":
        print(",".join(stack_facts(read(p))["label"] for p in argv[1:]))
    elif len(argv) >= 2 and argv[0] == "summary":
        args, md = argv[1:], None
        if "--markdown" in args:
            i = args.index("--markdown")
            if i + 1 >= len(args):
                fail("--markdown needs a file")
            md = args[i + 1]
            args = args[:i] + args[i + 2:]
            check_writable(md, "--markdown")
            refuse_inputs_as_outputs([("--markdown", md)], args)
        lines = summary_lines([read(p) for p in args])
        print("\n".join(lines))
        if md:
            write_whole(md, "### The stacks\n" + "\n".join(lines) + "\n")
    else:
        fail("usage: matrix.py merge OUT IN.json ... | labels FILE ... | summary FILE ... [--markdown OUT]")


def entry():
    """The program, as scripts/matrix.py runs it: its exit code."""
    return run_tool("matrix", lambda: main(sys.argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(entry())
