#!/usr/bin/env python3
"""The expect_rows command (cudabench/commands/expect_rows.py), run as scripts/expect_rows.py."""
import sys

from cudabench.commands import expect_rows

if __name__ == "__main__":
    sys.exit(expect_rows.entry())
