"""The front door and docs/ against the tree they describe: the README stays
a front door (at most 250 lines), every relative link resolves, and every
CUDABENCH_* setting the docs name is one the code reads. (The doctor's
table and the context keys are checked against their code by
test_doctor_rules.cpp and test_context_keys.py.)
"""
import glob
import json
import os
import re

from conftest import ROOT


DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
SETTING = re.compile(r"\bCUDABENCH_[A-Z0-9_]*[A-Z0-9]\b")
CODE_DIRS = ["common", "kernels", "data", "env", "doctor", "models", "bench", "scripts", "tests", "fuzz", "cmake", ".ci"]


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def test_the_readme_is_a_front_door():
    assert len(DOCS) > 5, "docs/ holds the topics the README links to"
    lines = read(DOCS[0]).count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move the detail to docs/"


def test_every_relative_link_resolves():
    bad = []
    for doc in DOCS:
        for target in LINK.findall(read(doc)):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(doc), target))):
                bad.append(f"{os.path.relpath(doc, ROOT)}: {target}")
    assert not bad, "links to nothing:\n" + "\n".join(bad)


def test_every_setting_the_docs_name_is_read_by_the_code():
    code = [read(os.path.join(ROOT, "CMakeLists.txt"))]
    for d in CODE_DIRS:
        for folder, _, names in os.walk(os.path.join(ROOT, d)):
            code += [read(os.path.join(folder, n)) for n in names
                     if n.endswith((".sh", ".py", ".cpp", ".cu", ".h", ".cuh", ".txt", ".cmake", ".in")) or n == "run"]
    known = set(SETTING.findall("\n".join(code)))
    named = {s for doc in DOCS for s in SETTING.findall(read(doc))}
    assert len(named) > 10
    assert not named - known, f"settings the docs name and no code reads: {sorted(named - known)}"


def test_the_docs_list_the_gpu_checks_steps_and_a_first_run_proves_the_headline():
    planner = read(os.path.join(ROOT, "scripts", "cudabench", "commands", "gpu_check.py"))
    table = re.search(r'^STEPS = """\n(.*?)^"""', planner, flags=re.M | re.S)[1]
    steps = [tuple(row.split()[:4]) for row in table.splitlines()]
    budget = json.loads(read(os.path.join(ROOT, "common", "settings.json")))["CUDABENCH_GPU_CHECK_BUDGET"]["default"]
    doc = read(os.path.join(ROOT, "docs", "gpu-check.md"))
    listed = re.findall(r"^\| ([a-z-]+) \| (\d+) \| (\d+) \| `([a-z,-]+)` \|", doc, flags=re.M)
    assert listed == steps, "docs/gpu-check.md's table of steps and STEPS in cudabench/commands/gpu_check.py differ"
    assert f"within a {budget} s\nbudget" in doc and f"within\na {budget} s budget" in read(DOCS[0])
    total = sum(int(est) for _, est, _, _ in steps)
    # Within the budget, less the 20 s kept for the end, with a reserve.
    assert total + 20 <= 0.95 * budget, f"the estimates add up to {total} s of a {budget} s budget"
    assert doc.count(f"add up to {total} s") == 2
    # Whatever else a first run skips, the build, the correctness pass and
    # the headline numbers fit, with a margin.
    names = [name for name, *_ in steps]
    first = sum(int(est) for _, est, _, _ in steps[:names.index("headline") + 1])
    assert first <= 0.9 * budget, f"the steps up to the headline need {first} s of a {budget} s budget"
    assert f"the headline numbers need {first} s" in read(os.path.join(ROOT, "docs", "gpu-check.md"))
    # Each step's estimate is explained there, in STEPS' order.
    explained = re.findall(r"^\| ([a-z-]+) \| \d+ s: ", read(os.path.join(ROOT, "docs", "gpu-check.md")), flags=re.M)
    assert explained == names


def test_the_variant_table_in_the_docs_is_the_codes():
    header = read(os.path.join(ROOT, "kernels", "vector_add.cuh"))
    rows = re.findall(r'X\(\d+, "(cuda_v\d+)", Grid::\w+, [\w<>]+,\s*\\?\s*"([^"]+)"\)', header)
    assert len(rows) >= 8
    doc = read(os.path.join(ROOT, "docs", "methodology.md"))
    assert re.findall(r"^\| (cuda_v\d+) \| (.+) \|$", doc, flags=re.M) == rows
