#!/usr/bin/env bash
# Undoes bench/package_ort.sh on the machine that runs the benchmark: node into DIST/ort/bin
# (put it on PATH) and onnxruntime-node into third_party/ort/node_modules.
#   bench/unpack_ort.sh [DIST]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${1:-$root/.dist}/ort"
mods="$root/third_party/ort/node_modules"
mkdir -p "$src/bin" "$mods"
xz -dc "$src/node.xz" >"$src/bin/node"
chmod +x "$src/bin/node"
cp -r "$src/node_modules/." "$mods/"
xz -dc "$src/libonnxruntime.so.1.xz" \
  >"$mods/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
echo "unpack_ort: node $("$src/bin/node" --version), onnxruntime-node in $mods"
