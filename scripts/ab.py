#!/usr/bin/env python3
"""The ab command (cudabench/commands/ab.py), run as scripts/ab.py."""
import sys

from cudabench.commands import ab

if __name__ == "__main__":
    sys.exit(ab.entry())
