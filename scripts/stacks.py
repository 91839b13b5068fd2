#!/usr/bin/env python3
"""The stacks command (cudabench/commands/stacks.py), run as scripts/stacks.py."""
import sys

from cudabench.commands import stacks

if __name__ == "__main__":
    sys.exit(stacks.entry())
