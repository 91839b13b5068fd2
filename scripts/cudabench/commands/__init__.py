"""The registry of the Python tools: one module (or folder) per command,
each with an entry() that is its program. scripts/tool.py COMMAND [ARGS]
runs any of them; scripts/<command>.py is a one-line shortcut to the same.
No command imports another: what two share lives in a layer below."""
import ast
import importlib
import os
import sys

from ..base.cli import run_tool, say_error
from ..base.errors import EXIT_TOOL, BadInput, one_line
from ..base.paths import SCRIPTS

# Every command, by the name its module has and its users type.
COMMANDS = ("ab", "compare", "context_keys", "ddp_scaling", "driver_probe", "expect_rows", "fleet", "gpu_check",
            "gpu_summary", "history", "interface_listing", "matrix", "report", "samples", "stacks",
            "train_mnist")
HERE = os.path.dirname(os.path.abspath(__file__))


def summary(name):
    """The first sentence of the command's docstring, read without importing it."""
    path = os.path.join(HERE, name + ".py")
    path = path if os.path.exists(path) else os.path.join(HERE, name, "__init__.py")
    with open(path) as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def usage():
    lines = ["usage: scripts/tool.py COMMAND [ARGS...]   (COMMAND --help for its own)", "", "commands:"]
    lines += [f"  {n:<18} {summary(n)}" for n in COMMANDS]
    return "\n".join(lines)


def run_command(name, argv):
    """Run the command `name` with `argv` as its arguments: its exit code."""
    sys.argv = [os.path.join(SCRIPTS, name + ".py")] + list(argv)  # what ensure_venv runs again
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except Exception as e:  # noqa: BLE001 (a broken checkout: one line, never a traceback)
        say_error(name, f"cannot start: {type(e).__name__}: {one_line(e)}")
        return EXIT_TOOL
    return module.entry()


def run(path):
    """A shortcut's body: scripts/<command>.py runs that command and exits with its code."""
    sys.exit(run_command(os.path.basename(path)[:-len(".py")], sys.argv[1:]))


def main(argv):
    """scripts/tool.py: the command's own exit code; 0 the list (--help); 2 no or an unknown command."""
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])

    def listing():
        if argv[:1] not in (["-h"], ["--help"]):
            said = f"unknown command '{argv[0]}'" if argv else "no command"
            raise BadInput(f"{said}: one of {', '.join(COMMANDS)} (--help says what each does)")
        print(usage())
        return 0
    return run_tool("tool", listing)
