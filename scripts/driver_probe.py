#!/usr/bin/env python3
"""The driver_probe command (cudabench/commands/driver_probe.py), run as scripts/driver_probe.py."""
import sys

from cudabench.commands import driver_probe

if __name__ == "__main__":
    sys.exit(driver_probe.entry())
