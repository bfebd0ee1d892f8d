#!/usr/bin/env bash
# Where the CPU backend's calibration time goes, thread count by thread count: for each N in
# --threads, the wall time of
#   run      `ptq run` over the samples (forward passes only, no observer),
#   ort-run  ONNX Runtime's InferenceSession over the same batches (intra-op threads N),
#   minmax   `ptq calibrate --method minmax` (one pass, min/max per tensor),
#   entropy  `ptq calibrate --method entropy` (two passes: ranges, then 2048-bin histograms).
# entropy - 2 x run is what the statistics and the driver cost on top of the forward passes.
#   bench/calibration/cpu_breakdown.sh PTQ_BINARY MODEL [--samples N] [--batch B]
#                                      [--threads "1 4 16"] [--python PY]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
ptq="$(readlink -f "$1")"
model="$2"
shift 2
samples=256
batch=32
threads="1 4 8 16"
python=python3
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    *) echo "cpu_breakdown: unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" "$here/make_samples.py" "$work/calib.npy" "$samples" --seed 0

seconds() {  # seconds COMMAND... -> wall seconds of the command (its output discarded)
  local t0 t1
  t0="$(date +%s.%N)"
  "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  t1="$(date +%s.%N)"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
ort_run() {  # ort_run THREADS
  "$python" - "$model" "$work/calib.npy" "$batch" "$1" <<'EOF'
import sys, numpy as np, onnxruntime as ort
model, data, batch, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
x = np.load(data, mmap_mode="r")
name = s.get_inputs()[0].name
for i in range(0, len(x), batch):
    s.run(None, {name: np.ascontiguousarray(x[i:i + batch])})
EOF
}

# Without onnxruntime (this VM) the ORT column reads "-" instead of stopping the script.
has_ort=1
"$python" -c "import onnxruntime" 2>/dev/null || has_ort=0

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; $samples samples, batch $batch"
printf '%8s %9s %9s %9s %9s %10s %14s\n' threads run ort-run minmax entropy run/ort "entropy-2run"
for t in $threads; do
  run="$(seconds "$ptq" run "$model" --data "$work/calib.npy" --batch "$batch" --threads "$t" -o "$work/out")"
  ort="-"
  [ "$has_ort" = 0 ] || ort="$(seconds ort_run "$t")"
  mm="$(seconds "$ptq" calibrate "$model" --data "$work/calib.npy" --method minmax --batch "$batch" \
        --threads "$t" --quiet -o "$work/mm.json")"
  ent="$(seconds "$ptq" calibrate "$model" --data "$work/calib.npy" --method entropy --batch "$batch" \
         --threads "$t" --quiet -o "$work/ent.json")"
  printf '%8s %9s %9s %9s %9s %10s %14s\n' "$t" "$run" "$ort" "$mm" "$ent" \
    "$(awk -v a="$run" -v b="$ort" 'BEGIN { if (b == "-") print "-"; else printf "%.2f", a / b }')" \
    "$(awk -v a="$ent" -v b="$run" 'BEGIN { printf "%.2f", a - 2 * b }')"
done
