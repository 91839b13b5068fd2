#!/usr/bin/env python3
"""Reads `bench --env=json` on stdin. Prints the roots of the toolkit installs
that have nvcc, one per line; with --describe ROOT, that install's JSON."""
import json
import os
import sys

env = json.load(sys.stdin)
tks = [t for t in env.get("toolkits", []) if t.get("has_nvcc")]
if len(sys.argv) == 3 and sys.argv[1] == "--describe":
    want = os.path.realpath(sys.argv[2])
    for t in env.get("toolkits", []):
        if os.path.realpath(t["root"]) == want:
            print(json.dumps(t))
            sys.exit(0)
    sys.exit(f"matrix: {sys.argv[2]} is not a toolkit the environment report recognises")
for t in tks:
    print(t["root"])
