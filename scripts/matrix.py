#!/usr/bin/env python3
"""The matrix command (cudabench/commands/matrix.py), run as scripts/matrix.py."""
import sys

from cudabench.commands import matrix

if __name__ == "__main__":
    sys.exit(matrix.entry())
