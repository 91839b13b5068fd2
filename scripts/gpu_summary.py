#!/usr/bin/env python3
"""The gpu_summary command (cudabench/commands/gpu_summary.py), run as scripts/gpu_summary.py."""
import sys

from cudabench.commands import gpu_summary

if __name__ == "__main__":
    sys.exit(gpu_summary.entry())
