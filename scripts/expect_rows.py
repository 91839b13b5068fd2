#!/usr/bin/env python3
"""The rows a GPU check step exists for are in its results file, and passed.

    expect_rows.py FILE.json PATTERN...

Each PATTERN is a regular expression matched at the start of a benchmark's
name. Prints one line for each pattern that no row matches, and one for each
row it matches that failed; exit 0 when every pattern has a row and none of
them failed, 3 otherwise (a row that is missing could not be measured; a
wrong result is bench's own exit 1), 2 for an unreadable file or a bad
pattern. A CPU control row does not stand in for a GPU row: the patterns name
the GPU rows. Only the standard library (the GPU machine's python3).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (only the standard library on import)


def problems(doc, patterns):
    """The lines to print: missing patterns and failed rows, in order."""
    rows = [b for b in doc.get("benchmarks", []) if b.get("run_type") != "aggregate"]
    out = []
    for p in patterns:
        hits = [b for b in rows if re.match(p, b.get("run_name") or b.get("name", ""))]
        if not hits:
            out.append(f"missing: no row matches {p}")
        failed = {b["name"]: b.get("error_message", "") for b in hits if b.get("error_occurred")}
        out += [f"failed: {name}: {why}" for name, why in sorted(failed.items())]
    return out


def main(argv):
    if argv[1:2] in (["-h"], ["--help"]):
        return compare.print_usage("expect_rows", __doc__)
    if len(argv) < 3:
        print("usage: expect_rows.py FILE.json PATTERN...", file=sys.stderr)
        return 2
    try:
        doc = compare.read_json(argv[1])
        for p in argv[2:]:
            re.compile(p)
    except (compare.BadInput, re.error) as e:
        print(f"expect_rows: {compare.one_line(e)}", file=sys.stderr)
        return 2
    lines = problems(doc if isinstance(doc, dict) else {}, argv[2:])
    for line in lines:
        print(line)
    return 3 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
