#!/usr/bin/env python3
"""The fleet command (cudabench/commands/fleet/), run as scripts/fleet/fleet.py."""
import sys

from cudabench.commands import fleet

if __name__ == "__main__":
    sys.exit(fleet.entry())
