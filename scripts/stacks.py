#!/usr/bin/env python3
"""The stacks command (cudabench/commands/stacks.py), run as scripts/stacks.py."""
import sys

from cudabench.commands import stacks

sys.exit(stacks.entry())
