#!/usr/bin/env bash
# Stages the CPU peer of bench/zoo.py for another x86-64 machine (the GPU machine, which has no
# Node.js): this machine's node binary and onnxruntime-node (linux/x64 only), xz-compressed to
# fit a device call's 64 MiB, into DIST/ort (default .dist/ort):
#   bench/package_ort.sh [DIST]
# There, `bench/unpack_ort.sh DIST` puts them back where tests/common/ort.js looks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${1:-$root/.dist}/ort"
mods="$root/third_party/ort/node_modules"
rm -rf "$dist"
mkdir -p "$dist/node_modules"
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" >"$dist/node.xz"
for pkg in onnxruntime-node onnxruntime-common; do
  (cd "$mods" && tar --exclude "$pkg/bin" -cf - "$pkg") | tar -xf - -C "$dist/node_modules"
done
lib="$mods/onnxruntime-node/bin/napi-v6/linux/x64"
mkdir -p "$dist/node_modules/onnxruntime-node/bin/napi-v6/linux/x64"
cp "$lib/onnxruntime_binding.node" "$dist/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/"
xz -T0 -6 -c "$lib/libonnxruntime.so.1" >"$dist/libonnxruntime.so.1.xz"
echo "package_ort: $dist ($(du -sh "$dist" | cut -f1))"
