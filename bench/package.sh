#!/usr/bin/env bash
# Packages ptq, ptq_vulkan_bench, fma_peak and bench/runtime_bench (so DIST serves as the BUILD_DIR
# of bench/zoo.py), built HERE for another x86-64 machine (the GPU machine),
# with the shared libraries they need that a bare machine lacks, into DIST (default .dist/):
#   bench/package.sh [BUILD_DIR] [DIST]
# BUILD_DIR (default build-dist) is the portable build (-DPTQ_NATIVE=OFF: the CPU kernels pick
# AVX-512, AVX2 or the baseline at run time, so the GPU machine's Xeon gets its AVX-512; this
# machine's -march=native is Zen 5 and may not run there); PTQ_MARCH=... sets a -march instead.
# The C and C++ runtimes and the Vulkan loader stay out: the GPU machine's own are newer (the
# loader comes from the carried .gl/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-dist}"
dist="${2:-$root/.dist}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTQ_NATIVE=OFF -DPTQ_MARCH="${PTQ_MARCH:-}" \
  -DPTQ_TESTS=OFF \
  -DPTQ_BENCH=ON >/dev/null
cmake --build "$build" --target ptq ptq_vulkan_bench fma_peak runtime_bench -j "${JOBS:-2}"
rm -rf "$dist"
mkdir -p "$dist/lib" "$dist/bench"
cp "$build/ptq" "$build/bench/ptq_vulkan_bench" "$build/bench/fma_peak" "$dist/"
cp "$build/bench/runtime_bench" "$dist/bench/"
for bin in "$dist/ptq" "$dist/ptq_vulkan_bench" "$dist/bench/runtime_bench"; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libvulkan.so*) ;;
      *) cp -L "$lib" "$dist/lib/" ;;
    esac
  done
done
echo "package: $dist ($(du -sh "$dist" | cut -f1)); needs glibc >= $(ldd --version | head -1 | awk '{print $NF}')"
