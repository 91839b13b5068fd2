# Shared helpers for the scripts (sourced, not run).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "usage: . scripts/lib.sh (the scripts' shared helpers: they source it; there is nothing to run)" 2>/dev/null || { echo "lib.sh: standard output: cannot write" >&2; exit 3; }
  exit 0
fi
# This folder, whatever the caller's CUDABENCH_ROOT and current folder.
LIB_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The signals that end a script cleanly (process/ending_signals.txt, the
# one list; C++ and the Python tools read it too).
ENDING_SIGNALS=()
read -ra ENDING_SIGNALS < <(grep -v '^#' "$LIB_SCRIPTS/../process/ending_signals.txt" 2>/dev/null | tr '\n' ' ') || true
[ "${#ENDING_SIGNALS[@]}" -gt 0 ] || {
  echo "${0##*/}: $LIB_SCRIPTS/../process/ending_signals.txt is missing: a whole cudabench checkout has it" >&2; exit 3; }

# on_ending_signals FUNC [ARGS...]: on each ending signal, FUNC ARGS... NAME
# (the signal's name: `exit_status_of NAME` is the status it stands for).
on_ending_signals() {
  local sig
  for sig in "${ENDING_SIGNALS[@]}"; do
    # shellcheck disable=SC2064
    trap "$* $sig" "$sig"
  done
}

# 128 + the signal's number: a script ended by signal NAME exits with it.
exit_status_of() {
  echo $((128 + $(kill -l "$1")))
}

# HOME, when it is unset (cron, env -i), is this user's home from passwd:
# the cache (~/.cache/cudabench) and CMake's defaults are made from it.
if [ -z "${HOME:-}" ] && HOME="$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6)" && [ -n "$HOME" ]; then
  export HOME
fi

# The cache folder: CUDABENCH_CACHE, else ~/.cache/cudabench. With neither
# a home nor CUDABENCH_CACHE: one line naming both, and status 2.
cache_dir() {
  if [ -n "${CUDABENCH_CACHE:-}" ]; then echo "$CUDABENCH_CACHE"
  elif [ -n "${HOME:-}" ]; then echo "$HOME/.cache/cudabench"
  else
    echo "${0##*/}: HOME is unset and user $(id -u) has no home in passwd: set HOME, or CUDABENCH_CACHE to the cache folder" >&2
    return 2
  fi
}

# The running script's leading comment block without its "# ": its usage.
# (Found by its full path: the scripts change folder.)
SCRIPT_FILE="$(readlink -f -- "$0" || echo "$0")"
# Standard output that cannot take it (a full disk, closed) is exit 3.
usage_from_header() {
  local text
  text="$(sed -n '1{/^#!/d}; /^#/!q; /^# shellcheck/d; s/^# \{0,1\}//p' "$SCRIPT_FILE")"
  printf '%s\n' "$text" 2>/dev/null || { echo "${0##*/}: standard output: cannot write" >&2; exit 3; }
}

# Every script's first step: -h or --help as the first argument prints its
# usage and exits 0, before anything is installed, built or written; then a
# bad numeric setting (CUDABENCH_PROBE_SECONDS, ...) or a TMPDIR that mktemp
# cannot write in is exit 2 in one line, before any work.
script_start() {
  case "${1:-}" in -h|--help) usage_from_header; exit 0 ;; esac
  setting || exit 2  # a bad CUDABENCH_*_SECONDS is refused before anything runs
  local t
  if t="$(mktemp 2>/dev/null)"; then rm -f "$t"; return 0; fi
  echo "${0##*/}: ${TMPDIR:+TMPDIR=}${TMPDIR:-/tmp}: cannot make a temporary file there: set TMPDIR to a writable folder" >&2
  exit 2
}

# Configure quietly (the log is shown only when it fails), then build.
# Usage: configure_and_build <build-dir> [cmake args...]
configure_and_build() {
  configure_and_build_source "$CUDABENCH_ROOT" "$@"
}

# The CMake arguments that put compiles through ccache (none without it,
# with CUDABENCH_NO_CCACHE=1, or without a cache folder), one per line: its
# cache in $CUDABENCH_CACHE/ccache, paths relative to the source tree <src>.
ccache_launcher() {
  local cache l
  if command -v ccache >/dev/null 2>&1 && [ "${CUDABENCH_NO_CCACHE:-0}" != 1 ] && cache="$(cache_dir 2>/dev/null)"; then
    l="env;CCACHE_DIR=$cache/ccache;CCACHE_BASEDIR=$1;CCACHE_NOHASHDIR=1;ccache"
    printf '%s\n' "-DCMAKE_CXX_COMPILER_LAUNCHER=$l" "-DCMAKE_CUDA_COMPILER_LAUNCHER=$l"
  fi
}

# The stack a build is made with (scripts/stacks.py, the choice setup.sh
# installed): STACK[stack], STACK[venv], STACK[toolkit_root], ... Filled
# once; stack_plan --stack CUDA:TORCH fills it with that stack instead.
# Returns 2 when stacks.py refused (it said why), 3 when it failed.
declare -gA STACK=()
stack_plan() {
  local out k v rc=0
  [ $# -gt 0 ] || [ -z "${STACK[stack]:-}" ] || return 0
  command -v python3 >/dev/null || { echo "${0##*/}: choosing the stack needs python3, which is not on PATH" >&2; return 3; }
  out="$(python3 "$CUDABENCH_ROOT/scripts/stacks.py" plan "$@")" || rc=$?
  [ "$rc" -eq 0 ] || { [ "$rc" -eq 2 ] && return 2; return 3; }
  STACK=()
  while IFS='=' read -r k v; do STACK[$k]="$v"; done <<<"$out"
}

# The CMake arguments that bind a build to STACK, one per line: its venv
# (the tools), its LibTorch (named, so that neither an outer Torch_DIR nor
# an importable torch takes its place) and its toolkit. A build folder made
# for another stack starts afresh: its cache would keep the other LibTorch
# (CMake itself, seeing another compiler, would re-run with its defaults).
# Usage: stack_cmake_args <build-dir> <Torch_DIR or "">
stack_cmake_args() {
  local dir="$1" torch_dir="$2" nvcc="${STACK[toolkit_root]}/bin/nvcc" cache="$1/CMakeCache.txt" venv_was nvcc_was
  [ -x "$nvcc" ] || nvcc=""
  if [ -f "$cache" ]; then
    venv_was="$(sed -n 's/^CUDABENCH_VENV_DIR:PATH=//p' "$cache")"
    nvcc_was="$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$cache")"
    if [ "$venv_was" != "${STACK[venv]}" ] || [ "${nvcc:-$nvcc_was}" != "$nvcc_was" ]; then
      rm -rf "$cache" "$dir/CMakeFiles"
    fi
  fi
  echo "-DCUDABENCH_VENV_DIR=${STACK[venv]}"
  [ -z "$torch_dir" ] || echo "-DTorch_DIR=$torch_dir"
  [ -z "$nvcc" ] || printf '%s\n' "-DCMAKE_CUDA_COMPILER=$nvcc" "-DCUDAToolkit_ROOT=${STACK[toolkit_root]}"
}

# The same for another source tree (the revision gate's base revision).
# With ccache installed, compiles go through it, with its cache in
# $CUDABENCH_CACHE/ccache and paths taken relative to the source tree, so
# another clone or worktree of the same revision compiles from the cache.
# CUDABENCH_BUILD_TARGET builds one target instead of all.
# Usage: configure_and_build_source <source-dir> <build-dir> [cmake args...]
configure_and_build_source() {
  local rc=0
  hold_build_lock "$2" || return
  configure_and_build_locked "$@" || rc=$?
  # The lock ends here (and with this shell, if it is stopped); a caller
  # that runs what it built (run-bench.sh: KEEP_BUILD_SHARED=1) keeps it
  # shared until it ends, so that no other build relinks the programs mid-run.
  if [ "$rc" = 0 ] && [ "${KEEP_BUILD_SHARED:-0}" = 1 ]; then flock -s 8; else exec 8>&-; fi
  return "$rc"
}

# One configure and build of a folder at a time: two runs in one checkout
# (run-bench.sh twice) would configure build/ over each other. The second
# waits, saying for whom, up to CUDABENCH_BUILD_LOCK_SECONDS (an hour);
# past that, one line and status 3. The lock is fd 8, held until the caller
# closes it; the build's own programs do not inherit it.
hold_build_lock() {
  local dir="$1" lock="$1/.build.lock" wait
  wait="$(setting CUDABENCH_BUILD_LOCK_SECONDS)" || return
  mkdir -p "$dir" && exec 8<>"$lock" || { echo "build: $dir: cannot make its lock file $lock" >&2; return 3; }
  if ! flock -n 8; then
    echo "build: waiting for another build or run of $dir (held by $(lock_holders "$lock"))" >&2
    flock -w "$wait" 8 || {
      echo "build: $dir: another build still held it after $wait s: stop it, or build elsewhere" >&2
      exec 8>&-; return 3
    }
  fi
}

# Who holds the flock on the file `lock` now: the processes whose open
# file carries it (/proc/*/fdinfo: the script that took it, and whatever
# inherited it), not who wrote the file last, who may have ended, nor who
# waits for it, nor the `flock` program that took it for its shell.
# "pid N (its command)", at most 3.
lock_holders() {
  local id f pid cmd out=() seen=" "
  id="$(stat -L -c '%Hd %Ld %i' -- "$1" 2>/dev/null)" && id="$(printf '%02x:%02x:%s' $id)" || id=""
  while IFS= read -r f; do
    pid="${f#/proc/}"; pid="${pid%%/*}"
    case "$seen" in *" $pid "*) continue ;; esac
    seen+="$pid "
    cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-60 | sed 's/ *$//')"
    out+=("pid $pid (${cmd:-gone})")
    [ "${#out[@]}" -lt 3 ] || break
  done < <([ -n "$id" ] && grep -lE "^lock:[[:space:]]+[0-9]+: FLOCK +ADVISORY +(READ|WRITE) +[0-9]+ +$id " \
             /proc/[0-9]*/fdinfo/* 2>/dev/null)
  [ "${#out[@]}" -gt 0 ] || out=("a process this user cannot see")
  local said="${out[0]}" more
  for more in "${out[@]:1}"; do said+=", $more"; done
  echo "$said"
}

configure_and_build_locked() {
  local src="$1" dir="$2"; shift 2
  local log launcher=() stack_args=() torch_dir=""
  stack_plan || return
  if [ "${STACK[toolkit]}" = pypi ] && [ ! -x "${STACK[toolkit_root]}/bin/nvcc" ]; then
    echo "build: the stack's toolkit ${STACK[toolkit_root]} is not installed: run scripts/setup.sh" >&2
    return 3
  fi
  if [ -n "${STACK[torch]}" ]; then
    torch_dir="$(compgen -G "${STACK[venv]}/lib/python3*/site-packages/torch/share/cmake/Torch" | head -n1)" || true
    [ -n "$torch_dir" ] || {
      echo "build: the stack's LibTorch ${STACK[torch]} is not installed in ${STACK[venv]}: run scripts/setup.sh" >&2
      return 3
    }
  fi
  mapfile -t launcher < <(ccache_launcher "$src")
  mapfile -t stack_args < <(stack_cmake_args "$dir" "$torch_dir")
  log="$dir/.configure.log"  # in the build folder (locked): no temporary file a signal could leave
  if ! cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${stack_args[@]}" "$@" >"$log" 2>&1 8>&-; then
    cat "$log" >&2; return 3
  fi
  grep -E '^-- cudabench:' "$log" >&2 || true
  # A failed build is the tool failing (3), never a wrong result (1).
  cmake --build "$dir" ${CUDABENCH_BUILD_TARGET:+--target "$CUDABENCH_BUILD_TARGET"} 8>&- || return 3
}

# setting NAME: a numeric setting's value (common/settings.json, parsed as
# bench, train and the Python tools parse it: cudabench/base/settings.py),
# or one line naming it and status 2. Without NAME, every setting checked.
setting() {
  local out
  if ! command -v python3 >/dev/null; then  # before setup.sh: a script that needs none starts
    [ -n "${1:-}" ] || return 0
    echo "${0##*/}: reading $1 needs python3, which is not on PATH" >&2; return 3
  fi
  out="$(PYTHONPATH="$LIB_SCRIPTS" python3 -m cudabench.base.settings "$@")" || {
    echo "${0##*/}: $out" >&2; return 2
  }
  [ -z "$out" ] || echo "$out"
}

# Progress lines, in the one form (cudabench/base/progress.py prints them):
# progress_reader TOOL UNIT [--ninja] reads "DONE ALL [WHAT]" lines (or
# ninja's output) on its input. A script's loop opens one reader on fd 7
# (start_progress TOOL UNIT), says each step to it (say_progress DONE ALL
# [WHAT]) and ends it (stop_progress: its last line is out before the
# script's next, within 2 s); build_progress TOOL < a build's output.
progress_reader() {
  PYTHONPATH="$LIB_SCRIPTS" python3 -m cudabench.base.progress "$@"
}
PROGRESS_PID=""
start_progress() {
  exec 7> >(progress_reader "$1" "$2")
  PROGRESS_PID=$!
}
say_progress() {
  echo "$*" >&7
}
stop_progress() {
  local waited=0
  exec 7>&-
  while [ -n "$PROGRESS_PID" ] && kill -0 "$PROGRESS_PID" 2>/dev/null && [ "$waited" -lt 20 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  PROGRESS_PID=""
}
build_progress() {
  progress_reader "$1" "build steps" --ninja
}

# The stack's venv python (scripts/setup.sh makes it).
project_python() {
  stack_plan || return
  echo "${STACK[venv]}/bin/python"
}

# The deadline of each probe of the driver and each nvidia-smi call, in
# seconds: CUDABENCH_PROBE_SECONDS (checked by script_start).
probe_seconds() {
  setting CUDABENCH_PROBE_SECONDS
}

# probe SECONDS COMMAND...: a program asked something (nvidia-smi, nvcc
# --version, bench --env), within SECONDS (+2 for one that ignores TERM)
# even when it hangs or leaves children that hold its output open, which a
# pipe or $(...) would wait for: timeout runs it in a process group of its
# own with its output in files, and the group is killed when timeout ends.
# Its status: the program's; 124 or 137 when it ran out of time; 127 when
# it is not there. A signal to the script stops the probe's group too, then
# the script's own trap (or the signal's default) follows.
probe() {
  local secs="$1" out err pid rc=0 sig traps; shift
  command -v "$1" >/dev/null 2>&1 || return 127
  out="$(mktemp)" && err="$(mktemp)" || return 3
  timeout -k 2 "$secs" "$@" >"$out" 2>"$err" <&0 &
  pid=$!
  traps="$(trap -p "${ENDING_SIGNALS[@]}")"
  for sig in "${ENDING_SIGNALS[@]}"; do
    trap "kill -KILL -- -$pid 2>/dev/null; rm -f '$out' '$err'; trap - ${ENDING_SIGNALS[*]}; $traps
          kill -$sig \$BASHPID" "$sig"
  done
  wait "$pid" 2>/dev/null || rc=$?  # no "Killed" line: the status says it
  trap - "${ENDING_SIGNALS[@]}"; eval "$traps"
  kill -KILL -- "-$pid" 2>/dev/null || true
  cat "$out"; cat "$err" >&2
  rm -f "$out" "$err"
  return "$rc"
}

# check_driver_once BUILD: cudabench-driver-check of BUILD, within the
# probe's deadline, once for every bench and train process this script
# starts after it: CUDABENCH_DRIVER_CHECKED=ok exported (process/load_guard.cpp),
# not a GPU initialisation apiece. A check that does not finish exports
# nothing (status 1): each process then checks, and withholds the driver.
check_driver_once() {
  local out
  local secs
  unset CUDABENCH_DRIVER_CHECKED
  secs="$(probe_seconds)" || return 1
  out="$(probe "$secs" "$1/cudabench-driver-check" 2>/dev/null)" || return 1
  [[ "$out" == *"calling nothing: done" ]] || return 1
  export CUDABENCH_DRIVER_CHECKED=ok
}

# nvidia-smi ARGS... within that deadline (probe).
nvidia_smi() {
  local secs
  secs="$(probe_seconds)" || return 3
  probe "$secs" nvidia-smi "$@"
}

# A name for this kind of machine: the GPU's (nvidia-smi, within its
# deadline), or the CPU's: its model, identity, ISA level and threads.
# CUDABENCH_MACHINE overrides.
# It names a folder under results/ and the history: one safe path component,
# never a path (../../x, /), or the caller stops with exit 2.
machine_label() {
  if [ -n "${CUDABENCH_MACHINE:-}" ]; then
    if [[ ! "$CUDABENCH_MACHINE" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$ ]]; then
      echo "${0##*/}: CUDABENCH_MACHINE=$CUDABENCH_MACHINE: expected one name of letters, digits, '.', '_' and '-' (not a path)" >&2
      return 2
    fi
    echo "$CUDABENCH_MACHINE"
    return
  fi
  local name
  name="$(nvidia_smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)"
  if [ -n "$name" ]; then
    echo "$name" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+|-+$//g'
    return
  fi
  # The CPU's kind, named as results/context.py's hardware_of names a run's.
  command -v python3 >/dev/null || { echo "${0##*/}: naming this CPU's kind needs python3, which is not on PATH" >&2; return 3; }
  PYTHONPATH="$LIB_SCRIPTS" python3 -m cudabench.results.context this-cpu
}

# The toolkit a build used, as its own environment report names it:
# cuda-13.0.88, or cpu-only for a build without CUDA.
toolkit_label() {
  local v
  v="$(probe 60 "$1/bench" --env=json 2>/dev/null | sed -n 's/.*"cuda_toolkit_version": *"\([^"]*\)".*/\1/p' | head -n1)"
  if [ -n "$v" ]; then echo "cuda-$v"; else echo "cpu-only"; fi
}

# The rows the benchmark families ask to be tracked (bench/family.h: each
# family declares its default rows and its gate rows), as one filter from
# the build's bench: family_rows KIND [BUILD], KIND default (the default
# run), gate (the revision gate, its calibration and the machine history:
# the GPU rows match nothing where no GPU is usable), gate-cpu or gate-gpu
# (the fleet: the CPU rows on every node, the GPU rows on every GPU).
family_rows() {
  local bench="${2:-$CUDABENCH_ROOT/build}/bench" rows
  rows="$(probe 60 "$bench" --rows="$1")" && [ -n "$rows" ] || {
    echo "cudabench: $bench --rows=$1 gave no rows (build bench first)" >&2; return 3; }
  echo "$rows"
}

# The sanitize preset's build (AddressSanitizer + UBSan under clang, no CUDA,
# no LibTorch, the libFuzzer targets) in build-san, through ccache like the
# others. Returns 3 when it fails.
build_sanitize() {
  local log launcher=()
  mapfile -t launcher < <(ccache_launcher "$CUDABENCH_ROOT")
  mkdir -p "$CUDABENCH_ROOT/build-san"
  log="$CUDABENCH_ROOT/build-san/.configure.log"  # no temporary file a signal could leave
  if ! (cd "$CUDABENCH_ROOT" && cmake --preset sanitize "${launcher[@]}") >"$log" 2>&1; then
    cat "$log" >&2; return 3
  fi
  (cd "$CUDABENCH_ROOT" && cmake --build --preset sanitize) || return 3
}

# ab.py's --labels for revisions A and B: their names, told apart when they
# are one revision (regress.sh --base HEAD: an A/A run).
ab_labels() {
  if [ "$1" = "$2" ]; then echo "$1 (A),$2 (B)"; else echo "$1,$2"; fi
}

# Runs a command as a job of its own process group and returns its status.
# A script that runs its children through this, and traps with
# stop_jobs_on_signal, stops every process they started (ab.py and its
# bench runs, cmake and its compilers) when it is signalled, at once:
# bash runs a trap only after a foreground child ends.
JOB_PGID=""
ENDS_WITH_US=()
! setpriv --pdeathsig KILL true 2>/dev/null || ENDS_WITH_US=(setpriv --pdeathsig KILL --)
run_job() {
  local rc=0
  set -m
  # No terminal input (a background group reading it would stop) and not
  # the caller's locks (fd 9; fd 8, the build's: a daemon it starts must not
  # keep them) nor its progress reader's pipe (fd 7, which must see its end).
  # Nor may a program outlive this script, even one ended by SIGKILL, which
  # no trap sees: it gets the parent-death signal (Linux's PR_SET_PDEATHSIG).
  # (A function, a build, takes the build lock itself: it is never free under it.)
  if declare -F "$1" >/dev/null; then "$@" </dev/null 9>&- 8>&- 7>&- &
  else "${ENDS_WITH_US[@]}" "$@" </dev/null 9>&- 8>&- 7>&- &
  fi
  JOB_PGID=$!
  set +m
  wait "$JOB_PGID" || rc=$?
  JOB_PGID=""
  return "$rc"
}

# stop_jobs_on_signal [HOOK]: on an ending signal, stop the running job,
# run HOOK with the signal's name (gpu-check.sh records and snapshots
# there), then end this script by that signal.
stop_jobs_on_signal() {
  on_ending_signals stop_job_and_exit "${1:--}"
}

# Stops the running job's whole group (base/processes.py's stop_group: TERM,
# then KILL after 15 s, longer than ab.py's own 10 s for its bench runs and
# ddp_scaling.py's 5 s for its ranks), runs the hook, then ends this script
# by the same signal.
stop_job_and_exit() {
  local hook="$1" sig="$2"
  [ -z "$JOB_PGID" ] || PYTHONPATH="$LIB_SCRIPTS" python3 -m cudabench.base.processes stop-group "$JOB_PGID" 15 || true
  [ "$hook" = - ] || "$hook" "$sig"
  trap - "$sig"
  kill -"$sig" $$
}
