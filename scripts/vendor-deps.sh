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
if [ ! -f "$deps/benchmark/CMakeLists.txt" ]; then
  work="$(mktemp -d)"
  (cd "$work" && apt-get source -qq benchmark >/dev/null 2>&1) || { echo "vendor-deps: apt-get source benchmark failed" >&2; exit 3; }
  src="$(find "$work" -maxdepth 1 -type d -name 'benchmark-*' | head -n1)"
  rm -rf "$deps/benchmark" && mv "$src" "$deps/benchmark" && rm -rf "$work"
fi
if [ ! -f "$deps/re2/CMakeLists.txt" ]; then
  work="$(mktemp -d)"
  (cd "$work" && apt-get source -qq re2 >/dev/null 2>&1) || { echo "vendor-deps: apt-get source re2 failed" >&2; exit 3; }
  src="$(find "$work" -maxdepth 1 -type d -name 're2-*' | head -n1)"
  # Debian's source leaves out the generated tables: made here, from Debian's unicode-data.
  apt-get install -y -qq unicode-data >/dev/null 2>&1 || { echo "vendor-deps: apt-get install unicode-data failed" >&2; exit 3; }
  (cd "$src" && perl re2/make_perl_groups.pl > re2/perl_groups.cc && python3 re2/make_unicode_casefold.py > re2/unicode_casefold.cc \
     && python3 re2/make_unicode_groups.py > re2/unicode_groups.cc) || { echo "vendor-deps: RE2's tables could not be made" >&2; exit 3; }
  rm -rf "$deps/re2" && mv "$src" "$deps/re2" && rm -rf "$work"
fi
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
