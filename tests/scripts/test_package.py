"""The house rules of the Python tools, checked on the sources, as
tests/test_layout.py checks the C++ rooms.

scripts/cudabench is one package in layers that import only downward:
base (files, processes, the command-line conventions) <- results (the
Google Benchmark JSON, statistics, context, verdicts) <- sampling (the
driver probe, the sampler that runs bench processes) and models (row
families and the facts that explain them, references, the reports) <-
commands (one module, or one folder, per tool). A module may import its own
layer and those below, never above; no command imports another command;
and no import cycle is allowed, not even one hidden in a function. scripts/tool.py COMMAND runs
any command of the registry (commands/__init__.py), and scripts/<command>.py
is one line that does the same; nothing edits sys.path; no module is over 500 lines and no
function over 80.
"""
import ast
import os
import re

from conftest import ROOT, SCRIPTS

PACKAGE = os.path.join(SCRIPTS, "cudabench")
LAYERS = {"base": 0, "results": 1, "sampling": 2, "models": 2, "commands": 3}
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*\+?=")


def modules():
    """{dotted name: path} of every module of the package."""
    out = {}
    for folder, _, names in os.walk(PACKAGE):
        for n in sorted(names):
            if n.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, n), SCRIPTS)[:-3].replace(os.sep, ".")
                out[rel.removesuffix(".__init__")] = os.path.join(folder, n)
    return out


def imports(name, path):
    """The package's modules that module `name` imports, wherever the import is (a function too)."""
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("cudabench")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.startswith("cudabench"):
                found |= {f"{base}.{a.name}" for a in node.names} | {base}
    known = modules()
    return {m for m in found if m in known and m != name and m != "cudabench"}


def layer(name):
    parts = name.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_every_module_is_in_a_layer():
    stray = [m for m in modules() if m != "cudabench" and layer(m) is None]
    assert not stray, f"modules outside the layers {list(LAYERS)}: {stray}"
    assert len(modules()) > 20  # the checks below would pass on nothing


def test_modules_import_only_their_own_layer_or_lower():
    bad = [f"{m} ({m.split('.')[1]}) imports {d} ({d.split('.')[1]})"
           for m, p in modules().items() for d in imports(m, p)
           if layer(m) is not None and layer(d) is not None and layer(d) > layer(m)]
    assert not bad, "imports that point up:\n" + "\n".join(bad)


def command_of(name):
    """The tool a module of cudabench.commands belongs to (its module, or its folder), else None."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "commands" else None


def test_no_command_imports_another_command():
    bad = [f"{m} imports {d}" for m, p in modules().items() for d in imports(m, p)
           if command_of(m) and command_of(d) and command_of(d) != command_of(m)]
    assert not bad, "commands that import another (move what they share to a layer below):\n" + "\n".join(bad)
    assert command_of("cudabench.commands.fleet.merge") == "fleet" != command_of("cudabench.commands.ab")


def test_no_command_runs_another_through_the_registry():
    # run_command/run are for the entry points; a command asking another's
    # program for its work would bring back the made-up argument lists.
    bad = []
    for m, p in modules().items():
        if command_of(m) and m != "cudabench.commands":
            text = open(p).read()
            bad += [f"{m}: {w}" for w in ("run_command(", "import_module(", "commands import run") if w in text]
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    graph = {m: imports(m, p) for m, p in modules().items()}
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open":
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d, stack + [d])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_module_is_over_500_lines():
    long = {m: n for m, p in modules().items() if (n := len(open(p).read().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by what they hold): {long}"


def function_lines():
    """(module.function, its length in lines) for every function of the package, nested ones too."""
    for m, p in modules().items():
        for node in ast.walk(ast.parse(open(p).read())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{m}.{node.name}", node.end_lineno - node.lineno + 1


def test_no_function_is_over_80_lines():
    long = {f: n for f, n in function_lines() if n > MAX_FUNCTION_LINES}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them by step): {long}"


def test_nothing_edits_sys_path():
    edits = []
    for room in ("scripts", "tests", "fuzz"):
        for folder, _, names in os.walk(os.path.join(ROOT, room)):
            for n in names:
                path = os.path.join(folder, n)
                if n.endswith(".py") and PATH_EDIT.search(open(path).read()):
                    edits.append(os.path.relpath(path, ROOT))
    assert not edits, f"sys.path edited in {edits}: import from the package (tests/pytest.ini sets the path)"


def registry():
    tree = ast.parse(open(os.path.join(PACKAGE, "commands", "__init__.py")).read())
    found = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "COMMANDS"]
    return set(ast.literal_eval(found[0]))


def test_the_registry_names_every_command_and_each_shortcut_is_one_line():
    commands = {m.split(".")[2] for m in modules() if m.startswith("cudabench.commands.")}
    assert registry() == commands, "commands/__init__.py's COMMANDS: one row per command module"
    shortcuts = {n[:-3] for n in os.listdir(SCRIPTS) if n.endswith(".py")} - {"tool"}
    assert shortcuts == commands, "one scripts/<command>.py per command, and scripts/tool.py"
    for n in shortcuts:
        lines = open(os.path.join(SCRIPTS, n + ".py")).read().splitlines()
        assert lines[0] == "#!/usr/bin/env python3" and len(lines) == 2, n
        assert lines[1].startswith("from cudabench.commands import run; run(__file__)"), n
    assert not [f for f in os.listdir(os.path.join(SCRIPTS, "fleet")) if f.endswith(".py")], "no copy or link of a shortcut"


def test_every_command_has_an_entry():
    for name in registry():
        path = os.path.join(PACKAGE, "commands", name + ".py")
        path = path if os.path.exists(path) else os.path.join(PACKAGE, "commands", name, "__init__.py")
        tree = ast.parse(open(path).read())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "entry" for n in tree.body), name


def test_tests_import_no_other_test():
    bad = []
    for folder, _, names in os.walk(os.path.join(ROOT, "tests")):
        for n in names:
            if n.endswith(".py"):
                tree = ast.parse(open(os.path.join(folder, n)).read())
                for node in ast.walk(tree):
                    mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                        [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                    bad += [f"{n} imports {m}" for m in mods if m.split(".")[0].startswith("test_")]
    assert not bad, "tests that import tests (share through conftest.py or a helper module):\n" + "\n".join(bad)
