#!/usr/bin/env python3
"""The ddp_scaling command (cudabench/commands/ddp_scaling.py), run as scripts/ddp_scaling.py."""
import sys

from cudabench.commands import ddp_scaling

if __name__ == "__main__":
    sys.exit(ddp_scaling.entry())
