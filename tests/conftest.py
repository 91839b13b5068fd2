"""What every Python test shares: where the checkout and the build are,
the programs in them, and running a program the way a user does (its exit
code, its output, a deadline). Tests take these from here and never from
one another."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# The build under test: CTest passes its own; by hand, the checkout's build/.
BUILD = os.path.abspath(os.environ.get("CUDABENCH_BUILD_DIR") or os.path.join(ROOT, "build"))
BENCH = os.path.join(BUILD, "bench")
TRAIN = os.path.join(BUILD, "train")
FAKES = os.path.join(BUILD, "fakes")  # the fake libcuda and NVML (tests/fakes)
PY = sys.executable


def script(name):
    """The path of a script under scripts/ ("compare.py", "fleet/fleet.sh")."""
    return os.path.join(SCRIPTS, name)


def run(cmd, env=None, timeout=300, **kw):
    """Run a program as a user would: its CompletedProcess, output as text.
    env: settings added to this process's environment."""
    return subprocess.run(cmd, env={**os.environ, **(env or {})} if env is not None else None,
                          capture_output=True, text=True, timeout=timeout, **kw)


def run_script(name, *args, env=None, timeout=300, **kw):
    """Run scripts/<name> (a .py with this python, a .sh with bash)."""
    interp = [PY] if name.endswith(".py") else ["bash"]
    return run(interp + [script(name), *map(str, args)], env=env, timeout=timeout, **kw)
