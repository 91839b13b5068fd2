"""The facts compared between the machines of a group, and what a fact that
differs can explain: the likely causes the report names."""
import functools
from collections import Counter
from dataclasses import dataclass

from ...results.gbench import finite_number
from ...results.stats import median
from ...results.context import context_schema
from ...models.families import FAMILIES, bears_on
from .machines import gpu_of


def uses_torch(n):
    return n.startswith(("MnistTrain/", "MnistEval/")) or "torch" in n


def on_gpu(m, n):
    return m.unit.startswith("gpu")


def on_host_cpu(m, n):
    return m.unit == "cpu" or uses_torch(n)


def every(m, n):
    return True


def rows_of(key, machines):
    """The rows a fact can slow down on the machines it applies to: those
    whose family lists it (models/families.py, the table the machine report
    reads too); a fact no family lists can slow every row of its machines."""
    if not any(key == k for fam in FAMILIES for k, _ in fam.facts):
        return machines
    return lambda m, n: machines(m, n) and bears_on(key, n)


def counter_median(m, key):
    xs = [b[key] for b in (m.result.benchmarks if m.result else [])
          if isinstance(b, dict) and finite_number(b.get(key)) and b[key] > 0]
    return median(xs) if xs else None


def nvml(m, key):
    return (gpu_of(m).get("nvml") or {}).get(key)


def lib_path(m, prefix):
    for lib in m.env_doc().get("loaded_libraries", []) or []:
        if isinstance(lib, dict) and str(lib.get("name", "")).startswith(prefix):
            return lib.get("path", "")
    return ""


def pcie(m):
    g = gpu_of(m).get("nvml") or {}
    if not g.get("pcie_width"):
        return None
    return f"gen{g.get('pcie_gen_max')} x{g.get('pcie_width')} of x{g.get('pcie_width_max')}"


def ecc_mode(m):
    cur, pend = nvml(m, "ecc_current"), nvml(m, "ecc_pending")
    if cur is None or cur < 0:
        return None
    s = "on" if cur == 1 else "off"
    return s + (f", {'on' if pend == 1 else 'off'} after the next reset" if pend is not None and pend >= 0 and pend != cur else "")


def ecc_errors(m):
    n = nvml(m, "ecc_volatile_uncorrected")
    return f"{n} uncorrectable ECC errors since the driver loaded" if isinstance(n, int) and n > 0 else None


def loaded(version, path):
    """A loaded library: "<version> from <path>", what of it is known, or None."""
    return " from ".join(x for x in (version, path) if x) or None


def mhz_per_cpu(m):
    mhz = m.context.get("mhz_per_cpu")
    return mhz if finite_number(mhz) else None


def load_per_cpu(m):
    la, n = m.context.get("load_avg"), m.context.get("num_cpus")
    if isinstance(la, list) and la and finite_number(la[0]) and finite_number(n) and n > 0:
        return la[0] / n
    return None


def env_errors(m):
    errs = [v.get("message", "") for v in m.env_doc().get("verdicts", []) or [] if isinstance(v, dict)
            and v.get("level") == "error"]
    return "; ".join(errs) if errs else None


def gpu_only(get):
    return lambda m: get(m) if m.unit.startswith("gpu") else None


def ctx(key):
    return lambda m: (str(m.context[key]) if m.context.get(key) not in (None, "") else None)


@dataclass
class Feature:
    label: str
    kind: str  # "cat": compared by value; "num": by tolerance; "flag": a problem when present
    scope: object  # (machine, benchmark name) -> bool: the benchmarks it can slow down
    get: object  # machine -> value or None (unknown, or does not apply)
    tol: float = 0.0  # num: relative tolerance (abs_tol when set)
    abs_tol: float = 0.0
    unit: str = ""


# A plain context feature's scope in env/context_keys.json: the machines it
# applies to (gpu: GPU units only), and the rows it can slow there when no
# family lists it.
SCOPES = {"gpu": (on_gpu, gpu_only), "host_cpu": (on_host_cpu, None), "all": (every, None)}


@functools.cache
def features():
    """What is compared between machines, in the order the report lists it.
    The plain context lookups take their label and scope from
    env/context_keys.json (its 'fleet' entries): a key named here has its
    place in this order; one the schema adds and this does not name comes last."""
    plain = {e["key"]: e["fleet"] for e in context_schema() if e.get("fleet")}

    def from_schema(key):
        f = plain.pop(key)
        scope, only = SCOPES[f["scope"]]
        return Feature(f["label"], "cat", rows_of(key, scope), only(ctx(key)) if only else ctx(key))

    listed = [
        Feature("driver", "cat", rows_of("cuda_driver_version", on_gpu), gpu_only(lambda m: m.context.get("cuda_driver_version")
                                                  or m.env_doc().get("driver", {}).get("nvml_driver_version"))),
        from_schema("cuda_toolkit"),
        Feature("libcudart loaded", "cat", on_gpu,
                gpu_only(lambda m: loaded(m.context.get("cuda_runtime_loaded"),
                                          (m.env_doc().get("runtime") or {}).get("loaded_path")))),
        Feature("cuBLAS loaded", "cat", rows_of("cublas", on_gpu),
                gpu_only(lambda m: loaded(m.context.get("cublas"), lib_path(m, "libcublas.so")))),
        Feature("cuDNN loaded", "cat", rows_of("cudnn", on_gpu),
                gpu_only(lambda m: loaded(m.context.get("cudnn"), lib_path(m, "libcudnn.so")))),
        Feature("LibTorch", "cat", rows_of("libtorch", lambda m, n: uses_torch(n)),
                lambda m: " CUDA ".join(str(m.context[k]) for k in ("libtorch", "libtorch_cuda") if m.context.get(k))
                or None),
        Feature("SM clock during the runs", "num", rows_of("sm_clock_mhz", on_gpu), gpu_only(lambda m: counter_median(m, "sm_clock_mhz")),
                tol=0.03, unit="MHz"),
        Feature("memory clock during the runs", "num", rows_of("mem_clock_mhz", on_gpu),
                gpu_only(lambda m: counter_median(m, "mem_clock_mhz")), tol=0.03, unit="MHz"),
        from_schema("gpu_app_clocks_mhz"),
        from_schema("gpu_max_clocks_mhz"),
        Feature("power limit", "num", rows_of("gpu_power_limit", on_gpu), gpu_only(lambda m: nvml(m, "power_limit_w")), tol=0.02, unit="W"),
        Feature("PCIe link", "cat", rows_of("gpu_pcie_max", on_gpu), gpu_only(pcie)),
        Feature("ECC", "cat", rows_of("gpu_ecc", on_gpu), gpu_only(ecc_mode)),
        Feature("ECC errors", "flag", on_gpu, gpu_only(ecc_errors)),
        from_schema("gpu_persistence_mode"),
        from_schema("gpu_mig"),
        from_schema("gpu_compute_mode"),
        Feature("GPU temperature during the runs", "num", on_gpu, gpu_only(lambda m: counter_median(m, "temp_c")),
                abs_tol=10, unit="C"),
        from_schema("host_cpu_governor"),
        from_schema("host_thp"),
        Feature("CPU clock (Google Benchmark's MHz per CPU)", "num", rows_of("mhz_per_cpu", on_host_cpu), mhz_per_cpu, tol=0.03, unit="MHz"),
        Feature("load per CPU when bench started (1-minute average)", "num", on_host_cpu, load_per_cpu, abs_tol=0.25),
        from_schema("host_kernel"),
        from_schema("host_os"),
        from_schema("cxx_compiler"),
        Feature("build (source revision, environment)", "cat", every,
                lambda m: " ".join(x for x in (m.context.get("cudabench_git"),
                                               *(s.get("fingerprint") or "" for s in m.status[:1])) if x) or None),
        Feature("environment errors", "flag", every, env_errors),
    ]
    return listed + [from_schema(k) for k in list(plain)]


def fmt_val(f, v):
    if v is None:
        return "unknown"
    if f.kind == "num":
        return f"{v:.3g} {f.unit}".strip() if abs(v) < 100 else f"{v:.0f} {f.unit}".strip()
    return str(v)


def typical(f, machines):
    """The group's usual value of a feature: the value most machines have
    when more than half have it (cat), the median (num), None otherwise."""
    vals = [f.get(m) for m in machines]
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    if f.kind == "num":
        return median([float(v) for v in vals])
    if f.kind == "flag":
        return None
    v, c = Counter(vals).most_common(1)[0]
    return (v, c) if c * 2 > len(machines) else None


def differs(f, v, typ):
    if v is None:
        return False
    if f.kind == "flag":
        return True
    if typ is None:
        return False
    if f.kind == "num":
        if f.abs_tol:
            return abs(float(v) - typ) > f.abs_tol
        return typ > 0 and abs(float(v) / typ - 1) > f.tol
    return v != typ[0]


def evidence(f, v, typ, n):
    if f.kind == "flag":
        return f"{f.label}: {v}"
    if f.kind == "num":
        change = f"{100 * (float(v) / typ - 1):+.0f}%; " if typ and not f.abs_tol else ""
        return f"{f.label} {fmt_val(f, v)} ({change}fleet median {fmt_val(f, typ)})"
    return f"{f.label} {v} (fleet: {typ[0]} on {typ[1]} of {n})"
