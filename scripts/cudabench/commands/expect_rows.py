"""The rows a GPU check step exists for are in its results file, passed,
and hold figures that can be.

    expect_rows.py FILE.json PATTERN...

Each PATTERN is a regular expression matched at the start of a benchmark's
name. Prints one line for each pattern that no row matches, one for each row
it matches that failed, one for each such row with an impossible figure (a
time or rate that is not a positive number, a fraction of the theoretical
peak above 1), and one for each with a doubtful one (an add faster than the
best device copy by more than MAX_FRAC_OF_COPY - 1; a time taken without
its gate, behind the fixed delay, which the host's enqueue may be in). Exit
0 when every pattern has a row and none failed or holds such a figure; 1
when a figure is impossible (a wrong measurement); 3 when a row is missing,
failed or doubtful (it could not be measured as it should; a wrong result
is bench's own exit 1); 2 for an unreadable file or a bad pattern. A file
samples.py kept from a stopped run says so first ("partial: ..."). A CPU
control row does not stand in for a GPU row: the patterns name the GPU rows.
Only the standard library (the GPU machine's python3).
"""
import math
import re
import sys

from ..base.errors import BadInput, one_line
from ..base.files import read_json
from ..base.cli import print_usage
from ..base.text import visible
from ..results.gbench import SAMPLES_META, partial_note


# An add moves 12 bytes per element, a copy 8, through the same DRAM: the
# add may match the best copy, not beat it by much.
MAX_FRAC_OF_COPY = 1.10
NOT_GATED = "not gated:"  # bench's label where the gate could not be used (gpu_support.cu)


def impossible(b):
    """Why row b's figures cannot be (one line each)."""
    out = []
    for key in ("real_time", "bytes_per_second", "items_per_second"):
        v = b.get(key)
        if key in b and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            out.append(f"{key} is {v!r}, not a positive number")
    frac = b.get("frac_of_peak")
    if isinstance(frac, (int, float)) and frac > 1:
        out.append(f"{frac:.3f} of its theoretical peak (the peak or the time is wrong)")
    return out


def doubtful(b):
    """Why row b was not measured as it should be (one line each)."""
    out = []
    frac = b.get("frac_of_copy")
    if isinstance(frac, (int, float)) and frac > MAX_FRAC_OF_COPY:
        out.append(f"{frac:.3f} of the best device copy (the copy reference is not this GPU's best)")
    if NOT_GATED in (b.get("label") or ""):
        out.append("timed without its gate, behind a fixed delay: the host's enqueue may be in its time")
    return out


def problems(doc, patterns):
    """(missing, failed or doubtful lines; impossible-figure lines), in order."""
    rows = [b for b in doc.get("benchmarks", []) if b.get("run_type") != "aggregate"]
    missing, wrong = [], []
    for p in patterns:
        hits = [b for b in rows if re.match(p, b.get("run_name") or b.get("name", ""))]
        if not hits:
            missing.append(f"missing: no row matches {p}")
        failed = {b["name"]: b.get("error_message", "") for b in hits if b.get("error_occurred")}
        missing += [f"failed: {name}: {why}" for name, why in sorted(failed.items())]
        measured = [b for b in hits if not b.get("error_occurred")]
        missing += [f"doubtful: {b['name']}: {why}" for b in measured for why in doubtful(b)]
        wrong += [f"impossible: {b['name']}: {why}" for b in measured for why in impossible(b)]
    return missing, wrong


def main(argv):
    if argv[1:2] in (["-h"], ["--help"]):
        return print_usage("expect_rows", __doc__)
    if len(argv) < 3:
        print("usage: expect_rows.py FILE.json PATTERN...", file=sys.stderr)
        return 2
    try:
        doc = read_json(argv[1])
        for p in argv[2:]:
            re.compile(p)
    except (BadInput, re.error) as e:
        print(f"expect_rows: {one_line(e)}", file=sys.stderr)
        return 2
    doc = doc if isinstance(doc, dict) else {}
    missing, wrong = problems(doc, argv[2:])
    partial = (doc.get(SAMPLES_META) or {}).get("partial")
    for line in ([visible(partial_note(argv[1], partial))] if isinstance(partial, dict) else []) + missing + wrong:
        print(line)
    return 1 if wrong else 3 if missing else 0


def entry():
    """The program, as scripts/expect_rows.py runs it: its exit code."""
    return main(sys.argv)


if __name__ == "__main__":
    sys.exit(entry())
