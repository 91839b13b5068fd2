#!/usr/bin/env python3
"""The machines command (cudabench/commands/machines.py), run as scripts/machines.py."""
import sys

from cudabench.commands import machines

if __name__ == "__main__":
    sys.exit(machines.entry())
