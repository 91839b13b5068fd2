#!/usr/bin/env bash
#   scripts/train-compare.sh [-h|--help] [train arguments...]
# C++ (build/train) against the Python loop (scripts/train_mnist.py) with the
# same torch, model, data and hyper-parameters, in one run on this machine.
# Prints each one's images/s and the C++/Python ratio. Arguments go to both
# (default: --device cpu --epochs 1).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
bash "$CUDABENCH_ROOT/scripts/setup.sh"
configure_and_build "$CUDABENCH_ROOT/build" >/dev/null
py="$(project_python)"
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(--device cpu --epochs 1)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stop_jobs_on_signal  # a signal stops the running training at once
run_job "$CUDABENCH_ROOT/build/train" "${args[@]}" --quiet --json "$tmp/cpp.json"
run_job "$py" "$CUDABENCH_ROOT/scripts/train_mnist.py" "${args[@]}" --json "$tmp/py.json"
"$py" - "$tmp/cpp.json" "$tmp/py.json" <<'PY'
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:3])
ci = [e["images_per_second"] for e in c["per_epoch"]]
pi = [e["images_per_second"] for e in p["per_epoch"]]
cm, pm = sorted(ci)[len(ci) // 2], sorted(pi)[len(pi) // 2]
print(f"\nC++ (LibTorch)  {cm:10.0f} img/s  test acc {100 * c['final_test_accuracy']:.2f}%")
print(f"Python (torch)  {pm:10.0f} img/s  test acc {100 * p['final_test_accuracy']:.2f}%")
print(f"C++ / Python    {cm / pm:10.2f}x  (median epoch throughput)")
PY
