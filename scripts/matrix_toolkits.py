#!/usr/bin/env python3
"""The toolkit matrix's plan, from `bench --env=json` on stdin, and the merge
of its interleaved rounds.

    matrix_toolkits.py --plan [ROOT ...]
    matrix_toolkits.py --merge OUT.json ROUND1.json ROUND2.json ...

Prints one line per toolkit to build: its root, a tab, and its build name
(cuda-<version> for a system install, cuda-<version>-<kind> for pip or conda
ones, with -2, -3 ... when two would share a name). Without ROOTs: every
install the environment report found that has nvcc, in its order; with ROOTs:
those, in the order given, each of which must be a toolkit the report knows.

--merge joins the files of several rounds of one build into one Google
Benchmark JSON with one sample per round, the way scripts/ab.py merges its
processes (the matrix runs the builds in turn, round after round, so that
drift in a noisy machine falls on every toolkit alike instead of on
whichever ran last).
"""
import json
import os
import sys


def name_for(t, taken):
    base = "cuda-" + (t.get("version") or "unknown")
    if t.get("kind") not in (None, "system"):
        base += "-" + t["kind"].replace("conda-cudatoolkit", "conda")
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    taken.add(name)
    return name


def merge(out, rounds):
    """One process per round: ab.py's merge, one sample per process."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ab
    import compare
    docs = []
    for p in rounds:
        with open(p) as f:
            docs.append(json.load(f))
    merged = ab.merge(docs, "matrix", {"rounds": len(docs)})
    compare.write_whole(out, json.dumps(merged, indent=1) + "\n")


def fail(msg):
    """Bad input: one line, exit 2 (never 1, which means a wrong result)."""
    print(f"matrix: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "--merge":
        merge(args[1], args[2:])
        return
    if not args or args[0] != "--plan":
        fail("usage: matrix_toolkits.py --plan [ROOT ...] < env.json, or --merge OUT IN.json ...")
    try:
        env = json.load(sys.stdin)
    except ValueError as e:
        fail(f"the environment report on stdin is not JSON ({e})")
    known = env.get("toolkits", []) if isinstance(env, dict) else None
    if not isinstance(known, list) or not all(isinstance(t, dict) and isinstance(t.get("root"), str) for t in known):
        fail("the environment report on stdin has no 'toolkits' list (expected bench --env=json)")
    if len(args) > 1:
        chosen = []
        for root in args[1:]:
            want = os.path.realpath(root)
            match = [t for t in known if os.path.realpath(t["root"]) == want]
            if not match:
                fail(f"{root} is not a toolkit the environment report recognises")
            if not match[0].get("has_nvcc"):
                fail(f"{root} has no nvcc ({match[0].get('summary', 'runtime only')})")
            chosen.append(match[0])
    else:
        chosen = [t for t in known if t.get("has_nvcc")]
    if not chosen:
        fail("no CUDA toolkit with nvcc found")
    taken = set()
    for t in chosen:
        print(f"{t['root']}\t{name_for(t, taken)}")


if __name__ == "__main__":
    main()
