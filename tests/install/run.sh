#!/usr/bin/env bash
# The installed tree as a user gets it: `cmake --install` into a fresh prefix, then a project
# outside ptqkit (consumer/) built against it twice, with find_package(ptqkit) and with
# pkg-config, each run on a test model (it calibrates from memory and checks the Q/DQ model
# it writes). Also: the files the prefix must hold, no internal header among them, every public
# header compiling with pkg-config's flags alone, `ptq --version` and the man page.
# Usage: run.sh BUILD_DIR VERSION MODEL CMAKE_GENERATOR CXX   (ctest passes them)
set -euo pipefail
build="$1" version="$2" model="$3" generator="$4" cxx="$5"
here="$(cd "$(dirname "$0")" && pwd)"
work="$build/tests/install/work"
prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "install test: error: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir="$(dirname "$(find "$prefix" -name libptqkit.a)")"
for f in bin/ptq share/man/man1/ptq.1 include/ptq/version.h include/ptq/calibration.h; do
  [ -f "$prefix/$f" ] || fail "$prefix/$f was not installed"
done
for f in libptqkit.a cmake/ptqkit/ptqkitConfig.cmake cmake/ptqkit/ptqkitConfigVersion.cmake \
         cmake/ptqkit/ptqkitTargets.cmake pkgconfig/ptqkit.pc; do
  [ -f "$libdir/$f" ] || fail "$libdir/$f was not installed"
done
if grep -rlE "CutMaker|Rewiring|print_step_report" "$prefix/include"; then
  fail "internal types in the installed headers (above)"
fi
[ "$("$prefix/bin/ptq" --version)" = "ptq $version" ] || fail "ptq --version is not 'ptq $version'"
grep -q "ptq $version" "$prefix/share/man/man1/ptq.1" || fail "the man page names no version"
grep -q "calibrate" "$prefix/share/man/man1/ptq.1" || fail "the man page lists no subcommands"

echo "== find_package(ptqkit)"
cmake -S "$here/consumer" -B "$work/cmake" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DPTQKIT_EXPECTED_VERSION="$version" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer" "$model" "$work/cmake.int8.onnx"

echo "== pkg-config ptqkit"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion ptqkit)" = "$version" ] || fail "ptqkit.pc's version is not $version"
cflags="$(pkg-config --cflags ptqkit)"
# shellcheck disable=SC2086 # word splitting of the flags is wanted
(cd "$prefix/include" && find ptq -name '*.h' | sed 's/.*/#include <&>/') |
  "$cxx" -std=c++20 -fsyntax-only $cflags -x c++ - || fail "the public headers do not compile alone"
# shellcheck disable=SC2086
"$cxx" -std=c++20 "$here/consumer/consumer.cpp" -o "$work/pc-consumer" \
  $(pkg-config --static --cflags --libs ptqkit)
"$work/pc-consumer" "$model" "$work/pc.int8.onnx"
