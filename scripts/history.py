#!/usr/bin/env python3
"""The history command (cudabench/commands/history.py), run as scripts/history.py."""
import sys

from cudabench.commands import history

if __name__ == "__main__":
    sys.exit(history.entry())
