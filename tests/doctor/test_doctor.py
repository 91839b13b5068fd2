"""The environment doctor, end to end: `bench --env=json` and `bench --explain`
run as children on fake machines.

Each machine is
- a fake libcuda.so.1 and libnvidia-ml.so.1 (tests/fakes) first on the child's
  library path, answering from a JSON description with the real codes,
  versions and strings; copied into a folder named like the real case where
  the path is the evidence (a toolkit's stubs/, a cuda-compat folder, a
  versioned libcuda.so.<driver>);
- a fake /proc, /sys, /dev and /lib/modules under CUDABENCH_PROBE_ROOT;
- fake toolkit trees where the scenario is about toolkits.

Every one of the 20 scenarios is diagnosed here or, where the cause is inside
this process and cannot be faked from outside (7; cuDNN's parts for 13;
cuBLAS against cuBLASLt and older cuDNN for 14), in test_doctor_rules.cpp on
a hand-made report.
"""
import ctypes
import json
import os
import shutil

import pytest

from conftest import FAKES


from fake_machine import DRIVER, KERNEL, Machine


def fake_toolkit(root, version):
    """A CUDA toolkit tree: nvcc (a script answering --version), version.json, the runtime."""
    major, minor, patch = version.split(".")
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s.%s, V%s'\n" % (major, minor, version))
    nvcc.chmod(0o755)
    (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION %s%s0\n" % (major, minor.zfill(2)[:2]))
    (root / "lib64").mkdir()
    (root / "lib64" / ("libcudart.so." + major)).write_text("")
    return root


def assert_diagnosed(v, cause, fix, evidence):
    """The verdict names the cause in its one line, shows the evidence, gives the fix."""
    assert "\n" not in v["message"]
    assert cause in v["message"], v["message"]
    assert fix in v["fix"], v["fix"]
    seen = " | ".join(v["evidence"])
    for e in evidence:
        assert e in seen, "evidence %r not in %s" % (e, seen)


@pytest.fixture
def machine(tmp_path):
    return Machine(tmp_path)


# ---------------------------------------------------------------- healthy

def test_a_healthy_h200_has_no_error_or_warning(tmp_path):
    # An HGX H200 board in a container: NVSwitches with their fabric manager
    # running (comm cuts its name to 15 characters) and the fabric set up, an
    # audio function and an unbound SR-IOV virtual function beside the GPUs,
    # libcuda a versioned file as the driver installs it, and the GPUs
    # selected by CUDA_VISIBLE_DEVICES.
    m = Machine(tmp_path, gpus=4)
    for g in m.desc["gpus"]:
        g["nvml"]["fabric"] = {"state": 3, "status": 0}
    for i in range(4):
        m.pci("0000:%02x:00.0" % (0x05 + i), "22a3", "0x068000", "nvidia-nvswitch")
        m.write("dev/nvidia-nvswitch%d" % i, "")
    m.pci("0000:19:00.1", "22ba", "0x040300", "")
    m.pci("0000:19:00.4", "2335", "0x030200", "")
    m.write("sys/bus/pci/devices/0000:19:00.4/physfn", "")
    m.write("proc/777/comm", "nv-fabricmanage\n")
    m.write(".dockerenv", "")
    m.libcuda_at("usr/lib/x86_64-linux-gnu", version=DRIVER)
    m.env["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
    rep = m.report()
    bad = [v for v in rep["verdicts"] if v["level"] in ("error", "warning")]
    assert not bad, bad
    gpus = [p for p in rep["system"]["pci"] if p["class"] == "0x030200"]
    assert [p["driver"] for p in gpus] == ["nvidia", "", "nvidia", "nvidia", "nvidia"]
    assert len(rep["nvml_gpus"]) == 4 and rep["nvml_gpus"][0]["name"] == "NVIDIA H200"
    assert rep["system"]["fabric_manager_running"] and rep["system"]["container"] == "docker"
    assert "/dev/nvidia-uvm" in rep["system"]["device_nodes"]
    ids = {v["id"]: v["level"] for v in rep["verdicts"]}
    assert ids["driver.module_matches_library"] == "ok"
    assert ids["driver.visible_devices"] == "ok"
    assert ids["binary.arch"] == "ok" and ids["torch.arch"] == "ok"
    # The kernels' architectures are read from the binaries themselves.
    assert "sm_90" in rep["fatbins"]["binary"]["sass"]
    assert rep["fatbins"]["torch"]["containers"] > 0


# ---------------------------------------------------------------- 1..20

def test_01_driver_older_than_runtime(machine):
    machine.desc["driver"]["cuda_version"] = 12080
    machine.desc["nvml"].update(driver_version="570.86.15", cuda_version=12080)
    v = machine.verdict("driver.runtime_compat", "error")
    assert_diagnosed(v, "cudaErrorInsufficientDriver (35)", "580.65.06", ["cuDriverGetVersion: 12080", "CUDA runtime: 13000"])


def test_02_forward_compat_on_a_geforce(machine):
    g = machine.desc["gpus"][0]
    g.update(name="NVIDIA GeForce RTX 4090", cc_major=8, cc_minor=9, pci_device_id="2684")
    machine.desc["driver"]["init_result"] = 804
    d = machine.libcuda_at("usr/local/cuda-13.0/compat", version="580.95.05")
    machine.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.163.01  Wed")
    v = machine.verdict("driver.compat_unsupported", "error")
    assert_diagnosed(v, "forward-compatibility copy", str(d),
                     ["CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)", "libcuda.so.580.95.05", "550.163.01",
                      "NVIDIA GeForce RTX 4090"])
    assert "804" in v["message"] and "does not support forward compatibility" in v["message"]


def test_03_libcuda_and_module_from_different_drivers(machine):
    machine.desc["driver"]["init_result"] = 803
    machine.libcuda_at("usr/lib/x86_64-linux-gnu", version="575.57.08")
    v = machine.verdict("driver.module_matches_library", "error")
    assert_diagnosed(v, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", "reinstall one driver",
                     ["cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", "version 575.57.08", "kernel module: " + DRIVER])


def test_03_versions_that_differ_while_cuda_starts_are_forward_compatibility(machine):
    # A newer libcuda on an older module that cuInit accepts is no fault.
    machine.libcuda_at("opt/conda/cuda-compat", version="590.44.01")
    v = machine.verdict("driver.module_matches_library", "info")
    assert "libcuda 590.44.01 runs on kernel module %s (forward compatibility" % DRIVER in v["message"]
    # When cuInit fails with another code, the mismatch is the lead.
    machine.desc["driver"]["init_result"] = 999
    v = machine.verdict("driver.module_matches_library", "error")
    assert "kernel module is %s but libcuda is 590.44.01" % DRIVER in v["message"]
    assert "reboot" in v["fix"]


def test_04_nvml_mismatch_after_an_upgrade_without_reboot(machine):
    machine.desc["nvml"]["init_result"] = 18
    machine.nvml_at("usr/lib/x86_64-linux-gnu", "580.95.05")
    machine.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  575.57.08  Sat")
    v = machine.verdict("nvml.module_mismatch", "error")
    assert_diagnosed(v, "Driver/library version mismatch", "reboot",
                     ["nvmlInit: 18", "RM has detected an NVML/RM version mismatch", "libnvidia-ml.so.580.95.05",
                      "kernel module: 575.57.08"])
    assert "NVML 580.95.05" in v["message"]


def test_05_nvswitch_system_without_fabric_manager(tmp_path):
    m = Machine(tmp_path, gpus=2)
    m.desc["driver"]["init_result"] = 802
    for g in m.desc["gpus"]:
        g["nvml"]["fabric"] = {"state": 1, "status": 0}
    for i in range(4):
        m.pci("0000:%02x:00.0" % (0x05 + i), "22a3", "0x068000", "nvidia-nvswitch")
        m.write("dev/nvidia-nvswitch%d" % i, "")
    v = m.verdict("driver.fabric_manager", "error")
    assert_diagnosed(v, "fabric manager (nv-fabricmanager) is not running", "systemctl enable --now nvidia-fabricmanager",
                     ["CUDA_ERROR_SYSTEM_NOT_READY (802)", "NVSwitch PCI functions: 4", "nv-fabricmanager process: none",
                      "not started"])
    # With the fabric manager running, the cause is its set-up, not its absence.
    m.write("proc/4242/comm", "nv-fabricmanage\n")  # the kernel keeps 15 characters
    v = m.verdict("driver.fabric_manager", "error")
    assert "runs but has not finished" in v["message"]


def test_06_no_sass_and_no_ptx_for_the_gpu(machine):
    g = machine.desc["gpus"][0]
    g.update(name="Tesla V100-SXM2-32GB", cc_major=7, cc_minor=0, pci_device_id="1db5")
    v = machine.verdict("binary.arch", "error")
    assert_diagnosed(v, "cudaErrorNoKernelImageForDevice (209)", "CMAKE_CUDA_ARCHITECTURES", ["sm_90", "compute capability 7.0"])
    t = machine.verdict("torch.arch", "error")
    assert_diagnosed(t, "LibTorch has neither SASS nor compatible PTX", "TORCH_CUDA_ARCH_LIST", ["libtorch_cuda.so: sm_"])


def test_08_container_without_device_nodes(machine):
    for n in ("nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools"):
        machine.remove("dev/" + n)
    machine.write(".dockerenv", "")
    machine.desc["driver"]["init_result"] = 100
    v = machine.verdict("driver.device_nodes", "error")
    assert_diagnosed(v, "inside a docker container", "--gpus all",
                     ["device nodes: no /dev/nvidia*", "CUDA_ERROR_NO_DEVICE (100)", "container: docker"])


# The fake libcuda does not read the variable; each case tells it what CUDA
# would see (its cuInit code and device count), as on a real machine.
@pytest.mark.parametrize("spec,init,count,level,words", [
    ("", 100, 0, "error", "it is empty"),
    ("4", 100, 0, "error", "there is no GPU 4 (NVML lists 4)"),
    ("0,x,1", 0, 1, "warning", "CUDA uses only 0 and hides everything from 'x' on"),
    ("1,-1,2", 0, 1, "warning", "a negative index ends the list"),
    ("GPU-ffff", 100, 0, "error", "no GPU's UUID starts with 'GPU-ffff'"),
    ("GPU-0c4f2a1e", 100, 0, "error", "starts the UUIDs of 4 GPUs"),
    ("GPU-0c4f2a1e-7d1b-4e8a-9a51-000000000002,3", 0, 2, "ok", "selects GPU-0c4f2a1e-7d1b-4e8a-9a51-000000000002, 3"),
    # CUDA's own count wins over this reading: it took every entry.
    ("0,1,2,3,4", 0, 5, "ok", "selects 0, 1, 2, 3, 4"),
])
def test_09_cuda_visible_devices(tmp_path, spec, init, count, level, words):
    m = Machine(tmp_path, gpus=4)
    m.env["CUDA_VISIBLE_DEVICES"] = spec
    m.desc["driver"].update(init_result=init, device_count=count)
    v = m.verdict("driver.visible_devices", level)
    assert words in v["message"], v["message"]
    assert "CUDA_VISIBLE_DEVICES='%s'" % spec in v["evidence"]
    assert "NVML lists 4 GPU(s)" in v["evidence"]


def test_10_the_toolkits_stub_as_libcuda(machine):
    machine.libcuda_at("usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs")
    v = machine.verdict("driver.stub", "error")
    assert_diagnosed(v, "link-time stub", "from LD_LIBRARY_PATH", ["/stubs/libcuda.so.1"])
    assert "CUDA_ERROR_STUB_LIBRARY (34" in v["message"]


def test_10_a_stub_copied_as_libcuda_so_1(machine):
    machine.desc["driver"]["init_result"] = 34
    machine.libcuda_at("usr/lib/x86_64-linux-gnu")
    v = machine.verdict("driver.stub", "error")
    assert_diagnosed(v, "link-time stub", "delete the stub copied as",
                     ["cuInit: CUDA_ERROR_STUB_LIBRARY (34): CUDA driver is a stub library"])


def test_11_nouveau_holds_the_gpu(machine):
    machine.remove("sys/module/nvidia")
    machine.remove("proc/driver/nvidia/version")
    machine.mkdir("sys/module/nouveau")
    machine.remove("sys/bus/pci/devices/0000:19:00.0/driver")
    os.symlink("../../../bus/pci/drivers/nouveau", machine.path("sys/bus/pci/devices/0000:19:00.0/driver"))
    machine.desc["driver"]["init_result"] = 100
    machine.desc["nvml"]["init_result"] = 9
    v = machine.verdict("driver.nouveau", "error")
    assert_diagnosed(v, "nouveau driver is loaded and holds 0000:19:00.0", "blacklist nouveau",
                     ["/sys/module/nouveau: present", "driver nouveau"])


@pytest.mark.parametrize("files,secure_boot,cause,fix", [
    (False, None, "not installed for the running kernel " + KERNEL, "dkms autoinstall"),
    (True, 1, "Secure Boot is on", "mokutil --import"),
    (True, 0, "installed (/lib/modules/%s/updates/dkms/nvidia.ko.zst) but not loaded" % KERNEL, "modprobe nvidia"),
])
def test_12_nvidia_module_not_loaded(machine, files, secure_boot, cause, fix):
    machine.remove("sys/module/nvidia")
    machine.remove("proc/driver/nvidia/version")
    machine.remove("sys/bus/pci/devices/0000:19:00.0/driver")
    if not files:
        machine.remove("lib/modules/%s/updates/dkms/nvidia.ko.zst" % KERNEL)
    if secure_boot is not None:
        machine.write("sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
                      b"\x06\x00\x00\x00" + bytes([secure_boot]))
    machine.desc["driver"]["init_result"] = 100
    machine.desc["nvml"]["init_result"] = 9
    v = machine.verdict("driver.module_missing", "error")
    assert_diagnosed(v, cause, fix, ["/sys/module/nvidia: absent", "driver none bound",
                                     "Secure Boot: " + {None: "unknown", 1: "on", 0: "off"}[secure_boot]])


def test_13_a_library_on_the_machine_but_not_on_the_library_path(machine, tmp_path):
    tk = fake_toolkit(tmp_path / "opt" / "cuda-12.4", "12.4.131")
    machine.env["CUDA_HOME"] = str(tk)
    r = machine.run("--here", "--explain", "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[13]" in r.stdout
    assert "libcudart.so.12 (needed by the pasted error) is on this machine at %s/lib64/libcudart.so.12" % tk in r.stdout
    assert "export LD_LIBRARY_PATH=%s/lib64:$LD_LIBRARY_PATH" % tk in r.stdout


def test_13_a_library_nowhere_on_the_machine(machine):
    r = machine.run("--here", "--explain", "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: "
                                 "cannot open shared object file: No such file or directory")
    assert r.returncode == 0, r.stdout
    assert "libcudnn_ops_infer.so.8 (needed by the pasted error) is not on this machine" in r.stdout
    assert "cuDNN 8" in r.stdout


def test_13_a_library_that_resolves_here_is_no_cause(machine):
    r = machine.run("--here", "--explain", "OSError: libcudart.so.13: cannot open shared object file: No such file or directory")
    assert r.returncode == 0, r.stdout
    assert "not here: the probe checked whether the loader finds each library" in r.stdout


def test_14_one_library_loaded_twice(machine, tmp_path):
    # The same soname from two folders (preloaded, as LD_PRELOAD or a
    # library's own RPATH can do): two copies of NVRTC in one process.
    copies = []
    for d in ("cuda-13.0", "site-packages/nvidia/cu13"):
        p = tmp_path / d / "libnvrtc.so.13"
        p.parent.mkdir(parents=True)
        shutil.copy(FAKES + "/nvml/libnvidia-ml.so.1", p)
        copies.append(str(p))
    machine.preload += copies
    v = machine.verdict("libs.duplicate", "error")
    assert_diagnosed(v, "two copies of libnvrtc.so.13 are loaded", "keep one copy", copies)


def test_14_different_cuda_majors_side_by_side_are_not_duplicates(machine, tmp_path):
    # libcublas.so.12 beside the build's libcublas.so.13: separate libraries
    # with versioned symbols, not two copies of one.
    other = tmp_path / "cuda-12" / "libcublas.so.12"
    other.parent.mkdir()
    shutil.copy(FAKES + "/nvml/libnvidia-ml.so.1", other)
    machine.preload.append(str(other))
    rep = machine.report()
    assert any(l["name"] == "libcublas.so.12" for l in rep["loaded_libraries"])
    assert not [v for v in rep["verdicts"] if v["id"] == "libs.duplicate"], rep["verdicts"]


def test_15_extension_toolkit_differs_from_libtorchs_cuda(machine, tmp_path):
    tk = fake_toolkit(tmp_path / "cuda-12.4", "12.4.131")
    machine.env["CUDA_HOME"] = str(tk)
    v = machine.verdict("nvcc.torch", "warning")
    assert_diagnosed(v, "The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (13.0)",
                     "point CUDA_HOME at a CUDA 13.x toolkit", ["found via CUDA_HOME", "LibTorch 2."])


def test_16_mig_on_without_instances(machine):
    machine.desc["driver"]["device_count"] = 0
    machine.desc["gpus"][0]["nvml"]["mig"] = {"current": 1, "pending": 1, "devices": 0}
    v = machine.verdict("gpu.mig_no_instances", "error")
    assert_diagnosed(v, "MIG mode on but no MIG instances", "nvidia-smi mig -cgi",
                     ["NVML: MIG mode on, 0 MIG devices", "cuInit: 0 (success), 0 device(s)"])
    # With instances, nothing to say.
    machine.desc["gpus"][0]["nvml"]["mig"]["devices"] = 2
    rep = machine.report()
    assert not [v for v in rep["verdicts"] if v["id"] == "gpu.mig_no_instances"]


def test_17_exclusive_gpu_held_by_another_process(machine):
    machine.desc["gpus"][0]["nvml"].update(compute_mode=3, processes="4242")
    v = machine.verdict("gpu.compute_mode", "error")
    assert_diagnosed(v, "process 4242 holds it", "-c DEFAULT",
                     ["NVML compute mode: Exclusive_Process", "NVML compute processes: 4242"])
    assert "CUDA_ERROR_DEVICE_UNAVAILABLE (46" in v["message"]


def test_17_prohibited(machine):
    machine.desc["gpus"][0]["nvml"]["compute_mode"] = 2
    v = machine.verdict("gpu.compute_mode", "error")
    assert "Prohibited" in v["message"] and "-c DEFAULT" in v["fix"]


def test_18_ecc_errors_and_a_pending_reset(machine):
    n = machine.desc["gpus"][0]["nvml"]
    n["ecc"]["volatile_uncorrected"] = 3
    n["retired_pages_pending"] = 1
    n["remapped_rows"] = {"pending": 1, "failure": 0}
    v = machine.verdict("gpu.needs_reset", "error")
    assert_diagnosed(v, "waiting to be retired or remapped at the next GPU reset", "nvidia-smi -i 0000:19:00.0 -r",
                     ["retired pages pending: 1", "row remapping pending: 1", "uncorrected ECC errors: 3"])
    assert "CUDA_ERROR_ECC_UNCORRECTABLE (214)" in v["message"]
    assert machine.verdict("gpu.ecc_errors", "warning")
    n["remapped_rows"]["failure"] = 1
    assert "failed to remap" in machine.verdict("gpu.needs_reset", "error")["message"]
    # Rows waiting for a remap after correctable errors only: a reset is due,
    # nothing fails yet.
    n["ecc"]["volatile_uncorrected"] = 0
    n["retired_pages_pending"] = 0
    n["remapped_rows"] = {"pending": 1, "failure": 0, "uncorrectable": 0}
    v = machine.verdict("gpu.needs_reset", "warning")
    assert "(after correctable errors)" in v["message"]


def real_libcuda():
    """Whether the loader finds a libcuda.so.1 outside the fakes (a machine with a driver)."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("case", ["linux_driver_inside", "no_windows_driver", "wsl_lib_not_on_the_path"])
def test_19_wsl2(machine, case):
    machine.write("proc/version", "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f)")
    for rel in ("sys/module/nvidia", "proc/driver/nvidia/version", "sys/bus/pci/devices"):
        machine.remove(rel)
    for n in ("nvidiactl", "nvidia0", "nvidia-uvm", "nvidia-uvm-tools"):
        machine.remove("dev/" + n)
    machine.write("dev/dxg", "")
    if case == "linux_driver_inside":
        machine.write("usr/lib/wsl/lib/libcuda.so.1", "")
        machine.write("usr/lib/x86_64-linux-gnu/libcuda.so.1", "")
        v = machine.verdict("driver.wsl", "error")
        assert_diagnosed(v, "libcuda must be the Windows driver's, from /usr/lib/wsl/lib", "remove the Linux NVIDIA driver",
                         ["/proc/version names Microsoft/WSL", "/usr/lib/wsl/lib/libcuda.so.1: present",
                          "a Linux driver's libcuda: /usr/lib/x86_64-linux-gnu/libcuda.so.1"])
    elif case == "wsl_lib_not_on_the_path":
        if real_libcuda():
            pytest.skip("this machine's loader finds a real libcuda.so.1, which no fake folder can hide")
        machine.write("usr/lib/wsl/lib/libcuda.so.1", "")
        machine.libcuda_dir = str(machine.tmp / "empty")  # no libcuda on the loader's path
        v = machine.verdict("driver.wsl", "error")
        assert_diagnosed(v, "the loader does not look there", "/etc/ld.so.conf.d/ld.wsl.conf",
                         ["libcuda.so.1: not found", "/usr/lib/wsl/lib/libcuda.so.1: present"])
    else:
        machine.desc["driver"]["init_result"] = 100
        rep = machine.report()
        wsl = [v for v in rep["verdicts"] if v["id"] == "driver.wsl"]
        assert wsl and wsl[0]["level"] == "error"
        # The fake libcuda is not WSL's, which is the first thing to say.
        assert "libcuda must be the Windows driver's" in wsl[0]["message"]
        assert "/usr/lib/wsl/lib/libcuda.so.1: absent" in wsl[0]["evidence"]
    # No false device-node or module verdicts under WSL: it has neither.
    ids = [v["id"] for v in machine.report()["verdicts"]]
    assert "driver.device_nodes" not in ids and "driver.module_missing" not in ids


def test_20_a_gpu_the_driver_does_not_know(machine):
    machine.desc["driver"]["init_result"] = 100
    machine.desc["gpus"] = []  # NVML and CUDA see nothing
    machine.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.256.02  Thu")
    machine.remove("sys/bus/pci/devices/0000:19:00.0/driver")
    machine.write("sys/bus/pci/devices/0000:19:00.0/device", "0x2b85")
    v = machine.verdict("driver.gpu_unknown", "error")
    assert_diagnosed(v, "did not take 0000:19:00.0 (PCI ID 10de:2b85)", "newer branch",
                     ["driver none bound", "kernel module: 470.256.02", "NVML lists 0 of 1"])
    assert "too old to know this GPU" in v["message"] and "cannot tell these apart" in v["message"]


# ---------------------------------------------------------------- --explain

# Messages as users pasted them, word for word, with where each was seen.
MESSAGES = [
    # https://github.com/lllyasviel/Fooocus/issues/1313
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver "
     "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively,"
     " go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA "
     "driver.", {1}),
    # https://github.com/NVIDIA/nvidia-docker/issues/498
    ('CUDA error at D:/Bld/rel/gpgpu/toolkit/r8.0/demo_suite/bandwidthTest/bandwidthTest.cu:255 '
     'code=35(cudaErrorInsufficientDriver) "cudaSetDevice(currentDevice)"', {1}),
    # https://github.com/friedrichor/NLP-HuggingFace-Tutorial/issues/1
    ("/usr/local/miniconda3/lib/python3.8/site-packages/torch/cuda/__init__.py:88: UserWarning: CUDA initialization: "
     "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that "
     "might have already set an error? Error 804: forward compatibility was attempted on non supported HW (Triggered "
     "internally at ../c10/cuda/CUDAFunctions.cpp:109.)", {2}),
    ("error 804", {2}),
    ("804", {2}),
    # https://github.com/CompVis/stable-diffusion/issues/439
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / cuda "
     "driver combination", {3}),
    # https://github.com/NVIDIA/nvidia-docker/issues/1256
    ("CUDA: Check failed: e == cudaSuccess (803 vs. 0) : system has unsupported display driver / cuda driver "
     "combination", {3}),
    # https://github.com/tinygrad/open-gpu-kernel-modules/issues/47
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124", {4}),
    # https://github.com/microsoft/lisa/issues/2823
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized "
     "(Triggered internally at  ../c10/cuda/CUDAFunctions.cpp:112.)", {5}),
    # https://github.com/pytorch/pytorch/issues/35710
    ('CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"', {5}),
    # https://github.com/Turoad/CLRNet/issues/83
    ("NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.\n"
     "RuntimeError: CUDA error: no kernel image is available for execution on the device", {6}),
    # https://github.com/EricLBuehler/mistral.rs/issues/867
    ('Error: DriverError(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported '
     'toolchain.") when loading dequantize_block_q4_K_f32', {7}),
    # https://github.com/mit-han-lab/inter-operator-scheduler/issues/4
    ("Cuda failure: 222 the provided PTX was compiled with an unsupported toolchain.", {7}),
    # https://github.com/NVIDIA/nvidia-docker/issues/1235
    ("stderr: nvidia-container-cli: initialization error: cuda error: no cuda-capable device is detected", {8, 9, 12, 16}),
    # https://github.com/matatonic/openedai-images-flux/issues/7
    ("RuntimeError: No CUDA GPUs are available", {8, 9, 16}),
    # https://github.com/microsoft/SimXNS/issues/2
    ("RuntimeError: CUDA error: invalid device ordinal", {9}),
    # https://github.com/fboulnois/stable-diffusion-docker/issues/22
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 34: CUDA driver is a stub library "
     "(Triggered internally at  ../c10/cuda/CUDAFunctions.cpp:109.)", {10}),
    # https://github.com/ApolloAuto/apollo/issues/2466
    ("ERROR: The Nouveau kernel driver is currently in use by your system.  This driver is incompatible with the NVIDIA"
     " driver, and must be disabled before proceeding.", {11}),
    # https://github.com/GoogleCloudPlatform/compute-gpu-installation/pull/18
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", {12}),
    # https://github.com/acidanthera/bugtracker/issues/2237
    ("mar 06 15:10:43 CS3003NS gdm3[7055]: modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
     {12}),
    # https://github.com/compiler-explorer/infra/issues/1413
    ("modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-1015-aws", {12}),
    # https://github.com/vllm-project/vllm/issues/31018
    ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", {13}),
    # https://github.com/RVC-Boss/GPT-SoVITS/issues/727
    ("RuntimeError: Library libcublas.so.12 is not found or cannot be loaded", {13}),
    # https://github.com/daswer123/xtts-finetune-webui/issues/18
    ("Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}", {13}),
    # https://github.com/pytorch/audio/pull/3380
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 7, 0) but found runtime version "
     "(8, 5, 0). PyTorch already comes bundled with cuDNN.", {14}),
    # https://github.com/pytorch/pytorch/issues/120186
    ("torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister", {14}),
    # https://github.com/hcnoh/gail-pytorch/issues/5
    ("OSError: /home/dl/GAIL/GAIL/lib/python3.8/site-packages/torch/lib/../../nvidia/cublas/lib/libcublas.so.11: "
     "undefined symbol: cublasLtGetStatusString, version libcublasLt.so.11", {14}),
    # https://github.com/Adamdad/rational_kat_cu/issues/4
    ("RuntimeError:\nThe detected CUDA version (12.1) mismatches the version that was used to compile\n"
     "PyTorch (11.8). Please make sure to use the same CUDA versions.", {15}),
    # https://github.com/ComputeCanada/puppet-magic_castle/pull/276
    ("slurmd: fatal: MIG mode is enabled, but no MIG devices were found. Please either create MIG instances, disable "
     "MIG mode, remove AutoDetect=nvml, or remove GPUs from the configuration completely.", {16}),
    # https://github.com/pytorch/pytorch/issues/100691
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", {17}),
    # https://github.com/NVIDIA/DIGITS/issues/2005
    ("Check failed: error == cudaSuccess (46 vs. 0)  all CUDA-capable devices are busy or unavailable", {17}),
    # https://github.com/vllm-project/vllm/issues/5222
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", {18}),
    # https://github.com/NVIDIA/nvidia-docker/issues/849
    ("[Mon Oct 29 12:07:39 2018] NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been "
     "detected on GPU in the framebuffer at partition 4, subpartition 1.", {18}),
    ("NVRM: Xid (PCI:0000:8a:00): 63, Dynamic Page Retirement: New page retired, reboot to activate "
     "(0x00000000002ce8ac).", {18}),
    # https://github.com/microsoft/WSL/issues/11229
    ("ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link", {19}),
    # https://github.com/Bumblebee-Project/Bumblebee/issues/810
    ("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:13b0)\nNVRM: installed in this system is not supported by the "
     "367.57\nNVRM: NVIDIA Linux driver release.  Please see 'Appendix", {20}),
    # https://github.com/siderolabs/talos/issues/8764
    ("NVRM: The NVIDIA GeForce GT 710 GPU installed in this system is\nNVRM:  supported through the NVIDIA 470.xx "
     "Legacy drivers. Please\nNVRM: No NVIDIA GPU found.", {20}),
]


def scenarios_named(stdout):
    return {int(line[1:line.index("]")]) for line in stdout.splitlines() if line.startswith("[")}


@pytest.mark.parametrize("text,want", MESSAGES, ids=[str(sorted(w)) + ":" + t[:40] for t, w in MESSAGES])
def test_explain_names_the_scenario_of_each_real_message(machine, text, want):
    r = machine.run("--here", "--explain", text)
    named = scenarios_named(r.stdout)
    assert want <= named, (named, r.stdout)
    assert len(named) <= len(want) + 2, named  # specific: not everything at once
    # A healthy H200 shows none of the causes (a library lookup is one, for 13).
    assert r.returncode == 0, r.stdout + r.stderr  # recognised: the answer is in the text, not the exit code
    if 13 not in want:
        assert "None of these causes shows on this machine" in r.stdout
    assert r.stderr == "" or "Warning" in r.stderr


def test_explain_finds_the_cause_on_a_machine_that_has_it(machine):
    machine.desc["driver"]["init_result"] = 804
    machine.libcuda_at("usr/local/cuda-13.0/compat", version="580.95.05")
    r = machine.run("--here", "--explain", "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
                                 "compatibility was attempted on non supported HW")
    assert r.returncode == 0, r.stdout
    assert "[2] Forward-compatibility libraries" in r.stdout
    assert "FOUND HERE (error, driver.compat_unsupported)" in r.stdout
    assert "seen: cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)" in r.stdout
    assert "fix:  take " in r.stdout
    # The message can come on stdin, as a pasted log does.
    r = machine.run("--here", "--explain", "-", stdin="some log\nError 804: forward compatibility was attempted on non supported HW\n")
    assert r.returncode == 0 and "[2]" in r.stdout


@pytest.mark.parametrize("text", ["hello world", "Segmentation fault (core dumped)", "", "error 12345",
                                  "RuntimeError: CUDA error on H100 at line 46", "Error: NVIDIA A100-SXM4-80GB",
                                  "ERROR: step 209 failed", "error in cuda sm_100 kernel"])
def test_explain_refuses_what_it_does_not_know(machine, text):
    r = machine.run("--here", "--explain", text)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == "bench: --explain: not a CUDA set-up error I know"
    assert r.stdout == ""


def test_explain_alternatives_of_one_library_found_here_are_no_cause(machine, tmp_path):
    # "Unable to load any of {...}": one of the names found is enough.
    r = machine.run("--here", "--explain", "Unable to load any of {libcudart.so.13.9.9, libcudart.so.13, libcudart.so}")
    assert r.returncode == 0, r.stdout
    assert "[13]" in r.stdout and "FOUND HERE" not in r.stdout


def test_explain_takes_nothing_else(machine):
    r = machine.run("--here", "--explain", "error 804", "--env")
    assert r.returncode == 2 and "--explain takes only the message" in r.stderr
