#!/usr/bin/env bash
# Installs ptqkit's build and test dependencies from Debian (and onnxruntime-node from npm for
# the cross-checks). Idempotent: a no-op when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libprotobuf-dev protobuf-compiler libonnx-dev python3-onnx python3-numpy
  libeigen3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev libstb-dev zlib1g-dev
  libvulkan-dev mesa-vulkan-drivers glslc spirv-tools vulkan-tools
  python3-torch python3-torchvision python3-pil libopenblas0-openmp dataset-fashion-mnist
  clang libclang-rt-14-dev libomp-dev graphviz nodejs
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# ONNX Runtime (CPU) for the cross-check tests and benchmarks. Its post-install step would
# try a download that this network refuses; the npm package already ships the CPU library.
ort_dir=third_party/ort
if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "install-deps: installing onnxruntime-node into $ort_dir"
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && [ -f package.json ] || echo '{"private": true}' > package.json)
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund \
    onnxruntime-node@1.30.0 >/dev/null)
fi
