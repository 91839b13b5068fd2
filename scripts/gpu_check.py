#!/usr/bin/env python3
from cudabench.commands import run; run(__file__)  # = scripts/tool.py gpu_check
