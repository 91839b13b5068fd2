#!/usr/bin/env python3
"""The train_mnist command (cudabench/commands/train_mnist.py), run as scripts/train_mnist.py."""
import sys

from cudabench.commands import train_mnist

if __name__ == "__main__":
    sys.exit(train_mnist.entry())
