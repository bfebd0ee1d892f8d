#!/usr/bin/env bash
# Runs the Vulkan backend's GPU benchmarks next to PyTorch on the same GPU and prints ratios:
#   GEMM TFLOP/s (N x N x N fp32) vs torch.matmul fp32 with TF32 off  (target >= 0.5)
#   ResNet-18 224x224 batch 32 forward vs PyTorch fp32, TF32 off      (target >= 0.7x torch)
#   entropy calibration of ResNet-18 over 256 samples                 (seconds; --cpu: vs CPU)
#
# Usage: run_device.sh [--cpu] [--out DIR]
# Where the bench binary comes from, first found:
#   $PTQ_BENCH_BIN; ./ptq_vulkan_bench beside this script (bench/package.sh's .dist/,
#   with its lib/ put on LD_LIBRARY_PATH); otherwise it is built from the source tree this
#   script sits in (needs cmake, a C++20 compiler, Vulkan headers, glslc, Eigen, fmt, ...).
# Needs: python3 with torch (CUDA) for the reference; the Vulkan loader (libvulkan.so.1) and
# the NVIDIA Vulkan driver (ICD). VK_DRIVER_FILES is pointed at the NVIDIA ICD when the
# loader finds no driver by itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cpu_flag=""
out_dir="${OUT:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu_flag="--cpu" ;;
    --out) out_dir="$2"; shift ;;
    *) echo "usage: $0 [--cpu] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
GEMM_SIZES="${GEMM_SIZES:-2048 4096 8192}"
BATCH="${BATCH:-32}"
CALIB_SAMPLES="${CALIB_SAMPLES:-256}"
PY="${PYTHON:-python3}"

fail() { echo "run_device: error: $*" >&2; exit 1; }

# --- the bench binary ------------------------------------------------------------------------
bin="${PTQ_BENCH_BIN:-}"
if [ -z "$bin" ] && [ -x "$here/ptq_vulkan_bench" ]; then
  bin="$here/ptq_vulkan_bench"
fi
if [ -n "$bin" ]; then
  libdir="$(cd "$(dirname "$bin")" && pwd)/lib"
  [ -d "$libdir" ] && export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  root="$(cd "$here/../.." && pwd)"
  [ -f "$root/CMakeLists.txt" ] || fail "no ptq_vulkan_bench beside this script and no source tree to build it"
  command -v cmake >/dev/null || fail "no ptq_vulkan_bench and no cmake to build one (see bench/package.sh)"
  build="${BUILD_DIR:-$root/build-gpu}"
  echo "run_device: building ptq_vulkan_bench in $build" >&2
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTQ_NATIVE=ON -DPTQ_TESTS=OFF >&2 \
    || fail "cmake configure failed (missing dependencies? build elsewhere with bench/package.sh)"
  cmake --build "$build" --target ptq_vulkan_bench -j "$(nproc)" >&2 || fail "build failed"
  bin="$build/bench/ptq_vulkan_bench"
fi
[ -x "$bin" ] || fail "$bin is not executable"

# --- Vulkan loader and driver ----------------------------------------------------------------
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' && [ -z "${LD_LIBRARY_PATH:-}" ]; then
  echo "run_device: warning: ldconfig lists no libvulkan.so.1; unpack the loader first" >&2
fi
if ! "$bin" >/dev/null 2>&1; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$icd" ]; then
      export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
      break
    fi
  done
fi
"$bin" >/dev/null 2>&1 || { "$bin" || true; fail "the bench finds no usable Vulkan device (loader or ICD missing?)"; }

# --- measurements ----------------------------------------------------------------------------
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "run_device: vulkan: gemm $GEMM_SIZES, resnet18 $BATCH, calib $CALIB_SAMPLES $BATCH" >&2
# shellcheck disable=SC2086
"$bin" gemm $GEMM_SIZES resnet18 "$BATCH" calib "$CALIB_SAMPLES" "$BATCH" $cpu_flag | tee "$tmp/vulkan.jsonl" >&2
echo "run_device: torch reference" >&2
# shellcheck disable=SC2086
"$PY" "$here/torch_ref.py" gemm $GEMM_SIZES resnet18 "$BATCH" | tee "$tmp/torch.jsonl" >&2 \
  || echo "run_device: warning: the torch reference failed; ratios will be missing" >&2

if [ -n "$out_dir" ]; then
  mkdir -p "$out_dir"
  cp "$tmp/vulkan.jsonl" "$tmp/torch.jsonl" "$out_dir/"
fi

"$PY" - "$tmp/vulkan.jsonl" "$tmp/torch.jsonl" <<'EOF'
import json
import sys


def load(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    except OSError:
        pass
    return rows


vk, th = load(sys.argv[1]), load(sys.argv[2])
dev = next((r for r in vk if r["bench"] == "device"), {})
tdev = next((r for r in th if r["bench"] == "torch_device"), {})
print()
print(f"device: {dev.get('name', '?')} ({dev.get('driver', '?')}); torch {tdev.get('torch', '?')} on {tdev.get('name', '?')}")
print()
print("GEMM fp32 (N x N x N)      vulkan TFLOP/s   torch TFLOP/s   ratio   (target >= 0.50)")
for g in (r for r in vk if r["bench"] == "gemm"):
    t = next((r for r in th if r["bench"] == "torch_gemm" and r["n"] == g["n"]), None)
    ratio = g["tflops"] / t["tflops"] if t else float("nan")
    tt = f"{t['tflops']:14.2f}" if t else "             ?"
    print(f"  {g['n']:5d}                    {g['tflops']:14.2f}  {tt}   {ratio:5.2f}   err {g['max_err_per_sqrt_k']:.2g}")
r = next((r for r in vk if r["bench"] == "resnet18" and r["backend"] == "vulkan"), None)
t = next((r for r in th if r["bench"] == "torch_resnet18"), None)
if r:
    print()
    print(f"ResNet-18 batch {r['batch']} forward: vulkan {r['median_ms']:.2f} ms median "
          f"({r['best_ms']:.2f} best; host input/output included; first run {r['first_ms']:.0f} ms)")
    if t:
        print(f"  torch fp32: {t['median_ms']:.2f} ms (input on the GPU), "
              f"{t['median_ms_with_copies']:.2f} ms (with host copies)")
        print(f"  speed vs torch: {t['median_ms'] / r['median_ms']:.2f}x (input on GPU), "
              f"{t['median_ms_with_copies'] / r['median_ms']:.2f}x (both with copies)   (target >= 0.70)")
    c = next((x for x in vk if x["bench"] == "resnet18" and x["backend"] == "cpu"), None)
    if c:
        print(f"  cpu executor: {c['median_ms']:.1f} ms")
for c in (x for x in vk if x["bench"] == "calib_entropy"):
    print()
    print(f"entropy calibration, ResNet-18, {c['samples']} samples, batch {c['batch']}, "
          f"{c['tensors']} tensors: {c['backend']} {c['seconds']:.2f} s")
EOF
