"""The Markdown table of the benchmark context's keys, from env/context_keys.json.

    context_keys.py                       print the table
    context_keys.py --write docs/json.md  rewrite the table between the file's
                                          markers, in place:
        <!-- context-keys:begin -->
        | key | what it holds | from |
        ...
        <!-- context-keys:end -->

Exit codes: 0 done; 2 bad input (no such file, not one pair of markers in
order); 3 the tool could not run (the schema unreadable, the file unwritable).
"""
import argparse
import sys

from ..base.errors import BadInput, EXIT_OK
from ..base.files import write_whole
from ..base.cli import ArgParser, run_tool
from ..results.context import context_schema


BEGIN, END = "<!-- context-keys:begin -->", "<!-- context-keys:end -->"


def table():
    """The table's lines: the header, then a row per key in the schema's order."""
    rows = ["| key | what it holds | from |", "|---|---|---|"]
    for e in context_schema():
        about = e["about"].replace("|", r"\|") + (f" (Google Benchmark {e['since']} and later)" if "since" in e else "")
        rows.append(f"| `{e['key']}` | {about} | {e['from']} |")
    return rows


def split(text, path):
    """(the lines up to BEGIN, the lines between the markers, the lines from END)."""
    lines = text.split("\n")
    marks = [ln.strip() for ln in lines]
    if marks.count(BEGIN) != 1 or marks.count(END) != 1 or marks.index(BEGIN) > marks.index(END):
        raise BadInput(f"{path}: expected one '{BEGIN}' line, then one '{END}' line")
    b, e = marks.index(BEGIN), marks.index(END)
    return lines[:b + 1], lines[b + 1:e], lines[e:]


def write(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})")
    before, _, after = split(text, path)
    new = "\n".join(before + table() + after)
    if new != text:
        write_whole(path, new)


def main(argv=None):
    ap = ArgParser(prog="context_keys", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--write", metavar="FILE", help="rewrite the table between FILE's markers")
    a = ap.parse_args(argv)

    def body():
        if a.write:
            write(a.write)
        else:
            print("\n".join(table()))
        return EXIT_OK

    return run_tool("context_keys", body)


def entry():
    """The program, as scripts/context_keys.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
