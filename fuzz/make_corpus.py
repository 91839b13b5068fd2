#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (committed; rerun only
to change them): small valid inputs of each kind, and a few damaged ones."""
import gzip
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def images(n, rows=28, cols=28):
    return struct.pack(">IIII", 0x803, n, rows, cols) + bytes((i * 37) % 256 for i in range(n * rows * cols))


def labels(n):
    return struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n))


def tiny_fatbin_elf():
    """A minimal ELF64 with a section-name table and a .nv_fatbin section
    holding one container of two entries (SASS sm_90, PTX compute_90)."""
    names = b"\0.shstrtab\0.nv_fatbin\0"

    def entry(kind, sm, payload):
        # kind, version, header size, padded payload size at 0, 2, 4, 8; sm at 28.
        head = struct.pack("<HHIII", kind, 0x101, 64, len(payload), 0) + bytes(12) + struct.pack("<I", sm)
        return head + bytes(64 - len(head)) + payload

    body = entry(2, 90, b"\x7fELF" + bytes(12)) + entry(1, 90, b".version 8.0\0\0\0\0")
    fatbin = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
    data_off = 64
    names_off = data_off + len(fatbin)
    sh_off = (names_off + len(names) + 7) & ~7
    header = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, sh_off, 0, 64, 0, 0,
                                                               64, 3, 1)
    def section(name, off, size):
        return struct.pack("<IIQQQQIIQQ", name, 1, 0, 0, off, size, 0, 0, 1, 0)
    sections = bytes(64) + section(1, names_off, len(names)) + section(11, data_off, len(fatbin))
    out = header + fatbin + names
    return out + bytes(sh_off - len(out)) + sections


def main():
    shutil.rmtree(os.path.join(HERE, "corpus"), ignore_errors=True)
    idx = {"images-2": images(2), "images-1-4x4": images(1, 4, 4), "labels-10": labels(10),
           "labels-bad-class": struct.pack(">II", 0x801, 2) + b"\x00\x0c", "images-truncated": images(2)[:-9],
           "images-zero": images(0), "header-only": struct.pack(">I", 0x803), "idx-ubyte-2d": struct.pack(
               ">IIII", 0x802, 2, 3, 0) + bytes(6)}
    for name, data in idx.items():
        put("fuzz_idx", name, data)
        put("fuzz_idx_gzip", name + ".gz", gzip.compress(data, mtime=0))
    put("fuzz_idx_gzip", "stored.gz", gzip.compress(labels(3), compresslevel=0, mtime=0))

    probe = [
        (0, '{"cuda": {"name": "CUDA SDK", "version": "13.0.88"}, "cuda_cccl": {"version": "13.0.85"}}'),
        (1, "CUDA Version 10.2.89\n"),
        (2, "nvidia_cuda_runtime_cu12-12.4.127.dist-info"),
        (3, "cuda-nvcc-12.4.131-0.json"),
        (4, "#ifndef __CUDA_RUNTIME_API_H__\n#define CUDART_VERSION 13000\n"),
        (5, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:55:41 UTC 2025\n"),
        (6, "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"),
        (7, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05"),
        (8, "V13.0.88"),
    ]
    for sel, text in probe:
        put("fuzz_env_probe", f"parser-{sel}", bytes([sel]) + text.encode())

    explain = [
        (0, "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
            "compatibility was attempted on non supported HW"),
        (0, 'CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"'),
        (0, "NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been detected"),
        (1, "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}"),
        (2, "0,GPU-0c4f,-1,3"),
    ]
    for i, (sel, text) in enumerate(explain):
        put("fuzz_explain", f"explain-{i}", bytes([sel]) + text.encode())
    # A real fatbin: the start of an ELF whose .nv_fatbin holds one container.
    put("fuzz_explain", "fatbin-elf", bytes([3]) + tiny_fatbin_elf())

    fix = os.path.join(ROOT, "tests", "fixtures", "compare")
    for name in ("single_new.json", "with_error.json", "unknown_unit.json"):
        with open(os.path.join(fix, name), "rb") as f:
            put("fuzz_compare_json", name, f.read())
    put("fuzz_compare_json", "aggregates.json", json.dumps({"context": {"cuda_toolkit": "13.0"}, "benchmarks": [
        {"name": "VectorAdd/cuda_v4/n:1000000/manual_time_median", "run_name": "VectorAdd/cuda_v4/n:1000000/manual_time",
         "run_type": "aggregate", "aggregate_name": "median", "real_time": 90.0, "time_unit": "us",
         "bytes_per_second": 1.3e11}]}))
    put("fuzz_compare_json", "floors.json", json.dumps({"benchmarks": {
        "VectorAdd/cuda_v4/n:1000000/manual_time": {"process_medians": [0.98, 1.0, 1.01, 1.03]}}}))


if __name__ == "__main__":
    main()
