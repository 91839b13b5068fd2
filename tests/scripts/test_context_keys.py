"""env/context_keys.json, the benchmark context's keys defined once: its
shape, that compare.py and fleet.py take their keys from it, that the
committed results bench wrote use no key it lacks, and that the docs' table
(scripts/context_keys.py) is the schema's."""
import glob
import json
import os
import subprocess
import sys

import pytest

from cudabench.commands import context_keys
from cudabench.commands.fleet import causes
from cudabench.results.context import context_schema
from cudabench.results import context
from conftest import ROOT

SCHEMA = context_schema()
KEYS = [e["key"] for e in SCHEMA]
DOCS = os.path.join(ROOT, "docs", "json.md")


def test_each_key_once_with_its_writer_and_meaning():
    assert len(KEYS) == len(set(KEYS)), sorted({k for k in KEYS if KEYS.count(k) > 1})
    for e in SCHEMA:
        assert isinstance(e["key"], str) and e["key"], e
        assert e["from"] in ("google-benchmark", "bench", "env", "samples"), e
        assert isinstance(e["about"], str) and e["about"].strip(), e
        assert isinstance(e["compare"], bool), e
        assert "since" not in e or (e["from"] == "google-benchmark" and isinstance(e["since"], str)), e
        if "fleet" in e:
            assert e["fleet"]["scope"] in causes.SCOPES, e
            assert isinstance(e["fleet"]["label"], str) and e["fleet"]["label"], e


def test_compare_lists_the_compare_keys_in_the_schemas_order():
    assert context.context_keys() == [e["key"] for e in SCHEMA if e["compare"]]
    assert set(context.context_keys()) <= set(KEYS)


def test_fleet_compares_every_fleet_key_once_as_the_schema_says():
    by_label = {}
    for f in causes.features():
        by_label.setdefault(f.label, []).append(f)
    for e in SCHEMA:
        if "fleet" in e:
            found = by_label.get(e["fleet"]["label"], [])
            assert len(found) == 1 and found[0].kind == "cat", e


def written_by_cudabench():
    """The committed benchmark JSON files that bench wrote (their context has
    cudabench_git; the hand-made compare fixtures have not)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "results", "**", "*.json"), recursive=True)
                       + glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.json"), recursive=True)):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except ValueError:
            continue  # a fixture that is broken on purpose
        if isinstance(doc, dict) and isinstance(doc.get("context"), dict) and "cudabench_git" in doc["context"]:
            out.append(os.path.relpath(path, ROOT))
    return out


@pytest.mark.parametrize("path", written_by_cudabench())
def test_committed_results_use_only_keys_of_the_schema(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        context = json.load(f)["context"]
    assert sorted(set(context) - set(KEYS)) == []


def test_the_docs_table_is_the_schemas():
    if not os.path.isfile(DOCS):
        pytest.skip("no docs/json.md in this tree")
    with open(DOCS, encoding="utf-8") as f:
        _, rows, _ = context_keys.split(f.read(), DOCS)
    assert rows == context_keys.table(), "run scripts/context_keys.py --write docs/json.md"


def test_write_replaces_only_the_table_between_the_markers(tmp_path):
    doc = tmp_path / "json.md"
    doc.write_text(f"# JSON\n\n{context_keys.BEGIN}\n| old | row |\n{context_keys.END}\n\nThe rest.\n")
    script = os.path.join(ROOT, "scripts", "context_keys.py")
    for _ in range(2):  # and a second run changes nothing
        r = subprocess.run([sys.executable, script, "--write", str(doc)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert doc.read_text() == "\n".join(["# JSON", "", context_keys.BEGIN, *context_keys.table(),
                                             context_keys.END, "", "The rest.", ""])
    doc.write_text("no markers\n")
    r = subprocess.run([sys.executable, script, "--write", str(doc)], capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "context-keys:begin" in r.stderr
