#!/usr/bin/env python3
"""The matrix command (cudabench/commands/matrix.py), run as scripts/matrix.py."""
import sys

from cudabench.commands import matrix

sys.exit(matrix.entry())
