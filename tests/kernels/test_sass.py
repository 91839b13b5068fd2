"""What the host cannot drive in cuda_v6, v7 and v8, read from the sm_90
machine code this build made (cuobjdump -sass of the kernels' library):
v6's float4 loads and stores plain, v7's streaming (LDG/STG .EF, from PTX
.cs), v8's tiles brought in by bulk copies (UBLKCP, from cp.async.bulk)
completing on an mbarrier (SYNCS), read from shared memory and stored
streaming; in v6 and v7 every float4 load of a tile before its first store.
cuobjdump comes from the test set-up (scripts/requirements-test.txt), the
CUDA toolkit, or PATH."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD

LIBRARY = os.path.join(BUILD, "_kernels", "libcudabench_kernels.a")
# The kernels of the variants, by the body in their mangled names, and
# what each one's sm_90 code must hold (regexes over its instructions).
KERNELS = {
    "cuda_v6": ("4TileINS0_11PlainAccess", [r"LDG\.E\.128", r"STG\.E\.128"], [r"\.EF", r"UBLKCP"]),
    "cuda_v7": ("4TileINS0_15StreamingAccess", [r"LDG\.E\.EF\.128", r"STG\.E\.EF\.128"],
                [r"LDG\.E\.128", r"STG\.E\.128", r"UBLKCP"]),
    "cuda_v8": ("12TileBulkCopy", [r"UBLKCP", r"SYNCS\.", r"LDS\.128", r"STG\.E\.EF\.128"], [r"LDG\.E(\.EF)?\.128"]),
}


def tool_folders():
    """Where cuobjdump and nvdisasm may be: the venv's NVIDIA wheels, the toolkit, PATH."""
    here = sys.prefix
    return (glob.glob(os.path.join(here, "lib", "python3*", "site-packages", "nvidia", "cu*", "bin"))
            + [os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda"), "bin")])


def cuobjdump():
    for d in tool_folders():
        if os.access(os.path.join(d, "cuobjdump"), os.X_OK) and os.access(os.path.join(d, "nvdisasm"), os.X_OK):
            return os.path.join(d, "cuobjdump"), d
    found = shutil.which("cuobjdump")
    if found and shutil.which("nvdisasm"):
        return found, os.path.dirname(found)
    if os.environ.get("CUDABENCH_REQUIRE_TEST_TOOLS") == "1":
        pytest.fail("cuobjdump and nvdisasm are missing: scripts/setup.sh --tests installs them "
                    "(scripts/requirements-test.txt)")
    pytest.skip("no cuobjdump with nvdisasm here (scripts/setup.sh --tests installs them)")


@pytest.fixture(scope="module")
def sass():
    """{kernel's mangled name: [its instructions]} of the library's sm_90 code."""
    if not os.path.exists(LIBRARY):
        pytest.skip(f"{LIBRARY}: this build has no CUDA kernels")
    tool, folder = cuobjdump()
    r = subprocess.run([tool, "-sass", "-arch", "sm_90", LIBRARY], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PATH=folder + os.pathsep + os.environ.get("PATH", "")))
    assert r.returncode == 0, r.stderr
    out, name = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m[1]
            out[name] = []
        elif name and re.match(r"\s*/\*[0-9a-f]{4}\*/", line):
            out[name].append(line.split("*/", 1)[1].split(";")[0].strip())
    if not any("vector_add_kernel" in k for k in out):
        pytest.skip("this build has no sm_90 code (CMAKE_CUDA_ARCHITECTURES leaves out 90)")
    return out


def kernel(sass, body):
    found = [code for name, code in sass.items() if "vector_add_kernel" in name and body in name]
    assert len(found) == 1, f"{body}: {len(found)} kernels"
    return found[0]


@pytest.mark.parametrize("variant", sorted(KERNELS))
def test_each_variant_compiles_to_what_it_claims(sass, variant):
    body, must, must_not = KERNELS[variant]
    code = "\n".join(kernel(sass, body))
    for rx in must:
        assert re.search(rx, code), f"{variant}: no {rx} in its sm_90 code"
    for rx in must_not:
        assert not re.search(rx, code), f"{variant}: {rx} in its sm_90 code"


@pytest.mark.parametrize("variant", ["cuda_v6", "cuda_v7"])
def test_a_tiles_loads_are_all_issued_before_its_first_store(sass, variant):
    # kTileFloat4s float4s of a and of b, whichever path (whole tile or the
    # last one) the code lays out first.
    ops = [x for x in kernel(sass, KERNELS[variant][0]) if re.search(r"\b(LDG|STG)\.E(\.EF)?\.128", x)]
    first_store = next(i for i, x in enumerate(ops) if "STG" in x)
    assert first_store >= 8, f"{variant}: a store after {first_store} float4 loads: {ops[:first_store + 1]}"

