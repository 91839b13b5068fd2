"""Plots and a Markdown report from Google Benchmark JSON files.

    report.py RUN.json [RUN.json ...] --out DIR [--labels a,b,...] [--title T]

Writes into DIR (each file whole: temp file, then renamed):
  vector_add.png   GB/s against elements, one panel per implementation,
                   one line per file (toolkit or machine)
  transfer.png     GB/s against bytes for each copy kind
  mnist.png        images/s per training variant and batch size
  report.md        the context of each run, the plots, a table of the headline
                   sizes (1e7 and 2^27), and with two or more files the
                   compare.py verdicts against the first
Plots that have no data in the files are left out.

The gate's history has a page of its own: scripts/history.py page.
"""
import argparse
import sys

from ..base.errors import BadInput
from ..base.cli import ArgParser, output_folder, run_tool
from ..models.report import write_report

def main(argv=None):
    ap = ArgParser(prog="report", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--out", required=True, type=output_folder, help="folder for the PNGs and report.md")
    ap.add_argument("--labels")
    ap.add_argument("--title", default="cudabench report")
    a = ap.parse_args(argv)

    def body():
        if not a.files:
            raise BadInput("give result files (the gate's history: scripts/history.py page)")
        return write_report(a.files, a.out, a.labels.split(",") if a.labels is not None else None, a.title)

    return run_tool("report", body)


def entry():
    """The program, as scripts/report.py runs it: its exit code."""
    return main()


if __name__ == "__main__":
    sys.exit(entry())
