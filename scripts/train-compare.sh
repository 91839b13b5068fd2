#!/usr/bin/env bash
#   scripts/train-compare.sh [-h|--help] [--rounds K] [train arguments...]
# C++ (build/train) against the Python loop (scripts/train_mnist.py) with the
# same torch, model, data and hyper-parameters, interleaved on this machine:
# K rounds (default 3, 1 to 50) of one process each, C++ Python, then Python
# C++, and so on, so that a slow stretch of the machine falls on both. Each
# process gives one sample, its median epoch's images/s. Prints each side's
# median and range, and the C++/Python ratio of the medians with the range
# of the rounds' ratios. Arguments go to both (default: --device cpu --epochs 1).
set -euo pipefail
export CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
rounds=3
if [ "${1:-}" = --rounds ]; then
  [[ "${2:-}" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 50 ] \
    || { echo "train-compare: --rounds ${2:-}: expected a whole number from 1 to 50" >&2; exit 2; }
  rounds=$((10#$2))  # 08 is eight, not an octal error
  shift 2
fi
bash "$CUDABENCH_ROOT/scripts/setup.sh"
configure_and_build "$CUDABENCH_ROOT/build" >/dev/null
py="$(project_python)"
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(--device cpu --epochs 1)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stop_jobs_on_signal  # a signal stops the running training at once
for ((r = 0; r < rounds; r++)); do
  order="cpp py"
  [ $((r % 2)) = 0 ] || order="py cpp"
  for side in $order; do
    if [ "$side" = cpp ]; then run_job "$CUDABENCH_ROOT/build/train" "${args[@]}" --quiet --json "$tmp/cpp$r.json" >/dev/null
    else run_job "$py" "$CUDABENCH_ROOT/scripts/train_mnist.py" "${args[@]}" --json "$tmp/py$r.json" >/dev/null; fi
  done
done
"$py" - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
def sample(side, r):
    doc = json.load(open(f"{folder}/{side}{r}.json"))
    return statistics.median(e["images_per_second"] for e in doc["per_epoch"]), doc["final_test_accuracy"]
c, p = ([sample(side, r) for r in range(rounds)] for side in ("cpp", "py"))
for name, s in (("C++ (LibTorch)", c), ("Python (torch)", p)):
    ips = [x for x, _ in s]
    print(f"{name}  {statistics.median(ips):10.0f} img/s  [{min(ips):.0f}-{max(ips):.0f}] over {rounds} process(es), "
          f"test acc {100 * s[-1][1]:.2f}%")
ratios = [a / b for (a, _), (b, _) in zip(c, p)]
print(f"C++ / Python    {statistics.median(x for x, _ in c) / statistics.median(x for x, _ in p):10.2f}x  "
      f"(rounds {min(ratios):.2f}x-{max(ratios):.2f}x, interleaved)")
PY
