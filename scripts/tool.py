#!/usr/bin/env python3
"""The one entry point of the Python tools: scripts/tool.py COMMAND [ARGS...] (--help lists them)."""
import sys

from cudabench.commands import main

sys.exit(main(sys.argv[1:]))
