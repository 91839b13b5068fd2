#!/usr/bin/env python3
"""The compare command (cudabench/commands/compare.py), run as scripts/compare.py."""
import sys

from cudabench.commands import compare

sys.exit(compare.entry())
