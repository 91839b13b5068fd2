#!/usr/bin/env python3
"""The ab command (cudabench/commands/ab.py), run as scripts/ab.py."""
import sys

from cudabench.commands import ab

sys.exit(ab.entry())
