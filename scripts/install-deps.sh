#!/usr/bin/env bash
# Installs ptqkit's dependencies from Debian, by set: scripts/deps/SET.txt lists each set's
# packages (build, runtime, demo, test). The test set also installs onnxruntime-node from npm
# for the cross-checks. Idempotent: a no-op when everything is present.
# Usage: scripts/install-deps.sh [SET...]   (no SET: every set)
set -euo pipefail
cd "$(dirname "$0")/.."

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(build runtime demo test)

packages=()
for set in "${sets[@]}"; do
  list="scripts/deps/$set.txt"
  [ -f "$list" ] || { echo "install-deps: error: no set '$set' ($list)" >&2; exit 2; }
  while read -r p; do
    packages+=("$p")
  done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
done

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
[[ " ${sets[*]} " == *" test "* ]] || exit 0
ort_dir=third_party/ort
if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "install-deps: installing onnxruntime-node into $ort_dir"
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && [ -f package.json ] || echo '{"private": true}' > package.json)
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund \
    onnxruntime-node@1.30.0 >/dev/null)
fi
