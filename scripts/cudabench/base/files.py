"""Files read and written the one way every tool does: inputs bounded in
size and never waited on, outputs written whole (through symbolic links)
or not at all, never over an input, and locks that name their holder."""
import contextlib
import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time

from .errors import BadInput, ToolError, one_line
from .paths import SCRIPTS
from .processes import ancestors

MAX_JSON_BYTES = 256 << 20  # a result file larger than this is refused, never read whole


def read_json(path):
    """A JSON file's content; BadInput, naming the file, when it cannot be read."""
    return decode_json(read_bytes(path), path)


def read_bytes(path, what="a JSON file", tail=None):
    """A file's bytes; BadInput naming it when it cannot be read, is not a
    regular file (a FIFO, /dev/zero: never waited on, never read without
    end) or is over MAX_JSON_BYTES. Every input file is read through here.
    tail: only its last `tail` bytes (a log's last words), whatever its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})")
    too_big = BadInput(f"{path}: larger than the {MAX_JSON_BYTES / 2**20:g} MiB limit for {what}")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path}: not a regular file: expected {what}")
        if tail:
            f.seek(max(0, st.st_size - tail))
        elif st.st_size > MAX_JSON_BYTES:
            raise too_big
        try:
            raw = f.read(tail or MAX_JSON_BYTES + 1)  # it may have grown since
        except OSError as e:
            raise BadInput(f"{path}: cannot read ({e.strerror})")
    if not tail and len(raw) > MAX_JSON_BYTES:
        raise too_big
    return raw


def decode_json(raw, path):
    """Bytes read from `path` as JSON; BadInput naming it when they are not
    (not UTF-8, not JSON, nested too deeply). The fuzz target drives this."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}): expected JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON ({e.msg} at line {e.lineno})")
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply")


def refuse_stdout(path, flag):
    """BadInput for an output named "-": a file name is expected, never a file called "-"."""
    if path == "-":
        raise BadInput(f"{flag} -: expected a file name (the report already goes to stdout)")


def is_stream(path):
    """Written in place, never replaced: a device or a pipe, or a file
    descriptor's path (/dev/stdout, /dev/fd/N, /proc/.../fd/N: it may lead
    to pipe:[N], which no path resolution can follow). A regular file under
    /dev (/dev/shm) is a file."""
    if path.startswith(("/dev/fd/", "/dev/std")) or (path.startswith("/proc/") and "/fd/" in path):
        return os.path.exists(path)
    return os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)


def write_target(path):
    """What writing `path` replaces: the file at the end of its symbolic
    links (a chain, a dangling one), so that a link stays a link."""
    target = os.path.realpath(path)
    if os.path.islink(target):  # realpath stops at a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    return target


def temp_beside(target):
    """A new empty file beside `target`, with a short name (target's own
    name may be near the 255-byte limit): its path."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp.")
    os.close(fd)
    os.chmod(tmp, 0o644)
    return tmp


def check_writable(path, flag):
    """BadInput naming `flag` unless a file can be written at `path` (tried
    beside it, then removed): found before any work, not after."""
    refuse_stdout(path, flag)
    if is_stream(path):
        if os.access(path, os.W_OK):
            return
        raise BadInput(f"{flag} {path}: cannot write: permission denied")
    try:
        target = write_target(path)
    except OSError as e:
        raise BadInput(f"{flag} {path}: cannot write: {e.strerror}")
    if os.path.isdir(target):
        raise BadInput(f"{flag} {path}: cannot write: is a directory")
    try:
        os.unlink(temp_beside(target))
    except OSError as e:
        raise BadInput(f"{flag} {path}: cannot write: {e.strerror}")


def same_file(a, b):
    """Whether paths a and b name one file: itself, through symbolic links or a hard link."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_inputs_as_outputs(outputs, inputs):
    """BadInput naming both when writing an output would replace an input
    (the same file by its name, a symbolic or a hard link) or the program
    itself (the script run, or any file of the tools under scripts/).
    outputs: (flag, path) pairs; inputs: paths. Every tool that reads files
    and writes others calls this before any work."""
    for flag, out in outputs:
        for path in inputs:
            if out and path and same_file(out, path):
                raise BadInput(f"{flag} {out}: is the input {path} (an output never replaces an input)")
        program = program_file(out)
        if program:
            raise BadInput(f"{flag} {out}: is the program {program} (an output never replaces the tool)")


def program_file(path):
    """The tool's own file that writing `path` would replace (the script
    this process runs, a file under scripts/, the Python interpreter or a
    module it has loaded, through any link), or ""."""
    if not path or not os.path.exists(path):
        return ""
    loaded = [sys.argv[0] if sys.argv else "", sys.executable] + \
        [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
    for f in loaded:
        if f and same_file(path, f):
            return f
    real = os.path.realpath(path)
    return real if real.startswith(os.path.realpath(SCRIPTS) + os.sep) and os.path.isfile(real) else ""


def make_folder(path, flag):
    """Make the output folder `path` if missing and check that a file can be
    written in it: BadInput naming `flag` and why when not (a regular file
    on the way, a read-only file system, no permission). Before any work."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{flag} {path}: not a folder")
    try:
        os.makedirs(path, exist_ok=True)
        os.unlink(temp_beside(os.path.join(path, "x")))
    except OSError as e:
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)  # a full disk is no bad input: exit 3
        raise (ToolError if full else BadInput)(f"{flag} {path}: cannot write there: {e.strerror or e}")


def write_whole(path, text_or_writer):
    """Write `path` whole or not at all: a temporary file beside it (beside
    the file its symbolic links lead to), fsync'd, then renamed over it;
    removed on any failure or interruption (ToolError, naming the file, when
    the disk is full). `text_or_writer`: the text, or a function that writes
    to the path it is given (matplotlib's savefig)."""
    def emit(target, mode="w"):
        if callable(text_or_writer):
            text_or_writer(target)
        else:
            with open(target, mode, encoding="utf-8") as f:
                f.write(text_or_writer)

    refuse_stdout(path, "output")
    tmp = None
    try:
        if is_stream(path):
            return emit(path, "a")  # /dev/stdout, a pipe, /dev/full: written in place, never replaced
        target = write_target(path)
        tmp = temp_beside(target)
        emit(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        raise ToolError(f"{path}: cannot write: {e.strerror or e}")
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path, doc):
    """A JSON document written whole (write_whole), indented by one."""
    write_whole(path, json.dumps(doc, indent=1) + "\n")


@contextlib.contextmanager
def temporary_folder(prefix):
    """A new folder under $TMPDIR for the tool's work, removed on any exit:
    success, bad input, a failure, a signal (base/processes raises each
    ending signal as an exception, so this runs).
    Kept only when the ToolError that ends the run names a file in it (a
    log to read): that message is the last line, so it names the folder.
    Every temporary folder of the tools is made here."""
    try:
        work = tempfile.mkdtemp(prefix=prefix)
    except OSError as e:
        raise BadInput(f"TMPDIR={tempfile.gettempdir()}: cannot make a temporary folder: {e.strerror or e}")
    keep = False
    try:
        yield work
    except ToolError as e:
        keep = work in str(e)
        raise
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


_HELD_LOCKS = []  # the lock files this process holds: open, so held, until it exits


def hold_lock(lock, what):
    """Hold the file `lock` (flock, never waiting) until this process exits,
    as scripts/regress.sh holds build/regress/.lock: BadInput naming the
    holder when another run holds it. A lock held by an ancestor
    (regress.sh runs ab.py into its own build/regress) is this run's."""
    import fcntl
    try:
        f = open(lock, "a+")
    except OSError as e:
        raise BadInput(f"{lock}: cannot write: {e.strerror}")
    f.seek(0)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = one_line(f.read(200))
        f.close()
        pid = re.match(r"pid (\d+)", holder)
        if pid and int(pid.group(1)) in ancestors():
            return
        raise BadInput(f"another run holds {what} ({holder or 'its pid not yet written'}): wait for it, or stop it")
    try:  # who holds it, for the next one to name; a full disk only leaves it unsaid
        f.truncate(0)
        f.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
    except OSError:
        pass
    _HELD_LOCKS.append(f)
