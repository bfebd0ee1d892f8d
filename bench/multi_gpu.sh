#!/usr/bin/env bash
# One GPU against two (issue 33), on the 2-GPU machine, from a package made here:
#   bench/package.sh            -> .dist/ (ptq built with PTQ_MPI, its libraries)
#   bench/fetch_openmpi.sh      -> .mpi/  (Debian's Open MPI runtime, unpacked)
#   the Vulkan loader in .gl/, as /work/.library/device/README.md says
# then there: carry .dist .mpi .gl, and `bash bench/multi_gpu.sh`.
#   1. calibration (--method entropy, Vulkan) of the zoo's resnet50 on SAMPLES (default 4,096)
#      seeded samples: one GPU (--device 0), two in one process (--device 0,1: a worker per
#      GPU) and two ranks (mpirun -np 2: rank r on GPU r); the three caches must be the same
#      bytes (cmp);
#   2. a sensitivity sweep (only mode, SQNR) of the zoo's BERT-style encoder (bert_opset17) on
#      SWEEP_SAMPLES (default 256) eval samples: one GPU, and two ranks (a sweep runs one device
#      per process); the reports must agree but for their wall times.
# Prints each time and the ratios one GPU / two (target >= 1.8). Models are exported there by
# scripts/export_zoo.py (random weights, fixed seed) into ZOO (default /tmp/ptq-zoo); logs and
# caches go to OUT (default /tmp/ptq-multi-gpu). DEVICES (default "0,1") is the pair compared
# with device 0 alone: DEVICES=0,0 runs the whole script on a machine of one device (two
# workers or ranks on it), which checks everything but the speed; MPI_DIR (default .mpi/) is
# the unpacked Open MPI.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${DIST:-$root/.dist}"
out="${OUT:-/tmp/ptq-multi-gpu}"
samples="${SAMPLES:-4096}"
sweep_samples="${SWEEP_SAMPLES:-256}"
zoo="${ZOO:-/tmp/ptq-zoo}"
PY="${PY:-python3}"
mkdir -p "$out" "$zoo"

fail() { echo "multi_gpu: $*" >&2; exit 1; }
[ -x "$dist/ptq" ] || fail "no $dist/ptq: run bench/package.sh here first and carry .dist"
devices="${DEVICES:-0,1}"
mpi_dir="${MPI_DIR:-$root/.mpi}"
[ -d "$mpi_dir" ] || fail "no $mpi_dir: run bench/fetch_openmpi.sh here first and carry .mpi"
if [ -d "$root/.gl" ] && ! ldconfig -p | grep -q libvulkan; then
  for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
# shellcheck source=bench/openmpi_env.sh
source "$root/bench/openmpi_env.sh" "$mpi_dir"
export LD_LIBRARY_PATH="$dist/lib:$LD_LIBRARY_PATH"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"
export SOURCE_DATE_EPOCH=1700000000  # the caches' date, so they compare byte for byte
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ptq="$dist/ptq"
mpirun --version | head -1 || fail "mpirun does not start (see bench/openmpi_env.sh)"
"$ptq" info --devices | grep '^device' | tee "$out/devices.txt"
if [ "$devices" = "0,1" ] && [ "$(grep -c '^device' "$out/devices.txt")" -lt 2 ]; then
  fail "fewer than two Vulkan devices"
fi
# Under mpirun, rank r takes device r of the list.
rank_devices="$devices"

# The models and their data, made once.
for m in resnet50 bert_opset17; do
  [ -f "$zoo/$m.onnx" ] || "$PY" "$root/scripts/export_zoo.py" "$zoo" "$m" >/dev/null ||
    fail "exporting $m failed"
done
[ -f "$zoo/r50_$samples.npy" ] ||
  "$PY" "$root/bench/calibration/make_samples.py" "$zoo/r50_$samples.npy" "$samples" --seed 0
"$PY" - "$zoo" "$sweep_samples" <<'PY'
import sys, numpy as np
zoo, n = sys.argv[1], int(sys.argv[2])
for name in ("input_ids", "attention_mask"):
    a = np.load(f"{zoo}/bert_opset17/test/{name}.npy")
    np.save(f"{zoo}/bert_eval_{name}.npy", np.concatenate([a] * (n // len(a) + 1))[:n])
PY

# run LABEL CMD...: the command's wall time in seconds, its output in OUT/LABEL.log.
run() {
  local label="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out/$label.log" 2>&1 || { echo "$label failed:"; tail -5 "$out/$label.log"; return 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a / b }'; }
# Two ranks; -x passes a variable on to them (mpirun warns of one that is unset).
mpi2() {
  local pass=(-x LD_LIBRARY_PATH -x SOURCE_DATE_EPOCH)
  [ -n "${VK_DRIVER_FILES:-}" ] && pass+=(-x VK_DRIVER_FILES)
  mpirun --oversubscribe --bind-to none -np 2 "${pass[@]}" "$@"
}

echo "== calibration: resnet50, $samples samples, entropy, Vulkan"
calib=("$ptq" calibrate "$zoo/resnet50.onnx" --data "$zoo/r50_$samples.npy" --batch 32
       --method entropy --backend vulkan --quiet)
c1=$(run calib_1gpu "${calib[@]}" --device 0 -o "$out/c_1gpu.json") || exit 1
c2=$(run calib_2gpu "${calib[@]}" --device "$devices" -o "$out/c_2gpu.json") || exit 1
cm=$(run calib_mpi2 mpi2 "${calib[@]}" --device "$rank_devices" -o "$out/c_mpi2.json") || exit 1
cmp "$out/c_1gpu.json" "$out/c_2gpu.json" && cmp "$out/c_1gpu.json" "$out/c_mpi2.json" &&
  echo "caches identical (device 0, --device $devices, mpirun -np 2)"
echo "device 0 ${c1}s  --device $devices ${c2}s ($(ratio "$c1" "$c2")x)" \
  " mpirun -np 2 ${cm}s ($(ratio "$c1" "$cm")x)"

echo "== sensitivity: bert_opset17, $sweep_samples eval samples, only mode, SQNR, Vulkan"
"$ptq" calibrate "$zoo/bert_opset17.onnx" --data "input_ids=$zoo/bert_opset17/calib/input_ids.npy" \
  --data "attention_mask=$zoo/bert_opset17/calib/attention_mask.npy" --method minmax \
  -o "$out/bert.json" --quiet || fail "calibrating bert_opset17 failed"
sweep=("$ptq" sensitivity "$zoo/bert_opset17.onnx" --cache "$out/bert.json"
       --eval "input_ids=$zoo/bert_eval_input_ids.npy"
       --eval "attention_mask=$zoo/bert_eval_attention_mask.npy"
       --metric sqnr --backend vulkan --quiet)
s1=$(run sweep_1gpu "${sweep[@]}" --device 0 -o "$out/s_1gpu.json") || exit 1
sm=$(run sweep_mpi2 mpi2 "${sweep[@]}" --device "$rank_devices" -o "$out/s_mpi2.json") || exit 1
"$PY" - "$out/s_1gpu.json" "$out/s_mpi2.json" <<'PY' && echo "sweep reports agree"
import json, sys
def scores(p):
    j = json.load(open(p))
    for k in ("sweep_seconds", "float_pass_seconds", "sweep_cpu_seconds", "float_pass_cpu_seconds"):
        j.pop(k, None)
    return j
sys.exit(0 if scores(sys.argv[1]) == scores(sys.argv[2]) else 1)
PY
echo "device 0 ${s1}s  mpirun -np 2 ${sm}s ($(ratio "$s1" "$sm")x)"
