#!/usr/bin/env python3
"""atheris (libFuzzer for Python) target: compare.py's JSON loading.

Any bytes, as a result file and as a floors file: decode_json, load_doc for
each metric, floors_from_doc, then labels, the comparison and both
renderings against a good file. BadInput is the expected answer to bad
input; any other exception is a defect (it would reach a user as exit 3,
"internal error", instead of one line naming the input).

    PYTHONPATH=scripts fuzz/fuzz_compare_json.py [libFuzzer flags] [CORPUS_DIR ...]
"""
import os
import sys

import atheris

# scripts/ is on PYTHONPATH (scripts/fuzz.sh sets it).
with atheris.instrument_imports():
    from cudabench.base.errors import BadInput
    from cudabench.base.files import decode_json
    from cudabench.models.comparison import render
    from cudabench.results.context import set_labels
    from cudabench.results.gbench import load, load_doc
    from cudabench.results.stats import floors_from_doc
    from cudabench.results.verdicts import judge_all

BASE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "compare",
                    "base.json")
GOOD = load(BASE)


def test_one_input(data):
    try:
        doc = decode_json(data, "fuzz.json")
    except BadInput:
        return
    for metric in ("time", "bytes_per_second"):
        try:
            f = load_doc(doc, "fuzz.json", metric)
        except BadInput:
            continue
        base = load(BASE, metric) if metric != "time" else GOOD
        files = [base, f]
        try:
            set_labels(files, None)
            names, results = judge_all(files, metric)
        except BadInput:
            continue
        for md in (False, True):
            render(files, names, results, metric, 0.05, 0.05, md)
    try:
        floors_from_doc(doc, "fuzz.json")
    except BadInput:
        pass


def main():
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
