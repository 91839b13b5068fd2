#!/usr/bin/env python3
"""The compare command (cudabench/commands/compare.py), run as scripts/compare.py."""
import sys

from cudabench.commands import compare

if __name__ == "__main__":
    sys.exit(compare.entry())
