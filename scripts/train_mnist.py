#!/usr/bin/env python3
"""The train_mnist command (cudabench/commands/train_mnist.py), run as scripts/train_mnist.py."""
import sys

from cudabench.commands import train_mnist

sys.exit(train_mnist.entry())
