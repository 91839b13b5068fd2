#!/usr/bin/env python3
"""atheris (libFuzzer for Python) target: compare.py's JSON loading.

Any bytes, as a result file and as a floors file: decode_json, load_doc for
each metric, floors_from_doc, then labels, the comparison and both
renderings against a good file. BadInput is the expected answer to bad
input; any other exception is a defect (it would reach a user as exit 3,
"internal error", instead of one line naming the input).

    fuzz_compare_json.py [libFuzzer flags] [CORPUS_DIR ...]
"""
import os
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
with atheris.instrument_imports():
    import compare

BASE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "compare",
                    "base.json")
GOOD = compare.load(BASE)


def test_one_input(data):
    try:
        doc = compare.decode_json(data, "fuzz.json")
    except compare.BadInput:
        return
    for metric in ("time", "bytes_per_second"):
        try:
            f = compare.load_doc(doc, "fuzz.json", metric)
        except compare.BadInput:
            continue
        base = compare.load(BASE, metric) if metric != "time" else GOOD
        files = [base, f]
        try:
            compare.set_labels(files, None)
            names, results = compare.compare(files, metric)
        except compare.BadInput:
            continue
        for md in (False, True):
            compare.render(files, names, results, metric, 0.05, 0.05, md)
    try:
        compare.floors_from_doc(doc, "fuzz.json")
    except compare.BadInput:
        pass


def main():
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
