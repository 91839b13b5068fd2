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
