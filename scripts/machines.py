#!/usr/bin/env python3
"""The machines command (cudabench/commands/machines.py), run as scripts/machines.py."""
import sys

from cudabench.commands import machines

sys.exit(machines.entry())
