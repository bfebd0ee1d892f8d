#!/usr/bin/env bash
# Builds ptq_vulkan_bench HERE (portable: -DPTQ_NATIVE=OFF, libstdc++ and libgcc static) and
# copies it with the shared libraries it needs that a bare GPU machine may lack into DIST
# (default build-gpu-bench/dist). The Vulkan loader (libvulkan.so.1) and the GPU driver are
# left out: they come from the GPU machine (see run_device.sh). Usage: package.sh [DIST]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-gpu-bench"
dist="${1:-$build/dist}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTQ_NATIVE=OFF -DPTQ_TESTS=OFF \
  -DPTQ_BENCH=ON >/dev/null
cmake --build "$build" --target ptq_vulkan_bench -j "${JOBS:-2}"
mkdir -p "$dist/lib"
cp "$build/bench/ptq_vulkan_bench" "$dist/"
cp "$root/bench/gpu/run_device.sh" "$root/bench/gpu/torch_ref.py" "$dist/"
# Every resolved shared library except the C runtime, which must be the GPU machine's own.
ldd "$build/bench/ptq_vulkan_bench" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libvulkan.so*) ;;
    *) cp -L "$lib" "$dist/lib/" ;;
  esac
done
echo "package: $dist ($(du -sh "$dist" | cut -f1)); needs glibc >= $(ldd --version | head -1 | awk '{print $NF}') there"
ls "$dist/lib"
