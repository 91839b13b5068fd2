"""A fake machine for the doctor's tests: a GPU description that the fake
libcuda and NVML (tests/fakes) answer from, a fake /proc, /sys, /dev and
/lib/modules under CUDABENCH_PROBE_ROOT, and the library path that puts the
fakes first. test_doctor.py and test_python_envs.py run bench on it."""
import copy
import json
import os
import shutil
import subprocess

from conftest import BENCH, FAKES

H200 = {
    "name": "NVIDIA H200", "cc_major": 9, "cc_minor": 0, "sms": 132, "memory_bytes": 150754820096,
    "memory_clock_khz": 3201000, "bus_width_bits": 6144, "sm_clock_khz": 1980000, "l2_bytes": 62914560,
    "pci_bus_id": "0000:19:00.0", "pci_device_id": "2335",
    "nvml": {
        "uuid": "GPU-0c4f2a1e-7d1b-4e8a-9a51-000000000000", "serial": "1652324000000", "persistence_mode": 1,
        "clocks": {"sm": 1980, "mem": 3201}, "app_clocks": {"sm": 1980, "mem": 3201},
        "max_clocks": {"sm": 1980, "mem": 3201}, "power_limit_mw": 700000, "power_default_mw": 700000,
        "power_max_mw": 700000, "power_usage_mw": 120000, "temperature_c": 31, "clock_event_reasons": 1,
        "ecc": {"current": 1, "pending": 1, "volatile_corrected": 0, "volatile_uncorrected": 0},
        "pcie": {"gen": 5, "gen_max": 5, "width": 16, "width_max": 16},
        "mig": {"current": 0, "pending": 0}, "compute_mode": 0, "processes": "",
        "retired_pages_pending": 0, "remapped_rows": {"pending": 0, "failure": 0},
        "fabric": {"state": 0, "status": 0},
    },
}
DRIVER = "580.95.05"
KERNEL = "6.8.0-90-generic"


class Machine:
    """A fake machine: the GPU description, the file tree, the library path."""

    def __init__(self, tmp, gpus=1):
        self.tmp = tmp
        self.root = tmp / "root"
        self.desc = {"driver": {"cuda_version": 13000, "init_result": 0},
                     "nvml": {"init_result": 0, "driver_version": DRIVER, "cuda_version": 13000},
                     "gpus": []}
        self.env = {}
        self.libcuda_dir = FAKES + "/cuda"
        self.nvml_dir = FAKES + "/nvml"
        self.preload = []
        self.cwd = tmp  # bench looks for a project's own environments here and in its parents
        for i in range(gpus):
            g = copy.deepcopy(H200)
            g["pci_bus_id"] = "0000:%02x:00.0" % (0x19 + 0x22 * i)
            g["nvml"]["uuid"] = H200["nvml"]["uuid"][:-1] + str(i)
            self.desc["gpus"].append(g)
        self.write("proc/sys/kernel/osrelease", KERNEL)
        self.write("proc/version", "Linux version %s (buildd@lcy02) gcc 13" % KERNEL)
        self.write("proc/driver/nvidia/version",
                   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  Tue Sep 23 2025\n"
                   "GCC version:  gcc version 13.3.0" % DRIVER)
        self.mkdir("sys/module/nvidia")
        self.mkdir("sys/module/nvidia_uvm")
        self.write("lib/modules/%s/updates/dkms/nvidia.ko.zst" % KERNEL, "")
        for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
            self.write("dev/" + n, "")
        for i, g in enumerate(self.desc["gpus"]):
            self.write("dev/nvidia%d" % i, "")
            self.pci(g["pci_bus_id"], g["pci_device_id"], "0x030200", "nvidia")

    # The file tree.
    def path(self, rel):
        return self.root / rel

    def write(self, rel, text):
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text if isinstance(text, bytes) else text.encode())

    def mkdir(self, rel):
        self.path(rel).mkdir(parents=True, exist_ok=True)

    def remove(self, rel):
        p = self.path(rel)
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    def pci(self, bus, device, cls, driver):
        d = "sys/bus/pci/devices/" + bus
        self.write(d + "/vendor", "0x10de")
        self.write(d + "/device", "0x" + device)
        self.write(d + "/class", cls)
        if driver:
            self.mkdir("sys/bus/pci/drivers/" + driver)
            os.symlink("../../../bus/pci/drivers/" + driver, self.path(d + "/driver"))

    # The libraries.
    def libcuda_at(self, folder, version=None, name="libcuda.so.1"):
        """The fake libcuda copied to `folder` (under tmp): as libcuda.so.<version>
        with libcuda.so.1 linking to it, as a driver installs it, or as `name`."""
        d = self.tmp / folder
        d.mkdir(parents=True, exist_ok=True)
        src = FAKES + "/cuda/libcuda.so.1"
        if version:
            shutil.copy(src, d / ("libcuda.so." + version))
            os.symlink("libcuda.so." + version, d / name)
        else:
            shutil.copy(src, d / name)
        self.libcuda_dir = str(d)
        return d

    def nvml_at(self, folder, version):
        d = self.tmp / folder
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(FAKES + "/nvml/libnvidia-ml.so.1", d / ("libnvidia-ml.so." + version))
        os.symlink("libnvidia-ml.so." + version, d / "libnvidia-ml.so.1")
        self.nvml_dir = str(d)

    def environment(self):
        desc = self.tmp / "machine.json"
        desc.write_text(json.dumps(self.desc))
        env = dict(os.environ)
        for k in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH"):
            env.pop(k, None)
        env.update({"LD_LIBRARY_PATH": self.libcuda_dir + ":" + self.nvml_dir + ":" + env.get("LD_LIBRARY_PATH", ""),
                    "CUDABENCH_FAKE_GPU": str(desc), "CUDABENCH_PROBE_ROOT": str(self.root)})
        if self.preload:
            env["LD_PRELOAD"] = ":".join(self.preload)
        env.update(self.env)
        return env

    def run(self, *args, stdin=None, as_user=False):
        """bench on this machine; as_user: without root's power to read any
        file (CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped), as a user meets a
        folder they may not read."""
        drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
                "-dac_override,-dac_read_search", "--"] if as_user else []
        return subprocess.run([*drop, BENCH, *args], capture_output=True, text=True, env=self.environment(),
                              input=stdin, timeout=120, cwd=self.cwd)

    def start(self, *args):
        """bench started on this machine, not waited for (a test signals it)."""
        return subprocess.Popen([BENCH, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=self.environment(), cwd=self.cwd)

    def report(self):
        r = self.run("--env=json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def verdict(self, vid, level=None):
        rep = self.report()
        found = [v for v in rep["verdicts"] if v["id"] == vid]
        assert found, "no %s verdict; got:\n%s" % (vid, "\n".join("%s %s: %s" % (v["level"], v["id"], v["message"])
                                                                   for v in rep["verdicts"]))
        if level:
            found = [v for v in found if v["level"] == level]
            assert found, "%s is not %s: %s" % (vid, level, rep["verdicts"])
        return found[0]
