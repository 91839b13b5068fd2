"""The command-line conventions: options parsed once by argparse with
misuse in one line (exit 2), numbers checked against their range, standard
output checked, and every failure mapped to its exit code (run_tool)."""
import argparse
import errno
import os
import signal
import sys

from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_TOOL, BadInput, ToolError, one_line
from .processes import Terminated, ending_signals, raise_interrupted, raise_terminated
from .settings import check_all
from .text import visible


def ensure_venv(tool="compare", modules=("scipy.stats",)):
    """Make sure `modules` can be imported: re-run this script with the
    project's venv when the running python lacks one, or raise ToolError
    with one line saying how to get it."""
    import importlib
    try:
        for m in modules:
            importlib.import_module(m)
        return
    except ImportError as e:
        missing = e.name or modules[0]
    cache = os.environ.get("CUDABENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cudabench")
    venv = os.environ.get("CUDABENCH_VENV") or os.path.join(cache, "venv")
    py = os.path.join(venv, "bin", "python")
    if os.access(py, os.X_OK) and not os.environ.get("CUDABENCH_REEXEC"):
        os.environ["CUDABENCH_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(py, [py, os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    raise ToolError(f"needs {missing.split('.')[0]}, which {sys.executable} lacks: run scripts/setup.sh "
                    f"(it makes the project's venv, {venv}) or run with that venv's python")


def output_folder(path):
    """argparse type of an --out folder: a name, never "" or "-"."""
    if path in ("", "-"):
        raise argparse.ArgumentTypeError(f"'{path}': expected a folder name")
    return path


class StdoutError(Exception):
    """Standard output could not be written (a full disk, closed, a reader gone)."""


class _CheckedStdout:
    """sys.stdout whose failures are StdoutError, also when it is closed
    (Python's print() then writes nothing and says nothing), and through
    which no control character but a newline, a tab or DEL (which drives no
    terminal, and json.dumps writes as it is) reaches the terminal
    (text.visible: a label or a path from an input cannot drive it)."""

    def __init__(self, inner):
        self.inner = inner

    def _do(self, what, *args):
        if self.inner is None:
            raise StdoutError(OSError(errno.EBADF, "it is closed"))
        try:
            return getattr(self.inner, what)(*args)
        except OSError as e:
            raise StdoutError(e) from None

    def write(self, text):
        return self._do("write", visible(text, keep="\n\t\x7f"))

    def flush(self):
        return self._do("flush") if self.inner is not None else None

    def __getattr__(self, name):
        return getattr(self.inner, name)


def stdout_failed(tool, e):
    """The exit for standard output that failed: a reader that went away
    ends the tool quietly, as SIGPIPE would (141); anything else is exit 3
    in one line. The descriptor then points at /dev/null, so Python's own
    flush at exit says nothing more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
    err = e.args[0] if e.args else e
    if getattr(err, "errno", None) == errno.EPIPE:
        return 128 + signal.SIGPIPE
    print(f"{tool}: standard output: cannot write: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
    return EXIT_TOOL


def print_usage(tool, text):
    """A tool's --help text on standard output: 0, or 3 when it cannot be written."""
    try:
        if sys.stdout is None:
            raise OSError(errno.EBADF, "it is closed")
        sys.stdout.write(text.strip() + "\n")
        sys.stdout.flush()
    except (OSError, StdoutError) as e:
        return stdout_failed(tool, e if isinstance(e, StdoutError) else StdoutError(e))
    return EXIT_OK


class _VisibleStderr:
    """sys.stderr through which no control character but a newline or a tab
    reaches the terminal (text.visible). `raw` is the stream itself, for
    base.progress's own \\r and erase-line on a terminal."""

    def __init__(self, inner):
        self.raw = inner

    def write(self, text):
        return self.raw.write(visible(text, keep="\n\t"))

    def __getattr__(self, name):
        return getattr(self.raw, name)


def say_error(tool, message):
    """The one stderr line of a failure: `tool: message`, a newline or any
    other control character in it (from a path, a label, a file) shown as
    an escape (text.visible), so that it stays one line."""
    print(f"{tool}: {visible(str(message).strip())}", file=sys.stderr)


def end_by_exception():
    """Each ending signal still at its default raised where the program is
    (^C as Python's KeyboardInterrupt), so that `finally` blocks run."""
    for sig in ending_signals():
        if sig != signal.SIGINT and signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, raise_interrupted)


def run_tool(tool, body):
    """Run body() and map every failure to its own exit code, in one line:
    2 bad input, 3 the tool could not run (never 1, which means slower),
    128 + the signal when stopped. Standard output is checked (stdout_failed).
    No traceback reaches the terminal; CUDABENCH_DEBUG=1 prints it after the line.
    The numeric settings every tool reads (common/settings.json) are checked
    first, before any work."""
    if not isinstance(sys.stdout, _CheckedStdout):
        sys.stdout = _CheckedStdout(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, _VisibleStderr):
        sys.stderr = _VisibleStderr(sys.stderr)
    try:
        end_by_exception()
        check_all()
        rc = body()
        sys.stdout.flush()
        return rc
    except StdoutError as e:
        return stdout_failed(tool, e)
    except BadInput as e:
        say_error(tool, e)
        return EXIT_BAD_INPUT
    except ToolError as e:
        say_error(tool, e)
        return EXIT_TOOL
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Terminated as e:
        print(f"{tool}: stopped by signal {e.signum}", file=sys.stderr)
        return 128 + e.signum
    except Exception as e:  # an internal error must not read as a regression
        say_error(tool, f"internal error: {type(e).__name__}: {one_line(e)}")
        if os.environ.get("CUDABENCH_DEBUG") == "1":
            import traceback
            traceback.print_exc()
        return EXIT_TOOL


def bounded(lo, hi, kind=int, ends="[]"):
    """The argparse action of a count or number option: a `kind` (int or
    float) from lo to hi, each end in or out as `ends` says ("[]", "(]",
    "()"); anything else is one line naming the option, the value and the
    range (exit 2). The range is added to the option's --help. Every count
    and number the scripts take is parsed here."""
    what = f"{'a whole number' if kind is int else 'a number'} in {ends[0]}{lo:g}, {hi:g}{ends[1]}"

    def fits(x):
        return (lo < x if ends[0] == "(" else lo <= x) and (x < hi if ends[1] == ")" else x <= hi)

    class Bounded(argparse.Action):
        def __init__(self, *args, **kw):
            kw["help"] = f"{kw.get('help') or ''} ({what})".lstrip()
            super().__init__(*args, **kw)

        def __call__(self, parser, namespace, value, option=None):
            try:
                x = kind(value)
            except ValueError:
                x = None
            if x is None or not fits(x):
                parser.error(f"{option or self.metavar or self.dest} {value if x is None else x}: expected {what}")
            setattr(namespace, self.dest, x)
    return Bounded


class ArgParser(argparse.ArgumentParser):
    """argparse with misuse in one line (`tool: error: ... (see --help)`),
    exit 2, instead of the usage block."""

    def error(self, message):
        say_error(self.prog, f"{message} (see --help)")
        sys.exit(EXIT_BAD_INPUT)

    def print_help(self, file=None):
        """--help on standard output, checked: exit 3 when it cannot be written."""
        if print_usage(self.prog, self.format_help()):
            sys.exit(EXIT_TOOL)
