"""The hardware kind of a CPU (results/context.py hardware_of): what decides
its speed (model name, family/model/stepping, ISA level, threads), so that
two generations behind one generic VM name ("AMD EPYC") are two kinds; a run
that records less says so in its kind and is never mixed with one that
records more; the report names "a different CPU" in words."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, run_script
from cudabench.results.context import flag_texts, hardware_of, this_cpu

# vm-c's two default runs: an AVX-512 "AMD EPYC", no identity recorded (kept as its kind's reference)
VM_C = [os.path.join(ROOT, "results", "reference", "cpu-amd-epyc-cpuid-unknown-avx512-2c", "machines", "vm-c",
                     f"cpu-amd-epyc-2c.vm-c.run{i}.json") for i in (1, 2)]
AMD_REF = os.path.join(ROOT, "results", "reference", "cpu-amd-epyc-cpuid-unknown-avx2-2c")
FLAGS = "fpu sse2 avx avx2 fma"
WIDE = FLAGS + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi"


def cpu(ident="AuthenticAMD family 25 model 1 stepping 1", flags=FLAGS, model="AMD EPYC", threads="2"):
    return {"host_cpu_model": model, "host_cpu_id": ident, "host_cpu_flags": flags, "host_threads": threads}


def test_a_kind_names_family_model_stepping_isa_and_threads():
    assert hardware_of(cpu()) == "cpu-amd-epyc-f25m1s1-avx2-2c"
    assert hardware_of(cpu(flags=WIDE)) == "cpu-amd-epyc-f25m1s1-avx512-2c"  # only AVX-512 differs: two kinds
    # The same flags, another model or stepping: another kind.
    assert hardware_of(cpu("AuthenticAMD family 25 model 17 stepping 1")) == "cpu-amd-epyc-f25m17s1-avx2-2c"
    assert hardware_of(cpu("AuthenticAMD family 25 model 1 stepping 2")) == "cpu-amd-epyc-f25m1s2-avx2-2c"
    assert hardware_of(cpu(threads="4")) == "cpu-amd-epyc-f25m1s1-avx2-4c"
    # The vendor leads where the model name does not say it; Arm has its own identity.
    assert hardware_of(cpu("GenuineIntel family 6 model 143 stepping 8", model="Generic CPU")) == \
        "cpu-generic-cpu-intel-f6m143s8-avx2-2c"
    assert hardware_of(cpu("implementer 0x41 architecture 8 part 0xd4f variant 0x0 revision 0", "fp asimd sve sve2",
                           "Neoverse-V2", "72")) == "cpu-neoverse-v2-0x41-0xd4f-r0p0-sve2-72c"
    # An Arm server whose cpuinfo names no model: its identity names it.
    assert hardware_of(cpu("implementer 0x41 architecture 8 part 0xd0c variant 0x3 revision 1", "fp asimd", "",
                           "64")) == "cpu-0x41-0xd0c-r3p1-neon-64c"
    assert hardware_of({"host_threads": "2"}) == ""  # nothing to name it by: the caller asks for a name
    # A GPU run's kind is its GPU.
    assert hardware_of(dict(cpu(), gpu_name="NVIDIA H200")) == "nvidia-h200"


def test_a_run_that_records_less_gets_a_kind_that_says_so_and_is_never_mixed():
    older = hardware_of({"host_cpu_model": "AMD EPYC", "host_cpu_flags": FLAGS, "host_threads": "2"})
    oldest = hardware_of({"host_cpu_model": "Intel(R) Xeon(R) Processor", "host_threads": "2"})
    assert older == "cpu-amd-epyc-cpuid-unknown-avx2-2c"
    assert oldest == "cpu-intel-r-xeon-r-processor-cpuid-unknown-isa-unknown-2c"
    assert older not in {hardware_of(cpu()), hardware_of(cpu(flags=WIDE))}
    # The committed references moved to these keys; the two AMD VMs are two kinds.
    assert os.path.isfile(os.path.join(AMD_REF, "reference.json"))
    assert {hardware_of(json.load(open(p))["context"]) for p in VM_C} == {"cpu-amd-epyc-cpuid-unknown-avx512-2c"}


def test_this_cpu_reads_cpuinfo_as_bench_does():
    info = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
            f"stepping\t: 1\nflags\t\t: {WIDE}\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\n")
    facts = this_cpu(info)
    assert facts == {"host_cpu_model": "AMD EPYC", "host_cpu_id": "AuthenticAMD family 25 model 17 stepping 1",
                     "host_cpu_flags": WIDE, "host_threads": "2"}
    assert hardware_of(facts) == "cpu-amd-epyc-f25m17s1-avx512-2c"


def test_lib_sh_names_this_machine_as_bench_s_own_context_does(tmp_path):
    bench = os.path.join(os.environ.get("CUDABENCH_BUILD_DIR", os.path.join(ROOT, "build")), "bench")
    if not os.access(bench, os.X_OK):
        pytest.skip(f"no {bench}: build it first")
    if shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is here: this machine's kind is its GPU's")
    out = tmp_path / "one.json"
    subprocess.run([bench, "--benchmark_filter=^VectorAdd/cpu_scalar/n:4096/", "--benchmark_min_time=0.001s",
                    f"--benchmark_out={out}"], check=True, capture_output=True, timeout=300)
    label = subprocess.run(["bash", "-c", f". {ROOT}/scripts/lib.sh; CUDABENCH_MACHINE= machine_label"],
                           capture_output=True, text=True, timeout=120)
    context = json.load(open(out))["context"]
    if context.get("gpu_name", "none") != "none":
        pytest.skip("a GPU machine: its kind is the GPU's")
    assert label.returncode == 0 and label.stdout.strip() == hardware_of(context), label.stderr


def test_the_flags_that_differ_fit_one_short_line():
    base = " ".join(f"flag{i}" for i in range(100))
    texts = flag_texts([base + " " + WIDE, base + " " + FLAGS, None])
    assert texts == ["+avx512 (7 flags)", "-avx512 (7 flags)", "-"]
    assert flag_texts([FLAGS, FLAGS]) == ["the common flags"] * 2
    many = flag_texts([base, base + " " + " ".join(f"x{i}" for i in range(9))])
    assert many[1] == "+x0 +x1 +x2 +x3 +x4 +x5 (+3 more)" and many[0] == "-x0 -x1 -x2 -x3 -x4 -x5 (+3 more)"


def test_the_report_says_a_different_cpu_in_words_and_shows_only_the_flags_that_differ():
    older = os.path.join(AMD_REF, "machines", "amd-vm1", "amd-run1.json")
    r = run_script("compare.py", VM_C[0], older, "--report-only")
    assert r.returncode == 0, r.stderr
    cause = next(x for x in r.stdout.splitlines() if x.strip().startswith("CPU rows"))
    assert ("a different CPU: AMD EPYC (no family, model or stepping recorded, AVX2 (no AVX-512)) against "
            "AMD EPYC (no family, model or stepping recorded, AVX-512)") in cause
    flags = next(x for x in r.stdout.splitlines() if x.startswith("host_cpu_flags"))
    assert "+avx512 (12 flags)" in flags and len(flags) < 160 and "sse4_2" not in flags
