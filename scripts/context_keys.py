#!/usr/bin/env python3
"""The context_keys command (cudabench/commands/context_keys.py), run as scripts/context_keys.py."""
import sys

from cudabench.commands import context_keys

if __name__ == "__main__":
    sys.exit(context_keys.entry())
