#!/usr/bin/env bash
# `make bench-zoo` on the GPU machine's host CPU, a quiet machine with many cores, from packages
# made here (bench/package.sh with PTQ_MARCH set for that CPU, then bench/package_ort.sh):
#   bench/zoo_device.sh [LANES] [SECONDS] [REPEAT]     (defaults: 7 lanes, 1 s, 3 pairs)
# The zoo is exported there by scripts/export_zoo.py with that machine's torch (too large to
# carry); the table and the per-model rows (written as each model ends) go to OUT.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${DIST:-$root/.dist}"
out="${OUT:-/tmp/ptq-zoo}"
data=/tmp/ptq-testdata
lanes="${1:-7}" seconds="${2:-1}" repeat="${3:-3}"
mkdir -p "$out" "$data/zoo"
"$root/bench/unpack_ort.sh" "$dist"
export PATH="$dist/ort/bin:$PATH" LD_LIBRARY_PATH="$dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lscpu | grep -E '^(Model name|CPU\(s\))' | tee "$out/machine.txt"
start=$(date +%s)
python3 "$root/scripts/export_zoo.py" --list \
  | xargs -P "$(nproc)" -I{} python3 "$root/scripts/export_zoo.py" "$data/zoo" {} >"$out/export.log" 2>&1 \
  || echo "some models did not export with this torch (export.log); the table lists the rest"
python3 -c "import sys; sys.path.insert(0, '$root/scripts'); import export_zoo; \
export_zoo.write_manifest('$data/zoo')"
echo "zoo exported in $(($(date +%s) - start)) s"
PTQ_TEST_DATA="$data" python3 "$root/bench/zoo.py" "$dist" --lanes "$lanes" --seconds "$seconds" \
  --repeat "$repeat" --rows-json "$out/zoo_rows.json" --markdown "$out/zoo.md"
