"""The row families and the recorded facts that bear on each: which fact
explains which slow rows. The first family whose pattern matches a row is
its own; the facts (context keys of env/context_keys.json, or the
telemetry counters gbench.CLOCK_COUNTERS) are listed likeliest first.
docs/comparing-machines.md is tested against this table."""
import re
from dataclasses import dataclass

from ..results.context import clock_medians, flag_texts, isa_level
from ..results.gbench import CLOCK_COUNTERS


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    rows: str  # a regex on the row's name
    facts: tuple  # (context key or measured counter, label): the likeliest cause first


# The row families, the first that matches a row is its own, and the facts
# that bear on each (context keys of env/context_keys.json, or the
# telemetry counters CLOCK_COUNTERS), likeliest first. The one table
# of which fact explains which rows; docs/comparing-machines.md is tested
# against it.
FAMILIES = (
    Family("transfer", "Transfer rows", r"^(Transfer|VectorAddFlow)/", (
        ("gpu_pcie_max", "PCIe link"), ("gpu_numa_node", "the GPU's NUMA node"),
        ("host_numa_nodes", "NUMA nodes"), ("gpu_name", "GPU"), ("host_cpu_model", "CPU"),
        ("host_memory_gib", "host memory (GiB)"), ("cuda_driver_version", "driver"))),
    Family("library", "Library rows", r"/(cublas_geam|thrust|torch_cuda)/|^Mnist(Train|Eval)/cuda", (
        ("gpu_name", "GPU"), ("cuda_driver_version", "driver"), ("cuda_toolkit", "CUDA toolkit"),
        ("cublas", "cuBLAS"), ("libtorch", "LibTorch"), ("libtorch_cuda", "LibTorch's CUDA"),
        ("cudnn", "cuDNN"), ("sm_clock_mhz", "SM clock under load (MHz)"))),
    Family("dram", "GPU memory-bound rows", r"^(VectorAdd|Copy)/cuda_", (
        ("gpu_name", "GPU"), ("gpu_memory_clock_khz", "memory clock (kHz)"),
        ("gpu_bus_width_bits", "memory bus (bits)"), ("gpu_ecc", "ECC"), ("gpu_power_limit", "power limit"),
        ("mem_clock_mhz", "memory clock under load (MHz)"), ("sm_clock_mhz", "SM clock under load (MHz)"),
        ("gpu_app_clocks_mhz", "application clocks (MHz)"), ("cuda_driver_version", "driver"))),
    Family("cpu", "CPU rows", r"/(cpu_|torch_cpu)|^Mnist(Train|Eval)/cpu", (
        ("host_cpu_model", "CPU"), ("host_cpu_id", "CPU identity"), ("cpu_threads_used", "threads the CPU rows use"),
        ("host_threads", "hardware threads"), ("host_cpu_governor", "CPU governor"),
        ("host_thp", "transparent huge pages"), ("host_memory_gib", "memory (GiB)"),
        ("mhz_per_cpu", "CPU clock (MHz)"), ("host_microcode", "microcode"), ("host_cpu_flags", "CPU flags"),
        ("host_numa_nodes", "NUMA nodes"), ("libtorch", "LibTorch"))),
    Family("other", "Other rows", r".", (
        ("gpu_name", "GPU"), ("host_cpu_model", "CPU"), ("cuda_driver_version", "driver"),
        ("cuda_toolkit", "CUDA toolkit"), ("libtorch", "LibTorch"))),
)


NUMERIC = {"mhz_per_cpu": 0.03, "sm_clock_mhz": 0.03, "mem_clock_mhz": 0.03}  # relative tolerance


GPU_ROWS = ("transfer", "library", "dram")


def family_of(name):
    return next(f for f in FAMILIES if re.search(f.rows, name))


def bears_on(key, name):
    """Whether a fact can explain row `name` being slow: its family lists
    the fact. The one answer, for the machine report and the fleet alike."""
    return any(k == key for k, _ in family_of(name).facts)


def fact_value(f, key):
    """A file's value of a fact: its context's, or a measured clock's median; None when unknown."""
    if key in CLOCK_COUNTERS:
        return clock_medians(f).get(key)
    v = f.context.get(key)
    return None if v in (None, "", "none", "-1", "0/0") else v


def differs(key, a, b):
    if a is None or b is None:
        return False
    if key in NUMERIC:
        try:
            return abs(float(b) / float(a) - 1) > NUMERIC[key]
        except (ValueError, ZeroDivisionError):
            return str(a) != str(b)
    return str(a) != str(b)


def as_text(v):
    return f"{v:.0f}" if isinstance(v, float) else str(v)


def fact_texts(key, values):
    """Each value of a fact as text; the CPU flags (a hundred words) as
    context.flag_texts shows them: the flags that differ, in one short line."""
    if key != "host_cpu_flags":
        return ["-" if v is None else as_text(v) for v in values]
    return flag_texts(values)


CPU_KEYS = ("host_cpu_model", "host_cpu_id", "host_cpu_flags")  # said together, as "a different CPU"
ISA_WORDS = {"avx512": "AVX-512", "avx2": "AVX2 (no AVX-512)", "avx": "AVX (no AVX2)", "sse2": "SSE2 (no AVX)",
             "sve2": "SVE2", "sve": "SVE (no SVE2)", "neon": "NEON (no SVE)", "scalar": "no vector ISA"}


def cpu_words(f):
    """The CPU a file records, in words: "AMD EPYC (AuthenticAMD family 25
    model 17 stepping 1, AVX-512)"; None when it records no model."""
    model = fact_value(f, "host_cpu_model")
    if model is None:
        return None
    isa = isa_level(f.context.get("host_cpu_flags"))
    return (f"{model} ({fact_value(f, 'host_cpu_id') or 'no family, model or stepping recorded'}, "
            f"{ISA_WORDS.get(isa, isa) if isa else 'no CPU flags recorded'})")


def same_cpu(a, b):
    """False when two files' CPUs differ in what they record of model name,
    identity or ISA level (a fact one of them lacks does not count)."""
    pairs = [(fact_value(a, k), fact_value(b, k)) for k in ("host_cpu_model", "host_cpu_id")]
    pairs.append((isa_level(a.context.get("host_cpu_flags")), isa_level(b.context.get("host_cpu_flags"))))
    return all(x is None or y is None or str(x) == str(y) for x, y in pairs)


def different_cpu(fam, f, others):
    """"a different CPU: X against Y" when family `fam` names the CPU among
    its facts and file `f`'s CPU differs from that of every file of
    `others`, else ""."""
    mine = cpu_words(f)
    if not any(k == "host_cpu_model" for k, _ in fam.facts) or mine is None or not others \
            or any(same_cpu(f, o) for o in others):
        return ""
    theirs = sorted({w for w in (cpu_words(o) for o in others) if w})
    return f"a different CPU: {mine} against {', '.join(theirs) or 'one not recorded'}" if theirs else ""
