#!/usr/bin/env bash
# Every GPU-machine benchmark in one call, from a package made here by bench/package.sh
# (DIST, default .dist/: ptq, ptq_vulkan_bench and the shared libraries they need in lib/):
#   1. bench/gpu/run_device.sh --cpu: GEMM TFLOP/s and ResNet-18 batch 32 against PyTorch fp32
#      (TF32 off) on the same GPU, and entropy calibration on Vulkan vs the CPU executor;
#   2. bench/calibration/run_device.sh: `ptq calibrate --method entropy` on ResNet-18 (exported
#      there by scripts/export_models.py) with --backend cpu and vulkan, 256 and 2,048 samples,
#      against ONNX Runtime's quantize_static with 256 samples, with peak RSS;
#   3. splitk: ResNet-18 batch 32 forward with PTQ_VULKAN_SPLIT_K = each of SPLITS (default
#      1 (off) to 16) and every convolution's GPU time (PTQ_VULKAN_TIMING), to see where
#      split-K pays;
#   4. phases: where a Vulkan calibration's fixed cost goes (device start-up, 32 vs 256 samples,
#      one pass vs two, the first-run breakdown);
#   5. upload: ResNet-18 batch 32 with inputs staged in host memory vs device memory (BAR);
#   6. cputime: a 16-thread CPU entropy calibration's phases and per-step times;
#   7. workers: CPU entropy calibration of 256 samples with --workers each of WORKERS (default
#      "1 2 4"), in turn, REPEAT times (default 3): wall time and peak RSS;
#   8. zoo: bench/zoo_gpu.sh: every zoo model with --backend vulkan --strict against the CPU
#      (agreement, whole-process times; the zoo is exported there first).
# CALIB_WORKERS=N passes --workers N to the calib step's CPU runs.
# Logs go to OUT (default /tmp/ptq-device).
# Usage: bench/device.sh [gpu] [calib] [splitk] [phases] [upload] [cputime] [workers] [zoo]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${DIST:-$root/.dist}"
out="${OUT:-/tmp/ptq-device}"
mkdir -p "$out"
steps="${*:-gpu calib}"
export LD_LIBRARY_PATH="$dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"

{
  echo "date: $(date -u)"
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "vector ISA: $(grep -o -w -E 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>/dev/null
  python3 -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'
} 2>&1 | tee "$out/machine.txt"

# ResNet-18 exported there (scripts/export_models.py) and seeded random samples, made once.
models=/tmp/ptq-models work=/tmp/ptq-phases
resnet18() {
  mkdir -p "$models"
  [ -f "$models/resnet18.onnx" ] || python3 "$root/scripts/export_models.py" resnet18 "$models" 2>&1 | tail -3
}
samples() {  # samples N -> $work/cN.npy
  mkdir -p "$work"
  [ -f "$work/c$1.npy" ] || python3 "$root/bench/calibration/make_samples.py" "$work/c$1.npy" "$1" --seed 0
}

if [[ " $steps " == *" gpu "* ]]; then
  PTQ_BENCH_BIN="$dist/ptq_vulkan_bench" bash "$root/bench/gpu/run_device.sh" --cpu --out "$out" 2>&1 \
    | tee "$out/gpu.log"
fi
if [[ " $steps " == *" splitk "* ]]; then
  for s in ${SPLITS:-1 2 3 4 6 8 12 16}; do
    echo "PTQ_VULKAN_SPLIT_K=$s"
    PTQ_VULKAN_SPLIT_K=$s "$dist/ptq_vulkan_bench" resnet18 32 | grep '"resnet18"'
    PTQ_VULKAN_SPLIT_K=$s PTQ_VULKAN_TIMING=1 "$dist/ptq_vulkan_bench" resnet18 32 2>&1 >/dev/null \
      | grep -E "GPU time|Conv node|Conv  "
  done 2>&1 | tee "$out/splitk.log"
fi
if [[ " $steps " == *" phases "* ]]; then
  # Where a Vulkan calibration's fixed cost goes: device start-up alone, then 32 and 256
  # samples with min-max (one pass) and entropy (two), each a whole process with its phases
  # (PTQ_TIMING); then one entropy run with PTQ_VULKAN_TIMING (first-run breakdown per program).
  resnet18
  samples 32
  samples 256
  TIMEFORMAT="%R s"
  {
    echo "ptq info --devices:"; time "$dist/ptq" info --devices >/dev/null
    echo "ptq info model:"; time "$dist/ptq" info "$models/resnet18.onnx" >/dev/null
    for n in 32 256; do
      for m in minmax entropy; do
        for b in vulkan cpu; do
          echo "calibrate $m $b $n samples:"
          time PTQ_TIMING=1 "$dist/ptq" calibrate "$models/resnet18.onnx" --data "$work/c$n.npy" --method $m \
            --batch 32 --backend $b --quiet -o "$work/$m-$b-$n.json"
        done
      done
    done
    echo "PTQ_VULKAN_TIMING=1 calibrate entropy vulkan 256:"
    PTQ_VULKAN_TIMING=1 "$dist/ptq" calibrate "$models/resnet18.onnx" --data "$work/c256.npy" \
      --method entropy --batch 32 --backend vulkan --quiet -o "$work/t.json" 2>&1 | head -60
  } 2>&1 | tee "$out/phases.log"
fi
if [[ " $steps " == *" upload "* ]]; then
  # Input staging in host memory against host-visible device memory (the BAR, the default).
  for i in 1 2 3; do
    for mode in host bar; do
      echo "PTQ_VULKAN_UPLOAD=$mode $(PTQ_VULKAN_UPLOAD=$mode "$dist/ptq_vulkan_bench" resnet18 32 | grep '"resnet18"')"
    done
  done 2>&1 | tee "$out/upload.log"
fi
if [[ " $steps " == *" cputime "* ]]; then
  # Where a 16-thread CPU calibration goes: phases and the CPU executor's per-step times.
  resnet18
  samples 256
  PTQ_TIMING=1 PTQ_CPU_TIMING=1 "$dist/ptq" calibrate "$models/resnet18.onnx" --data "$work/c256.npy" \
    --method entropy --batch 32 --backend cpu --quiet -o "$work/cputime.json" 2>&1 | tee "$out/cputime.log"
fi
if [[ " $steps " == *" workers "* ]]; then
  resnet18
  samples 256
  for r in $(seq "${REPEAT:-3}"); do
    for w in ${WORKERS:-1 2 4}; do
      echo "workers $w: $(SOURCE_DATE_EPOCH=0 python3 "$root/bench/calibration/measure.py" -- "$dist/ptq" calibrate \
        "$models/resnet18.onnx" --data "$work/c256.npy" --method entropy --batch 32 --backend cpu \
        --workers "$w" --quiet -o "$work/w$w.json" | tail -1)"
    done
  done 2>&1 | tee -a "$out/workers.log"
  cmp "$work/w1.json" "$work/w2.json" && echo "caches of 1 and 2 workers: same bytes" | tee -a "$out/workers.log"
fi
if [[ " $steps " == *" zoo "* ]]; then
  DIST="$dist" OUT="$out" bash "$root/bench/zoo_gpu.sh" 2>&1 | tee "$out/zoo.log"
fi
if [[ " $steps " == *" calib "* ]]; then
  resnet18
  bash "$root/bench/calibration/run_device.sh" "$dist/ptq" --model "$models/resnet18.onnx" \
    --samples "${CALIB_SAMPLES:-256 2048}" --ort-samples 256 --backends "${CALIB_BACKENDS:-cpu vulkan}" \
    ${CALIB_WORKERS:+--ptq-args "--workers $CALIB_WORKERS"} 2>&1 | tee -a "$out/calib.log"
fi
