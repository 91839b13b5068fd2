#!/usr/bin/env bash
# Copies what a machine without a package registry needs into .deps/ (ignored
# by git), for scripts/gpu-check.sh there: the sources of Google Benchmark
# and RE2 (Debian's source packages) and GoogleTest, the nlohmann_json, CLI11 and Gloo
# headers, and Fashion-MNIST. CMake uses .deps/ only when find_package finds
# nothing. About 40 MB. It runs scripts/setup.sh --tests first. It also
# writes .deps/REVISION, the commit (with "-dirty" for uncommitted changes),
# which the build records when the tree travels without .git: run it before
# each device call.
#   scripts/vendor-deps.sh [-h|--help]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/lib.sh"
script_start "$@"
deps="$root/.deps"
mkdir -p "$deps"
bash "$root/scripts/setup.sh" --tests
# Debian's source package NAME as .deps/NAME, once; then `STEP` run in it.
# Its work folder goes on any exit (a failure, a signal).
work=""
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
vendor_source() {
  local name="$1" step="${2:-true}" src
  [ ! -f "$deps/$name/CMakeLists.txt" ] || return 0
  work="$(mktemp -d)"
  (cd "$work" && apt-get source -qq "$name" >/dev/null 2>&1) || { echo "vendor-deps: apt-get source $name failed" >&2; exit 3; }
  src="$(find "$work" -maxdepth 1 -type d -name "$name-*" | head -n1)"
  (cd "$src" && "$step")
  rm -rf "$deps/$name" && mv "$src" "$deps/$name" && rm -rf "$work"
}
# Debian's RE2 source leaves out the generated tables: made from Debian's unicode-data.
re2_tables() {
  apt-get install -y -qq unicode-data >/dev/null 2>&1 || { echo "vendor-deps: apt-get install unicode-data failed" >&2; exit 3; }
  { perl re2/make_perl_groups.pl > re2/perl_groups.cc && python3 re2/make_unicode_casefold.py > re2/unicode_casefold.cc \
      && python3 re2/make_unicode_groups.py > re2/unicode_groups.cc; } || { echo "vendor-deps: RE2's tables could not be made" >&2; exit 3; }
}
vendor_source benchmark
vendor_source re2 re2_tables
[ -d "$deps/googletest" ] || cp -r /usr/src/googletest "$deps/googletest"
[ -d "$deps/nlohmann" ] || cp -r /usr/include/nlohmann "$deps/nlohmann"
[ -d "$deps/CLI" ] || cp -r /usr/include/CLI "$deps/CLI"
# Gloo's headers (Debian's libgloo-dev): c10d's ProcessGroupGloo.hpp includes them.
[ -d "$deps/gloo" ] || { mkdir -p "$deps/gloo/include" && cp -r /usr/include/gloo "$deps/gloo/include/gloo"; }
[ -d "$deps/fashion-mnist" ] || cp -r /usr/share/datasets/fashion-mnist "$deps/fashion-mnist"
rev="$(git -C "$root" rev-parse --short HEAD)"
# Untracked files that git does not ignore travel with the tree too.
[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ] || rev="$rev-dirty"
echo "$rev" > "$deps/REVISION.tmp" && mv "$deps/REVISION.tmp" "$deps/REVISION"
du -sh "$deps" | sed 's/^/vendor-deps: /' >&2
