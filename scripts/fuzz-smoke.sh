#!/usr/bin/env bash
# A short libFuzzer run of the model reader: `scripts/fuzz-smoke.sh BUILD_DIR [SECONDS]`.
# Fuzzes from a scratch copy of tests/fuzz/corpus plus the inputs that once crashed the reader
# (tests/fuzz/regressions; the committed files are never modified) and fails on any crash, leak,
# sanitizer report or timeout; the reproducer is kept in BUILD_DIR. 60 s keeps CI's fuzz step
# (clang build included) near 3 minutes on 2 cores; run longer by hand after touching the reader.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
seconds="${2:-60}"
fuzzer="$build/tests/fuzz/fuzz_model_reader"
[ -x "$fuzzer" ] || { echo "fuzz-smoke: $fuzzer not built (configure with clang and -DPTQ_FUZZ=ON)" >&2; exit 1; }

work="$build/fuzz-smoke"
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp tests/fuzz/corpus/* tests/fuzz/regressions/*.onnx "$work/corpus/"

echo "fuzz-smoke: fuzzing the model reader for ${seconds}s"
set +e
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -timeout=20 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  >"$work/log.txt" 2>&1
rc=$?
set -e
tail -n 25 "$work/log.txt"
if [ $rc -ne 0 ] || ls "$work/artifacts/" | grep -q .; then
  echo "fuzz-smoke: FAILED (exit $rc); reproducers in $work/artifacts, log in $work/log.txt" >&2
  exit 1
fi
echo "fuzz-smoke: no crash in ${seconds}s"
