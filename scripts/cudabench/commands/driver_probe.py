"""The NVIDIA driver, probed from Python before anything is built: libcuda.so.1
through ctypes (as bench's own probe does through dlopen) and NVML's driver
version, in a child process with a deadline, since a stuck GPU hangs libcuda.

    driver_probe.py [--toolkit X.Y] [--nvidia-smi-csv FILE]   verdict lines
    driver_probe.py --json                                     what it found

Verdict lines: "ok ..." for a driver that can run what the toolkit X.Y (nvcc's
release) builds (exit 0), else "MISSING ..." lines (exit 3) that name the cause
in the doctor's words (doctor/scenarios.json): no libcuda, cuInit's failure
(802: a fabric manager that is not running; 999; ...), no GPU that CUDA can see
(CUDA_VISIBLE_DEVICES, MIG without instances), a driver whose CUDA major is
older than the toolkit's. FILE is nvidia-smi's CSV with a mig.mode.current
column. Before each call into the driver it writes "calling NAME" to stderr, so
that a caller whose deadline ended it can say where it hung (probe_in_child
does). Only the standard library: it runs before any venv or build exists.
"""
import json
import sys

from ..base.cli import ArgParser, run_tool
from ..sampling.driver import probe, probe_in_child, probe_seconds, verdicts

def main(argv):
    ap = ArgParser(prog="driver_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print what the probe found, as JSON")
    ap.add_argument("--toolkit", help="the toolkit's CUDA (nvcc's release, X.Y)")
    ap.add_argument("--nvidia-smi-csv", help="nvidia-smi's CSV with a mig.mode.current column")
    ap.add_argument("--seconds", type=int, default=probe_seconds(),
                    help="the child probe's deadline (default $CUDABENCH_PROBE_SECONDS, else 15)")
    args = ap.parse_args(argv)
    if args.json:
        print(json.dumps(probe()))
        return 0
    lines, code = verdicts(probe_in_child(args.seconds), args.toolkit, args.nvidia_smi_csv)
    print("\n".join(lines))
    return code


def entry():
    """The program, as scripts/driver_probe.py runs it: its exit code."""

    def body():
        try:
            return main(sys.argv[1:])
        except (OSError, ValueError, KeyError, StopIteration) as e:
            print(f"MISSING  a working driver: the driver probe failed: {e}")
            return 3

    return run_tool("driver_probe", body)


if __name__ == "__main__":
    sys.exit(entry())
