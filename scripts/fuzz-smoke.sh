#!/usr/bin/env bash
# A short libFuzzer run of every reader: `scripts/fuzz-smoke.sh BUILD_DIR [SECONDS]`.
# SECONDS (60 by default) are split among the targets: the model reader, whose input space is
# the largest, gets a third, the .npy, .npz, image and calibration-cache readers the rest.
# Each fuzzes from a scratch copy of its seed corpus (tests/fuzz/corpus/<reader>) plus the
# inputs of its kind that once crashed a reader (tests/fuzz/regressions, by extension; the
# committed files are never modified), and any crash, leak, sanitizer report or timeout fails
# the run; the reproducer is kept in BUILD_DIR/fuzz-smoke/<reader>. 60 s keeps CI's fuzz step
# (clang build included) within its budget on 2 cores; run longer by hand after touching a
# reader.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build="$(cd "$1" && pwd)"
seconds="${2:-60}"
readers=(model npy npz image cache)
declare -A extensions=([model]="onnx" [npy]="npy" [npz]="npz" [image]="png jpg"
                       [cache]="cache json")
for reader in "${readers[@]}"; do
  fuzzer="$build/tests/fuzz/fuzz_${reader}_reader"
  if [ ! -x "$fuzzer" ]; then
    echo "fuzz-smoke: $fuzzer not built (configure with clang and -DPTQ_FUZZ=ON)" >&2
    exit 1
  fi
done

# The model reader's third, then equal shares, at least 1 s each.
model_seconds=$(( seconds / 3 > 0 ? seconds / 3 : 1 ))
other_seconds=$(( (seconds - model_seconds) / 4 > 0 ? (seconds - model_seconds) / 4 : 1 ))

failed=()
for reader in "${readers[@]}"; do
  work="$build/fuzz-smoke/$reader"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$reader"/* "$work/corpus/"
  for ext in ${extensions[$reader]}; do
    find tests/fuzz/regressions -maxdepth 1 -name "*.$ext" -exec cp {} "$work/corpus/" \;
  done
  time_limit=$other_seconds
  [ "$reader" = model ] && time_limit=$model_seconds
  echo "fuzz-smoke: fuzzing the $reader reader for ${time_limit}s"
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/fuzz_${reader}_reader" "$work/corpus" -max_total_time="$time_limit" \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" >"$work/log.txt" 2>&1 &
  pid=$!
  wait $pid
  rc=$?
  set -e
  # The target's scratch folder (tests/fuzz/input_file.h), left behind when it crashes.
  rm -rf "/dev/shm/ptq-fuzz-$pid" "${TMPDIR:-/tmp}/ptq-fuzz-$pid"
  if [ $rc -ne 0 ] || ls "$work/artifacts/" | grep -q .; then
    tail -n 25 "$work/log.txt"
    echo "fuzz-smoke: the $reader reader FAILED (exit $rc); reproducers in $work/artifacts," \
      "log in $work/log.txt" >&2
    failed+=("$reader")
  else
    grep -E "^(Done|stat::number_of_executed_units)" "$work/log.txt" | head -1
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz-smoke: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-smoke: no crash in ${seconds}s"
