#!/usr/bin/env python3
"""The fleet command (cudabench/commands/fleet.py), run as scripts/fleet.py."""
import sys

from cudabench.commands import fleet

if __name__ == "__main__":
    sys.exit(fleet.entry())
