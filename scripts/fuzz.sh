#!/usr/bin/env bash
# The fuzz targets, each for SECONDS (default 30), two at a time:
#   fuzz_idx          the IDX reader on plain bytes
#   fuzz_idx_gzip     its gzip path (inflation bounded by the IDX header)
#   fuzz_env_probe    every text parser of the environment probe
#   fuzz_explain      the doctor: pasted messages, CUDA_VISIBLE_DEVICES, fatbins
#   fuzz_compare_json compare.py's JSON loading (atheris, the venv's python)
# The C++ targets are libFuzzer binaries of the sanitize preset (build-san;
# ASan + UBSan). Each starts from its committed seeds, fuzz/corpus/<target>
# (read only), and grows a working corpus in build-san/fuzz/<target>; a
# crash is saved in build-san/fuzz/artifacts/. For each target it prints
# the executions, executions per second, coverage (libFuzzer's cov: edges
# and ft: features) and corpus size, also in build-san/fuzz/summary.txt.
#   scripts/fuzz.sh [-h|--help] [SECONDS] [TARGET ...]
# Exit codes: 0 nothing found; 1 a target crashed (a defect: the input is
# kept); 2 bad arguments; 3 the build failed.
set -euo pipefail
CUDABENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CUDABENCH_ROOT
. "$CUDABENCH_ROOT/scripts/lib.sh"
script_start "$@"
all=(fuzz_idx fuzz_idx_gzip fuzz_env_probe fuzz_explain fuzz_compare_json)
secs="${1:-30}"
[ $# -eq 0 ] || shift
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: SECONDS '$secs': expected a whole number > 0" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (${all[*]})" >&2; exit 2; }
done
build_sanitize >/dev/null || { echo "fuzz: the sanitize build failed" >&2; exit 3; }
if [ ! -x "$CUDABENCH_ROOT/build-san/fuzz_idx_gzip" ]; then  # a build without zlib has no gzip path
  kept=(); for t in "${targets[@]}"; do [ "$t" = fuzz_idx_gzip ] || kept+=("$t"); done; targets=("${kept[@]}")
  echo "fuzz: fuzz_idx_gzip skipped: this build has no zlib" >&2
fi
py="$(project_python)"
if [[ " ${targets[*]} " == *" fuzz_compare_json "* ]] && ! probe 60 "$py" -c 'import atheris' >/dev/null 2>&1; then
  echo "fuzz: $py cannot import atheris: run scripts/setup.sh --tests" >&2; exit 3
fi
work="$CUDABENCH_ROOT/build-san/fuzz"
mkdir -p "$work/artifacts"

run_one() {
  local t="$1" cmd max_len=4096 extra=()
  case "$t" in
    fuzz_idx_gzip) max_len=65536 ;;
    fuzz_env_probe) extra=(-dict="$CUDABENCH_ROOT/fuzz/env_probe.dict") ;;
    fuzz_explain) max_len=16384 ;;
    fuzz_compare_json) max_len=16384 ;;
  esac
  if [ "$t" = fuzz_compare_json ]; then cmd=(env PYTHONPATH="$CUDABENCH_ROOT/scripts" "$py" "$CUDABENCH_ROOT/fuzz/fuzz_compare_json.py")
  else cmd=("$CUDABENCH_ROOT/build-san/$t"); fi
  mkdir -p "$work/$t"
  "${cmd[@]}" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" "${extra[@]}" \
    "$work/$t" "$CUDABENCH_ROOT/fuzz/corpus/$t" >"$work/$t.log" 2>&1
}

summary() {
  local t="$1" rc="$2" log="$work/$1.log" last execs speed cov ft corp
  last="$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|pulse|NEW|REDUCE)' "$log" | tail -n1 || true)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)"
  speed="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)"
  cov="$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo '?')"
  ft="$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo '?')"
  corp="$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$last" | sed 's/corp: //' || echo '?')"
  local verdict="ok"
  [ "$rc" = 0 ] || verdict="CRASH (exit $rc): see $log and $work/artifacts/"
  printf '%-18s %5ss  execs %-9s %6s/s  cov %-5s ft %-6s corpus %-12s %s\n' \
    "$t" "$secs" "${execs:-?}" "${speed:-?}" "$cov" "$ft" "$corp" "$verdict"
}

: >"$work/summary.txt"
found=0
i=0
while [ $i -lt ${#targets[@]} ]; do
  # Two at a time: one per core.
  pids=() names=()
  for t in "${targets[@]:$i:2}"; do run_one "$t" & pids+=($!); names+=("$t"); done
  for k in "${!pids[@]}"; do
    rc=0; wait "${pids[$k]}" || rc=$?
    summary "${names[$k]}" "$rc" | tee -a "$work/summary.txt"
    [ "$rc" = 0 ] || found=1
  done
  i=$((i + 2))
done
[ "$found" = 0 ] || { echo "fuzz: a target crashed: the input that did it is in $work/artifacts/" >&2; exit 1; }
