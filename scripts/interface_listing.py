#!/usr/bin/env python3
"""The interface_listing command (cudabench/commands/interface_listing.py), run as scripts/interface_listing.py."""
import sys

from cudabench.commands import interface_listing

if __name__ == "__main__":
    sys.exit(interface_listing.entry())
