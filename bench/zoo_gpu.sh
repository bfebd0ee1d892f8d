#!/usr/bin/env bash
# Every zoo model through `ptq run --backend vulkan --strict` against `--backend cpu` on the GPU
# machine, from a package made here by bench/package.sh (DIST, default .dist/). Per model: the
# exit status of each, the relative L2 of every output (GPU against CPU; <= 1e-4 passes) and
# each whole process's wall time (model load, device start and pipelines included: a first-run
# figure, not the GPU's speed). A model that fails prints its error's last line and the rest go on.
#   bench/zoo_gpu.sh [MODEL ...]        (no MODEL: every model export_zoo.py lists)
# On the GPU machine, carrying .dist and the Vulkan loader's .gl (see bench/device.sh):
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; bench/device.sh zoo
# ZOO: the exported zoo (default /tmp/ptq-zoo); models missing there are exported first with
# scripts/export_zoo.py (torch, torchvision and onnx; the TorchScript exporter, as here).
# SAMPLES (default 8) held-out samples at BATCH (default 1). The summary goes to OUT/zoo_gpu.txt
# (OUT default /tmp/ptq-device), each run's outputs and log to WORK (default /tmp/ptq-zoo-runs).
# Exit status: 1 when any model failed or disagreed.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${DIST:-$root/.dist}"
out="${OUT:-/tmp/ptq-device}"
zoo="${ZOO:-/tmp/ptq-zoo}"
work="${WORK:-/tmp/ptq-zoo-runs}"
samples="${SAMPLES:-8}" batch="${BATCH:-1}"
py="${PYTHON:-python3}"
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH="$dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES="$icd"
ptq="$dist/ptq"
[ -x "$ptq" ] || { echo "zoo_gpu: no $ptq (run bench/package.sh here first)" >&2; exit 2; }
"$ptq" info --devices 2>&1 | head -3

# Export what is missing (the zoo is 1.1 GB, too large to carry); export_zoo.py asks a newer
# torch for the TorchScript exporter, so the graphs are the CI zoo's.
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <("$py" "$root/scripts/export_zoo.py" --list)
missing=()
for m in "${names[@]}"; do [ -f "$zoo/$m.json" ] || missing+=("$m"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "exporting ${missing[*]} into $zoo"
  printf '%s\n' "${missing[@]}" | xargs -P "$(nproc)" -I{} "$py" "$root/scripts/export_zoo.py" \
    "$zoo" {} >"$out/zoo_export.log" 2>&1
fi

summary="$out/zoo_gpu.txt"
row='%-22s %-6s %-6s %-10s %-9s %-9s\n'
printf "$row" model vulkan cpu max_rel_l2 vulkan_s cpu_s | tee "$summary"
failed=0
declare -A rc secs
for m in "${names[@]}"; do
  if [ ! -f "$zoo/$m.json" ]; then
    printf '%-22s not exported\n' "$m" | tee -a "$summary"
    failed=1
    continue
  fi
  data=()
  for i in $("$py" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["inputs"]))' \
      "$zoo/$m.json"); do
    data+=(--data "$i=$zoo/$m/test/$i.npy")
  done
  for b in vulkan cpu; do
    extra=()
    [ "$b" = vulkan ] && extra=(--strict)
    rm -rf "$work/$m/$b"
    start=$(date +%s.%N)
    "$ptq" run "$zoo/$m.onnx" "${data[@]}" --samples "$samples" --batch "$batch" --backend "$b" \
      "${extra[@]}" -o "$work/$m/$b" >"$work/$m.$b.log" 2>&1
    rc[$b]=$?
    secs[$b]=$("$py" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" \
      "$start" "$(date +%s.%N)")
  done
  err="-"
  if [ "${rc[vulkan]}" = 0 ] && [ "${rc[cpu]}" = 0 ]; then
    err=$("$py" - "$work/$m" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
worst = 0.0
for f in sorted(os.listdir(os.path.join(d, "cpu"))):
    if not f.endswith(".npy"):
        continue
    a = np.load(os.path.join(d, "cpu", f)).astype(np.float64)
    b = np.load(os.path.join(d, "vulkan", f)).astype(np.float64)
    worst = max(worst, np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))
print(f"{worst:.2e}")
PY
)
  fi
  printf "$row" "$m" "${rc[vulkan]}" "${rc[cpu]}" "$err" \
    "${secs[vulkan]}" "${secs[cpu]}" | tee -a "$summary"
  for b in vulkan cpu; do
    [ "${rc[$b]}" = 0 ] && continue
    echo "  $b: $(tail -1 "$work/$m.$b.log")" | tee -a "$summary"
    failed=1
  done
  if [ "$err" != "-" ] && ! "$py" -c "import sys; sys.exit(float(sys.argv[1]) > 1e-4)" "$err"; then
    echo "  rel L2 above 1e-4" | tee -a "$summary"
    failed=1
  fi
done
exit $failed
