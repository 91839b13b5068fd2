"""The house rules a reader relies on, checked on the sources.

Rooms depend one way, from the bottom up: common <- kernels, data, process
<- env <- doctor <- models <- train <- bench (tests/ and fuzz/ may use any);
process control (signals, child groups, the load guard) is below env/. An include that
crosses rooms names its room ("env/probe.h"), so both the reader and this
test know where it points. No function is over 80 lines but the data
tables listed below (lizard measures them). And each contract that is data
lives in one file the others read: the ending signals, the settings, the
progress line's form.
"""
import os
import re

import pytest

from conftest import ROOT


# Each room's level: a room may include its own files and those of lower levels.
LEVEL = {"common": 0, "kernels": 1, "data": 1, "process": 1, "env": 2, "doctor": 3, "models": 4, "train": 5, "bench": 6}
SOURCES = (".h", ".hpp", ".cuh", ".cpp", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAX_LINES = 80
# Functions that are data tables, longer by nature: (file, function name).
TABLES = {("doctor/explain.cpp", "cudabench::doctor::scenarios")}


def source_files(rooms):
    for room in rooms:
        for folder, _, names in os.walk(os.path.join(ROOT, room)):
            for n in sorted(names):
                if n.endswith(SOURCES):
                    yield room, os.path.join(folder, n)


def includes_across_rooms():
    """(room, file, included room or None for a bare name that is not beside it, include)."""
    for room, path in source_files(LEVEL):
        with open(path, errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if os.path.exists(os.path.join(os.path.dirname(path), inc)):
                continue  # beside it (or below it), in its own room
            first = inc.split("/")[0]
            yield room, os.path.relpath(path, ROOT), first if first in LEVEL else None, inc


def test_includes_across_rooms_name_their_room():
    generated = {"build_info.h", "context_keys_json.h", "scenarios_json.h", "stacks_json.h"}  # env's and the doctor's, made by CMake into the build folder
    bad = [f"{p}: #include \"{inc}\"" for _, p, to, inc in includes_across_rooms() if to is None and inc not in generated]
    assert not bad, "includes that name no room and are not beside their file:\n" + "\n".join(bad)


def test_rooms_depend_one_way():
    bad = [f"{p} ({room}) includes {inc} ({to})" for room, p, to, inc in includes_across_rooms()
           if to is not None and to != room and LEVEL[to] >= LEVEL[room]]
    assert not bad, "includes that point up or sideways:\n" + "\n".join(bad)


def test_the_checks_see_the_rooms():
    # A room that moved or was renamed would make the checks above pass on nothing.
    for room in LEVEL:
        assert os.path.isdir(os.path.join(ROOT, room)), room
    assert sum(1 for _ in includes_across_rooms()) > 40


def test_no_function_is_over_80_lines():
    lizard = pytest.importorskip("lizard", reason="lizard measures function length (scripts/requirements-test.txt)")
    long = []
    rooms = list(LEVEL) + ["tests", "fuzz", "scripts"]
    for room in rooms:
        for folder, _, names in os.walk(os.path.join(ROOT, room)):
            for n in sorted(names):
                if not n.endswith(SOURCES + (".py",)):
                    continue
                path = os.path.join(folder, n)
                rel = os.path.relpath(path, ROOT)
                for fn in lizard.analyze_file(path).function_list:
                    if fn.length > MAX_LINES and (rel, fn.name) not in TABLES:
                        long.append(f"{rel}:{fn.start_line} {fn.name}: {fn.length} lines")
    assert not long, f"functions over {MAX_LINES} lines (split them by what they decide):\n" + "\n".join(long)


# ---- each contract written once: what is data is read from its one file ----
CODE_ROOMS = list(LEVEL) + ["scripts", "fuzz", "action.yml"]
CODE = SOURCES + (".py", ".sh", ".yml", ".txt", ".in")


def code_files():
    """(relative path, text) of every source, script and workflow but the tests'."""
    for top in CODE_ROOMS:
        path = os.path.join(ROOT, top)
        walk = os.walk(path) if os.path.isdir(path) else [(ROOT, [], [top])]
        for folder, _, names in walk:
            for n in sorted(names):
                if n.endswith(CODE) or n == "CMakeLists.txt":
                    p = os.path.join(folder, n)
                    yield os.path.relpath(p, ROOT), open(p, errors="replace").read()


def ending_signal_names():
    with open(os.path.join(ROOT, "process", "ending_signals.txt")) as f:
        return " ".join(line for line in f if not line.startswith("#")).split()


def test_the_ending_signals_are_listed_in_one_file():
    # C++ (CMake makes kEndingSignals), the Python tools and lib.sh read
    # process/ending_signals.txt; a file naming three of them is a copy.
    names = ending_signal_names()
    assert {"INT", "TERM", "HUP"} <= set(names)
    named = re.compile(r"\b(?:SIG)?(%s)\b" % "|".join(names))
    copies = [f"{p}: {sorted(set(named.findall(t)))}" for p, t in code_files()
              if p != os.path.join("process", "ending_signals.txt") and len(set(named.findall(t))) >= 3]
    assert not copies, "files that list the ending signals themselves (read process/ending_signals.txt):\n" + "\n".join(copies)


def test_the_progress_line_has_one_form():
    # "<tool>: 3/8 <unit> done, 40 s so far, about 1m05s left": base/progress.py
    # prints it; lib.sh's say_progress and build_progress go through it.
    form = re.compile(r"done, .{0,40}so far")
    copies = [p for p, t in code_files() if form.search(t)]
    assert copies == [os.path.join("scripts", "cudabench", "base", "progress.py")], copies


def test_the_settings_table_is_read_in_one_place_per_language():
    # common/settings.json: CMake makes C++'s table of it, base/settings.py
    # reads it for the Python tools, and lib.sh asks base/settings.py.
    import json
    table = json.load(open(os.path.join(ROOT, "common", "settings.json")))
    readers = sorted(p for p, t in code_files() if re.search(r"\"settings\.json\"|\}/settings\.json|common/settings\.json\"", t))
    assert readers == [os.path.join("common", "CMakeLists.txt"), os.path.join("scripts", "cudabench", "base", "settings.py")], readers
    texts = [(n, row["expected"]) for n, row in table.items()]
    copies = [f"{p}: {n}" for p, t in code_files() for n, e in texts if e in t]
    assert not copies, "a setting's rule written again outside common/settings.json:\n" + "\n".join(copies)


def test_process_control_lives_in_its_room():
    # Signal handlers, process groups and killing them are process/'s; the
    # rest of the C++ calls it (standard_output.h only ignores SIGPIPE and
    # SIGXFSZ for its writes).
    control = re.compile(r"\bsigaction\s*\(|\bsignal\s*\(SIG[A-Z]+, *[a-z]|\bsetpgid\s*\(|\bkill\s*\(\s*-")
    outside = [os.path.relpath(p, ROOT) for room, p in source_files(LEVEL)
               if room != "process" and control.search(open(p, errors="replace").read())]
    assert not outside, "process control outside process/:\n" + "\n".join(outside)
    assert {"ending.h", "child.cpp", "load_guard.cpp"} <= set(os.listdir(os.path.join(ROOT, "process")))
