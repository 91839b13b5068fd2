"""What a build shows the world, as a listing to diff across a redesign:
the benchmark names (without a GPU, and on a fake four-GPU machine with one
and with two GPUs selected), the keys of a benchmark JSON's context and of
one benchmark's entry, the keys of `bench --env=json`, the keys of
`train --json`, and the --help of every program (bench, train and each
script). JSON keys are paths ("driver.cuda_version", "gpus[].nvml.uuid").

    scripts/interface_listing.py --build build > after.txt
    scripts/interface_listing.py --build old/build --fakes build/fakes > before.txt
    diff before.txt after.txt

The fakes (libcuda, NVML) come from a build with tests (build/fakes).
Exit codes: 0 listed; 2 bad arguments; 3 a program failed.
"""
import glob
import json
import os
import subprocess
import sys

from ..base.cli import ArgParser, run_tool
from ..base.errors import ToolError
from ..base.files import temporary_folder
from ..base.paths import ROOT, SCRIPTS


FIXTURE = os.path.join(ROOT, "tests", "fixtures", "gpus", "h200x4.json")


def paths(doc, prefix=""):
    """Every key path of a JSON document; list items collapse to []."""
    out = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            out |= paths(v, p)
    elif isinstance(doc, list):
        for v in doc:
            out |= paths(v, prefix + "[]")
    return out


def run(cmd, env=None):
    r = subprocess.run(cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [""])[-1]
        raise ToolError(f"{' '.join(cmd)} exited {r.returncode}: {last}")
    return r.stdout


def section(title, lines):
    print(f"## {title}")
    for line in sorted(lines):
        print(line)
    print()


def help_texts(build):
    """(program, exit code, its --help) for bench, train and every script a user runs."""
    found = [os.path.join(build, "bench"), os.path.join(build, "train")]
    found += sorted(glob.glob(os.path.join(SCRIPTS, "*.py")) + glob.glob(os.path.join(SCRIPTS, "*.sh")))
    found += sorted(glob.glob(os.path.join(SCRIPTS, "fleet", "*.py")) + glob.glob(os.path.join(SCRIPTS, "fleet", "*.sh")))
    for path in found:
        if not os.access(path, os.X_OK) and not path.endswith((".py", ".sh")):
            continue
        cmd = [sys.executable, path] if path.endswith(".py") else ["bash", path] if path.endswith(".sh") else [path]
        r = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=120)
        name = os.path.relpath(path, ROOT) if path.startswith(SCRIPTS) else os.path.basename(path)
        yield name, r.returncode, r.stdout


def main():
    ap = ArgParser(prog="interface_listing", description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the build folder with bench and train")
    ap.add_argument("--fakes", help="folder with cuda/ and nvml/ fakes (default: BUILD/fakes)")
    a = ap.parse_args()
    bench, train = os.path.join(a.build, "bench"), os.path.join(a.build, "train")
    fakes = a.fakes or os.path.join(a.build, "fakes")
    if not os.access(bench, os.X_OK) or not os.path.isdir(fakes):
        print(f"interface_listing: needs {bench} and {fakes}", file=sys.stderr)
        return 2
    gpu = {"CUDABENCH_FAKE_GPU": FIXTURE, "LD_LIBRARY_PATH": f"{fakes}/cuda:{fakes}/nvml"}
    section("benchmarks, no GPU", run([bench, "--benchmark_list_tests"]).split())
    section("benchmarks, a fake H200", run([bench, "--benchmark_list_tests"], gpu).split())
    section("benchmarks, a fake H200, --devices 0,2",
            run([bench, "--devices", "0,2", "--benchmark_list_tests"], gpu).split())
    with temporary_folder("cudabench-listing.") as tmp:  # removed on a signal too (run_tool)
        out = os.path.join(tmp, "b.json")
        run([bench, "--benchmark_filter=^VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.01",
             f"--benchmark_out={out}"], gpu)
        doc = json.load(open(out))
        section("benchmark JSON: context keys (a fake H200)", [k for k in doc["context"]])
        section("benchmark JSON: a benchmark's keys", doc["benchmarks"][0].keys())
        section("bench --env=json (a fake H200)", paths(json.loads(run([bench, "--env=json"], gpu))))
        if os.access(train, os.X_OK):
            out = os.path.join(tmp, "t.json")
            run([train, "--epochs", "1", "--limit", "256", "--test-limit", "100", "--quiet", "--json", out])
            section("train --json", paths(json.load(open(out))))
    for name, rc, text in help_texts(a.build):
        print(f"## {name} --help (exit {rc})\n{text.rstrip()}\n")
    return 0


def entry():
    """The program, as scripts/interface_listing.py runs it: its exit code."""
    return run_tool("interface_listing", main)


if __name__ == "__main__":
    sys.exit(entry())
