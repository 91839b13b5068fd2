"""The NVIDIA driver, probed from Python before anything is built (the logic
of scripts/driver_probe.py, whose docstring says what it prints): libcuda.so.1
through ctypes, as bench's own probe does through dlopen, and NVML's driver
version, in a child process with a deadline, since a stuck GPU hangs libcuda.
Only the standard library: it runs before any venv or build exists."""
import contextlib
import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

from ..base.paths import ROOT, SCRIPTS
from ..base.processes import ending_signals, ends_with_us
from ..base.settings import setting

SCENARIOS = os.path.join(ROOT, "doctor", "scenarios.json")
# Where a stuck GPU is seen, for a probe that hung or crashed.
STUCK = ("a stuck GPU or a driver in a bad state: look at `nvidia-smi -q` and the Xid lines of "
         "`dmesg` (a GPU that fell off the bus, or one that needs a reset)")


def probe_seconds():
    """The deadline of a driver probe: CUDABENCH_PROBE_SECONDS (common/settings.json)."""
    return setting("CUDABENCH_PROBE_SECONDS")


def calling(name):
    print(f"calling {name}", file=sys.stderr, flush=True)


def libcuda_path():
    """The file libcuda.so.1 was loaded from, as this process maps it."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "/libcuda.so" in path:
                    return os.path.realpath(path)
    except OSError:
        pass
    return ""


def nvml_driver_version():
    """NVML's driver version string, or ""."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        calling("nvmlInit_v2")
        if nvml.nvmlInit_v2() != 0:
            return ""
        buf = ctypes.create_string_buffer(96)
        calling("nvmlSystemGetDriverVersion")
        ok = nvml.nvmlSystemGetDriverVersion(buf, len(buf)) == 0
        nvml.nvmlShutdown()
        return buf.value.decode(errors="replace") if ok else ""
    except (OSError, AttributeError):
        return ""


def probe():
    """What libcuda and NVML say, in this process: {"libcuda": path or None,
    "libcuda_error", "cuda_version" (cuDriverGetVersion's number, 0 unknown),
    "init_result", "init_error", "device_count", "driver_version"}."""
    out = {"libcuda": None, "libcuda_error": "", "cuda_version": 0, "init_result": -1, "init_error": "",
           "device_count": 0, "driver_version": ""}
    try:
        calling("dlopen libcuda.so.1")
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        out["libcuda_error"] = str(e)
        return out
    out["libcuda"] = libcuda_path() or "libcuda.so.1"
    api = {f: getattr(cuda, f, None) for f in ("cuDriverGetVersion", "cuInit", "cuGetErrorName", "cuGetErrorString",
                                               "cuDeviceGetCount")}
    v = ctypes.c_int(0)
    calling("cuDriverGetVersion")
    if api["cuDriverGetVersion"] and api["cuDriverGetVersion"](ctypes.byref(v)) == 0:
        out["cuda_version"] = v.value
    if not api["cuInit"]:
        out["init_result"], out["init_error"] = 34, "no cuInit in this libcuda.so.1"
        return out
    calling("cuInit")
    rc = api["cuInit"](0)
    out["init_result"] = rc
    if rc != 0:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if api["cuGetErrorName"]:
            api["cuGetErrorName"](rc, ctypes.byref(name))
        if api["cuGetErrorString"]:
            api["cuGetErrorString"](rc, ctypes.byref(text))
        out["init_error"] = (f"{(name.value or b'CUDA error').decode(errors='replace')} ({rc}): "
                             f"{(text.value or b'no description').decode(errors='replace')}")
    elif api["cuDeviceGetCount"]:
        n = ctypes.c_int(0)
        calling("cuDeviceGetCount")
        if api["cuDeviceGetCount"](ctypes.byref(n)) == 0:
            out["device_count"] = n.value
    out["driver_version"] = nvml_driver_version()
    return out


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass  # the group is gone already


@contextlib.contextmanager
def group_stopped_by_signals(pid):
    """While in it, an ending signal to this process kills the group
    `pid` first; then the handler that was there (or the signal's default)
    takes the signal: a stopped tool leaves no probe running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}

    def stop(signum, _frame):
        kill_group(pid)
        for s, h in before.items():
            signal.signal(s, h)
        os.kill(os.getpid(), signum)

    for s in ending_signals():
        before[s] = signal.signal(s, stop)
    try:
        yield
    finally:  # unless stop() ran: its handlers stay (a tool's SIG_IGN while it cleans up)
        for s, h in before.items():
            if signal.getsignal(s) is stop:
                signal.signal(s, h)


def run_bounded(cmd, seconds, env=None, with_us=False):
    """(exit code, stdout, stderr) of cmd, the code None when it ran past
    `seconds`. It runs in a session of its own with its output in files, not
    pipes (a pipe stays open while any child of it lives), and its whole
    group is killed once it ends, its time is up or a signal stops us.
    with_us: it also ends if we are killed by SIGKILL (processes.ends_with_us;
    from the main thread only, where no other thread can hold a lock at the fork)."""
    with tempfile.TemporaryFile("w+", errors="replace") as out, tempfile.TemporaryFile("w+", errors="replace") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True, env=env,
                             preexec_fn=ends_with_us() if with_us else None)
        with group_stopped_by_signals(p.pid):
            try:
                rc = p.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                rc = None
        kill_group(p.pid)
        if rc is None:
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass  # unkillable (in the kernel driver): left behind
        out.seek(0)
        err.seek(0)
        return rc, out.read(), err.read()


# What an orchestrator (samples.py's runs, gpu-check.sh) passes down once the
# driver check passed, so that the bench and train processes it starts skip
# their own (process/load_guard.cpp).
DRIVER_CHECKED = "CUDABENCH_DRIVER_CHECKED"


def driver_checked(program, env):
    """{DRIVER_CHECKED: "ok"} when cudabench-driver-check (`program`, beside
    bench) ran to its last line within the probe's deadline under `env`, else
    {DRIVER_CHECKED: ""}: then each process checks the driver itself, and
    withholds one that hangs or crashes."""
    env = {k: v for k, v in env.items() if k != DRIVER_CHECKED}
    done = False
    if os.access(program, os.X_OK):
        rc, out, _ = run_bounded([program], probe_seconds(), env)
        done = rc == 0 and out.rstrip().endswith("calling nothing: done")
    return {DRIVER_CHECKED: "ok" if done else ""}


def probe_in_child(seconds):
    """probe() in a child process that ends within `seconds` (run_bounded).
    A probe that hung or died is a finding: {"hung_in": call, "seconds": s}
    or {"crashed_in": call, "signal": "SIGSEGV"}, each with "why". Its
    stderr's last "calling" line says where."""
    rc, out, stderr = run_bounded([sys.executable, os.path.join(SCRIPTS, "driver_probe.py"), "--json"], seconds)
    last = last_call(stderr)
    library = "NVML" if "nvml" in last.lower() or "nvidia-ml" in last else "libcuda"
    if rc is None:
        return {"hung_in": last, "seconds": seconds, "why": f"{library} hung in {last} for {seconds} s: {STUCK}"}
    if rc < 0:
        sig = next((x.name for x in signal.Signals if x == -rc), f"signal {-rc}")
        return {"crashed_in": last, "signal": sig, "why": f"{library} crashed in {last} ({sig}): {STUCK}"}
    try:
        return json.loads(out)
    except ValueError:
        return {"crashed_in": last, "signal": "", "why": f"the driver probe failed: {stderr[-300:]}"}


def last_call(stderr):
    calls = [l[len("calling "):] for l in (stderr or "").splitlines() if l.startswith("calling ")]
    return calls[-1] if calls else "its start"


@functools.lru_cache(maxsize=None)
def scenario_table():
    """doctor/scenarios.json's scenarios, read once."""
    with open(SCENARIOS, encoding="utf-8") as f:
        return json.load(f)["scenarios"]


def scenario(number):
    """The doctor's words for scenario `number`: "title. Fix: ...". """
    s = next(x for x in scenario_table() if x["number"] == number)
    return f"the doctor's scenario {number}: {s['title']}. Fix: {s['fix']}"


def cuda_str(v):
    return f"{v // 1000}.{v % 1000 // 10}"


def mig_enabled(csv_path):
    """Whether nvidia-smi's CSV (with a mig.mode.current column) shows MIG on for any GPU."""
    try:
        with open(csv_path) as f:
            rows = [[c.strip() for c in l.split(",")] for l in f if l.strip()]
        col = next(i for i, h in enumerate(rows[0]) if h.startswith("mig.mode.current"))
        return any(r[col] == "Enabled" for r in rows[1:] if len(r) > col)
    except (OSError, StopIteration, IndexError):
        return False


def verdicts(found, toolkit=None, smi_csv=None):
    """(["ok ..."] or ["MISSING ..."], exit code) for what probe() found."""
    if "why" in found:  # hung or crashed
        return [f"MISSING  a working driver: {found['why']}"], 3
    if not found["libcuda"]:
        if not os.path.exists("/proc/driver/nvidia/version"):
            cause = scenario(12)
        elif not os.path.exists("/dev/nvidiactl"):
            cause = scenario(8)
        else:
            cause = scenario(13)
        return [f"MISSING  a working driver: no libcuda.so.1 ({found['libcuda_error']}); {cause}"], 3
    cuda = found["cuda_version"]
    if found["init_result"] != 0:
        code = found["init_result"]
        named = [x["number"] for x in scenario_table() if code in x["codes"]]
        if code == 100:  # no device: no kernel module, or no device nodes (a container without GPUs)
            named = [12] if not os.path.exists("/proc/driver/nvidia/version") else [8]
        cause = scenario(named[0]) if named else STUCK
        return [f"MISSING  a working driver: cuInit failed: {found['init_error']}; {cause}"], 3
    if found["device_count"] == 0:
        if "CUDA_VISIBLE_DEVICES" in os.environ:
            cause = f"CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r}; {scenario(9)}"
        elif smi_csv and mig_enabled(smi_csv):
            cause = f"MIG is on; {scenario(16)}"
        else:
            cause = scenario(8)
        return [f"MISSING  a visible GPU: cuInit succeeded but CUDA sees no device; {cause}"], 3
    if toolkit and cuda and cuda // 1000 < int(toolkit.split(".")[0]):
        return [f"MISSING  a driver for the toolkit: the driver runs CUDA {cuda_str(cuda)} (cuDriverGetVersion "
                f"{cuda}), the toolkit builds for CUDA {toolkit}, so nothing it builds can run here; "
                f"{scenario(1)}"], 3
    return [f"ok       driver {found['driver_version'] or '?'} (CUDA {cuda_str(cuda) if cuda else '?'}), "
            f"{found['device_count']} GPU(s), {found['libcuda']}"], 0
