#!/usr/bin/env python3
"""The report command (cudabench/commands/report.py), run as scripts/report.py."""
import sys

from cudabench.commands import report

if __name__ == "__main__":
    sys.exit(report.entry())
