#!/usr/bin/env python3
"""The samples command (cudabench/commands/samples.py), run as scripts/samples.py."""
import sys

from cudabench.commands import samples

if __name__ == "__main__":
    sys.exit(samples.entry())
