"""Which stack this machine gets: the CUDA toolkit that builds the kernels
and the LibTorch the set-up installs, chosen to fit the NVIDIA driver.
The table, doctor/stacks.json, is the only place the choices are written down.

    stacks.py plan [--stack CUDA:TORCH]    the stack, as key=value lines
    stacks.py matrix                       the matrix's default stacks, one CUDA:TORCH a line
    stacks.py table                        the table, as Markdown (docs/stacks.md holds it)

Standard library only: it runs before the project's venv exists.

The rule. The driver's CUDA comes from libcuda's cuDriverGetVersion (through
dlopen, in a child with a deadline: driver_probe.py; nvidia-smi is not always
there). LibTorch: the newest in STACKS whose
CUDA the driver runs (CUDA 13.x needs a 13.x driver; CUDA 12.x runs on any
12.x driver, by minor-version compatibility); with no driver, the newest.
Kernels: the system's nvcc when the driver can run what it builds (its CUDA
major, by minor-version compatibility): CUDACXX, PATH, /usr/local/cuda, or a
side-by-side /usr/local/cuda-X.Y. When it cannot, or there is none, a
toolkit from NVIDIA's PyPI wheels of the driver's CUDA, installed under the
cache. PyPI carries nvcc only from CUDA 13.0 on (nvidia-cuda-nvcc-cu12, 12.0
to 12.9, holds ptxas and libnvvm but no nvcc), so on a 12.x driver the
kernels are built with the system's nvcc (or PyPI's 13.0) anyway: they
cannot run there, LibTorch's GPU part can, and the plan says so. LibTorch
needs some toolkit at configure time either way (its CMake config).

Settings: CUDABENCH_STACK=CUDA:TORCH names the whole stack, as --stack does
(scripts/matrix.sh sets it); CUDABENCH_TORCH pins the LibTorch (a version in
STACKS), the toolkit still chosen by the rule; Torch_DIR
(a LibTorch of your own) or CUDABENCH_NO_TORCH=1 means none is installed;
CUDACXX names the system's nvcc (else nvcc on PATH, else /usr/local/cuda,
else /usr/local/cuda-X.Y; CUDABENCH_NVCC_SEARCH); CUDABENCH_CACHE, CUDABENCH_VENV.

Exit codes: 0 a plan; 2 a driver too old for every stack, or a setting or
--stack the table does not know (one line naming it).
"""
import glob
import json
import os
import re
import sys
from collections import namedtuple

from ..sampling import driver
from ..base.cli import run_tool
from ..base.paths import ROOT

# The table: doctor/stacks.json (bench's doctor reads the same file for
# the builds it recommends). torch: the PyPI version. cuda: the CUDA it is
# built with. driver_cuda: the oldest driver CUDA that runs it
# (cuDriverGetVersion's number); oldest_driver: the oldest Linux driver that
# gives that CUDA; sass, ptx: the GPU architectures its kernels cover.
Stack = namedtuple("Stack", "torch cuda driver_cuda oldest_driver sass ptx")
with open(os.path.join(ROOT, "doctor", "stacks.json")) as _f:
    STACKS = tuple(Stack(*(s[k] for k in Stack._fields)) for s in json.load(_f)["stacks"])  # newest first
# The oldest CUDA whose PyPI wheels carry nvcc, and the cuda-toolkit extras
# that give nvcc, the runtime and the libraries LibTorch's CMake config wants.
PYPI_NVCC_SINCE = 13000
TOOLKIT_EXTRAS = "nvcc,cudart,cublas,cccl,crt,culibos,nvvm,nvrtc,curand,cufft"


class Refused(Exception):
    """A plan that cannot be made: one line for the user, exit 2."""


def cuda_str(v):
    return f"{v // 1000}.{v % 1000 // 10}"


def major(version):
    return int(version.split(".")[0])


def read_driver():
    """(cuDriverGetVersion's number, the driver's version string), or (None, "")
    for no driver: from driver_probe.py, in a child with a deadline (a stuck
    GPU hangs libcuda). A libcuda that hung or crashed is no driver too, and
    a third item says so: (None, "", "libcuda hung in cuInit for 15 s: ...")."""
    found = driver.probe_in_child(driver.probe_seconds())
    if "why" in found:
        return None, "", found["why"]
    if not found.get("libcuda") or found.get("cuda_version", 0) <= 0:
        return None, ""  # the toolkit's stub answers CUDA_ERROR_STUB_LIBRARY
    return found["cuda_version"], found.get("driver_version") or module_version()


def module_version():
    """The kernel module's version, or ""."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", f.read())
            return m.group(1) if m else ""
    except OSError:
        return ""


# Where else to look after CUDACXX and PATH: the default toolkit, then those
# installed side by side (newest first). CUDABENCH_NVCC_SEARCH replaces the
# list (':'-separated globs; the tests make it empty).
NVCC_SEARCH = "/usr/local/cuda/bin/nvcc:/usr/local/cuda-*/bin/nvcc"


def nvcc_version(nvcc):
    """ "13.0.88" from nvcc --version, or None."""
    try:
        rc, out, _ = driver.run_bounded([nvcc, "--version"], 30)
    except OSError:
        return None
    if rc is None:
        return None
    m = re.search(r"release \S+ V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def system_nvcc(driver_cuda=None):
    """(the system's nvcc, its version "13.0.88"), or (None, None): the
    first of CUDACXX, PATH and NVCC_SEARCH that the driver can run, else
    the first found."""
    candidates = [os.environ.get("CUDACXX", "")]
    candidates += [os.path.join(d, "nvcc") for d in os.environ.get("PATH", "").split(os.pathsep)]
    def numbers(path):  # cuda-12.10 after cuda-12.9
        return [int(x) for x in re.findall(r"\d+", path)]
    for pattern in os.environ.get("CUDABENCH_NVCC_SEARCH", NVCC_SEARCH).split(":"):
        candidates += sorted(glob.glob(pattern), key=numbers, reverse=True) if pattern else []
    found = []
    for nvcc in candidates:
        if nvcc and os.access(nvcc, os.X_OK) and os.path.realpath(nvcc) not in (f[0] for f in found):
            version = nvcc_version(nvcc)
            if version:  # the real path: a link's folder is not the toolkit
                found.append((os.path.realpath(nvcc), version))
    runnable = [f for f in found if driver_runs(driver_cuda, major(f[1]) * 1000)]
    return (runnable or found or [(None, None)])[0]


def by_torch(version, why):
    for s in STACKS:
        if s.torch == version:
            return s
    raise Refused(f"{why}: LibTorch {version} is not in the table ({', '.join(s.torch for s in STACKS)})")


def driver_runs(driver_cuda, needed):
    """Whether the driver runs code that needs driver CUDA `needed` (no driver: assume so)."""
    return driver_cuda is None or driver_cuda >= needed


def runs(stack, driver_cuda):
    return driver_runs(driver_cuda, stack.driver_cuda)


def driver_words(driver_cuda, driver):
    return f"driver {driver or '(version unknown)'} supports CUDA {cuda_str(driver_cuda)}"


def choose_torch(driver_cuda, driver, env):
    """(the stack whose LibTorch to install, why), or Refused."""
    if env.get("CUDABENCH_TORCH"):
        s = by_torch(env["CUDABENCH_TORCH"], "CUDABENCH_TORCH")
        note = "" if runs(s, driver_cuda) else f", which this driver cannot run ({driver_words(driver_cuda, driver)})"
        return s, f"CUDABENCH_TORCH={s.torch} pins LibTorch {s.torch} (CUDA {s.cuda}){note}"
    if driver_cuda is None:
        s = STACKS[0]
        return s, f"no NVIDIA driver: the newest, LibTorch {s.torch} (CUDA {s.cuda})"
    for s in STACKS:
        if runs(s, driver_cuda):
            return s, f"{driver_words(driver_cuda, driver)}: LibTorch {s.torch} (CUDA {s.cuda})"
    oldest = STACKS[-1]
    raise Refused(f"{driver_words(driver_cuda, driver)}, older than every stack: the oldest, LibTorch "
                  f"{oldest.torch} (CUDA {oldest.cuda}), needs driver {oldest.oldest_driver} or newer "
                  f"(CUDA {cuda_str(oldest.driver_cuda)}); update the driver, or pin one with "
                  f"CUDABENCH_TORCH={oldest.torch} (its GPU part will not run)")


def number(version):
    """ "13.0.88" -> 13000."""
    parts = [int(p) for p in version.split(".")[:2]]
    return parts[0] * 1000 + parts[1] * 10


def pypi(cuda, why):
    return "pypi", cuda, f"kernels with CUDA {cuda} from PyPI ({why})"


def choose_toolkit(stack, driver_cuda, nvcc, version, want=None, source="--stack"):
    """("system" or "pypi", its CUDA: "13.0.88" or "13.0", why). want: the
    CUDA a stack named in `source` asks for."""
    system = f"{nvcc} (CUDA {version})"
    if want:
        if nvcc and version.startswith(want + "."):
            return "system", version, f"kernels with {system}"
        if number(want) >= PYPI_NVCC_SINCE:
            return pypi(want, "named")
        have = f"the system's nvcc is CUDA {version}" if nvcc else "there is no system nvcc"
        raise Refused(f"{source} {want}:{stack.torch}: no nvcc of CUDA {want} ({have}, and PyPI "
                      f"carries nvcc only from CUDA {cuda_str(PYPI_NVCC_SINCE)} on)")
    if nvcc and driver_runs(driver_cuda, major(version) * 1000):
        return "system", version, f"kernels with {system}"
    target = driver_cuda or number(stack.cuda)
    why = f"the system's nvcc is CUDA {version}, which this driver cannot run" if nvcc else "no system nvcc"
    if target >= PYPI_NVCC_SINCE:
        return pypi(cuda_str(target), why)
    cannot = (f"they cannot run on this driver: PyPI has no nvcc for CUDA {cuda_str(target)} (install a CUDA "
              f"{major(cuda_str(target))}.x toolkit, CUDACXX=<its nvcc>); train --device cuda runs on LibTorch's"
              ) if driver_cuda else f"PyPI has no nvcc for CUDA {cuda_str(target)}"
    if nvcc:
        return "system", version, f"kernels with {system}, but {cannot}"
    return pypi(cuda_str(PYPI_NVCC_SINCE), cannot)


def plan(env, stack_arg=None, driver=None, nvcc=None, source="--stack"):
    """The plan as an ordered dict of strings, or Refused. source: where
    stack_arg came from, for the message."""
    driver_cuda, driver_version, *fault = driver if driver else read_driver()
    nvcc_path, nvcc_version = nvcc if nvcc else system_nvcc(driver_cuda)
    want_cuda = None
    own_torch = bool(env.get("Torch_DIR")) or env.get("CUDABENCH_NO_TORCH") == "1"
    if stack_arg:
        want_cuda, _, torch = stack_arg.partition(":")
        if not re.fullmatch(r"\d+\.\d+", want_cuda) or not torch:
            raise Refused(f"{source} {stack_arg}: expected CUDA:TORCH, e.g. 13.0:2.11.0")
        stack = by_torch(torch, f"{source} {stack_arg}")
        why = f"{source} {stack_arg}: LibTorch {stack.torch} (CUDA {stack.cuda})"
        if not runs(stack, driver_cuda):
            why += f", which this driver cannot run ({driver_words(driver_cuda, driver_version)})"
        own_torch = False
    else:  # with a LibTorch of your own, the pin has nothing to pin
        pin = {} if own_torch else env
        stack, why = choose_torch(driver_cuda, driver_version, pin)
    kind, tk_version, tk_why = choose_toolkit(stack, driver_cuda, nvcc_path, nvcc_version, want_cuda, source)
    tk_cuda = ".".join(tk_version.split(".")[:2])
    cache = env.get("CUDABENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cudabench")
    pypi_root = os.path.join(cache, "toolkits", f"cuda-{tk_cuda}")
    torch = "" if own_torch else stack.torch
    name = f"cuda{tk_cuda}-" + (f"torch{torch}" if torch else "owntorch" if env.get("Torch_DIR") else "notorch")
    # A named stack always gets its own venv: one shared venv would hold
    # the LibTorch of whichever stack was installed last.
    venv = (not stack_arg and env.get("CUDABENCH_VENV")) or os.path.join(cache, "stacks", name, "venv")
    if own_torch:
        why = ("Torch_DIR names your own LibTorch" if env.get("Torch_DIR") else "CUDABENCH_NO_TORCH=1: no LibTorch")
    if fault:
        why = f"{fault[0]}, so the GPU is counted out; {why}"
    return {
        "stack": name,
        "torch": torch,
        "torch_cuda": stack.cuda if torch else "",
        "toolkit": kind,
        "toolkit_version": tk_version,
        "toolkit_cuda": tk_cuda,
        # setup.sh assembles a PyPI toolkit's root in its own venv there.
        "toolkit_root": os.path.join(pypi_root, "root") if kind == "pypi" else os.path.dirname(os.path.dirname(nvcc_path)),
        "toolkit_pip": f"cuda-toolkit[{TOOLKIT_EXTRAS}]=={tk_cuda}.*" if kind == "pypi" else "",
        "venv": venv,
        "driver": driver_version if driver_cuda else "none",
        "driver_cuda": cuda_str(driver_cuda) if driver_cuda else "none",
        "why": f"{why}, {tk_why}",
    }


def matrix_stacks(env):
    """The chosen stack, then the newest of the other LibTorch CUDA major:
    one the driver runs if there is one (else the newest, whose GPU rows the
    matrix then shows as not run, with the reason), as CUDA:TORCH lines."""
    driver = read_driver()
    nvcc = system_nvcc(driver[0])
    env = {k: v for k, v in env.items() if k not in ("Torch_DIR", "CUDABENCH_NO_TORCH")}
    first = plan(env, driver=driver, nvcc=nvcc)
    chosen = by_torch(first["torch"], "the chosen stack")
    others = [s for s in STACKS if major(s.cuda) != major(chosen.cuda)]
    out = [f"{first['toolkit_cuda']}:{chosen.torch}"]
    if others:
        other = next((s for s in others if runs(s, driver[0])), others[0])
        second = plan(dict(env, CUDABENCH_TORCH=other.torch), driver=driver, nvcc=nvcc)
        out.append(f"{second['toolkit_cuda']}:{other.torch}")
    return out


def table():
    lines = ["| LibTorch | its CUDA | the driver's CUDA it needs | the oldest Linux driver | its kernels (SASS; PTX) |",
             "| --- | --- | --- | --- | --- |"]
    for s in STACKS:
        archs = " ".join(f"sm_{a}" for a in s.sass) + "; " + (" ".join(f"compute_{a}" for a in s.ptx) or "no PTX")
        lines.append(f"| {s.torch} | {s.cuda} | {cuda_str(s.driver_cuda)} or newer | {s.oldest_driver} | {archs} |")
    return "\n".join(lines)


def main(argv):
    cmd = argv[0] if argv else ""
    try:
        if cmd in ("-h", "--help"):
            print(__doc__.strip())
        elif cmd == "plan" and len(argv) in (1, 3) and (len(argv) == 1 or argv[1] == "--stack"):
            stack = argv[2] if len(argv) == 3 else os.environ.get("CUDABENCH_STACK") or None
            source = "--stack" if len(argv) == 3 else "CUDABENCH_STACK"
            for k, v in plan(os.environ, stack, source=source).items():
                print(f"{k}={v}")
        elif cmd == "matrix" and len(argv) == 1:
            print("\n".join(matrix_stacks(os.environ)))
        elif cmd == "table" and len(argv) == 1:
            print(table())
        else:
            raise Refused("usage: stacks.py plan [--stack CUDA:TORCH] | matrix | table")
    except Refused as e:  # in the words of the script that asked: --stack is the matrix's
        who = "matrix" if cmd == "matrix" or "--stack" in argv else "setup"
        print(f"{who}: {e}", file=sys.stderr)
        return 2
    return 0


def entry():
    """The program, as scripts/stacks.py runs it: its exit code."""
    return run_tool("stacks", lambda: main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(entry())
