#!/usr/bin/env python3
"""The table gpu-check.sh prints last: what a closing note needs from a GPU run.

    gpu_summary.py OUT_DIR    (reads vector_add.json, mnist.json, train_*.json, env.json there)
"""
import json
import os
import sys
from collections import defaultdict


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def medians(doc):
    per = defaultdict(lambda: defaultdict(list))
    for b in (doc or {}).get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        for k in ("real_time", "bytes_per_second", "items_per_second", "frac_of_peak"):
            if k in b:
                per[b.get("run_name", b["name"])][k].append(b[k])
        per[b.get("run_name", b["name"])]["unit"] = b.get("time_unit", "ns")
    out = {}
    for name, d in per.items():
        out[name] = {k: (sorted(v)[len(v) // 2] if isinstance(v, list) else v) for k, v in d.items()}
    return out


def main():
    d = sys.argv[1]
    env = load(os.path.join(d, "env.json")) or {}
    gpus = env.get("gpus") or [{}]
    g = gpus[0]
    print(f"GPU: {g.get('name', '?')} sm_{g.get('compute_capability', '?')}, {g.get('sms', '?')} SMs, "
          f"peak {g.get('peak_bandwidth_bytes_per_s', 0) / 1e9:.0f} GB/s; driver "
          f"{env.get('driver', {}).get('nvml_driver_version') or env.get('driver', {}).get('libcuda_file_version', '?')}"
          f" (CUDA {env.get('driver', {}).get('cuda_version', '?')}); runtime {env.get('runtime', {}).get('loaded_version', '?')}")
    errors = [x for x in (load(os.path.join(d, "vector_add.json")) or {}).get("benchmarks", []) if x.get("error_occurred")]
    errors += [x for x in (load(os.path.join(d, "mnist.json")) or {}).get("benchmarks", []) if x.get("error_occurred")]
    for e in errors:
        print(f"ERROR {e['name']}: {e.get('error_message')}")
    va = medians(load(os.path.join(d, "vector_add.json")))
    print(f"\n{'benchmark':58s} {'GB/s':>9s} {'of peak':>8s}")
    for name in sorted(va):
        if "/n:10000000/" in name or "/n:134217728/" in name or name.startswith("Transfer/") and "bytes:536870912" in name:
            m = va[name]
            frac = f"{100 * m['frac_of_peak']:.0f}%" if "frac_of_peak" in m else "-"
            print(f"{name:58s} {m.get('bytes_per_second', 0) / 1e9:9.1f} {frac:>8s}")
    mn = medians(load(os.path.join(d, "mnist.json")))
    if mn:
        print(f"\n{'benchmark':58s} {'images/s':>10s} {'step':>10s}")
        for name in sorted(mn):
            m = mn[name]
            print(f"{name:58s} {m.get('items_per_second', 0):10.0f} {m.get('real_time', 0):8.3f} {m.get('unit', '')}")
    for f in ("train_cuda", "train_cuda_graph", "train_py_cuda"):
        t = load(os.path.join(d, f + ".json"))
        if t:
            ep = t["per_epoch"]
            secs = sum(e["seconds"] for e in ep)
            ips = sorted(e["images_per_second"] for e in ep)[len(ep) // 2]
            print(f"{f:18s} {len(ep)} epochs {secs:7.2f} s train time, median {ips:8.0f} img/s, "
                  f"final test accuracy {100 * t['final_test_accuracy']:.2f}%")


if __name__ == "__main__":
    main()
