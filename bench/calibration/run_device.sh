#!/usr/bin/env bash
# Calibration benchmark: `ptq calibrate --method entropy` against ONNX Runtime's
# quantize_static(..., calibrate_method=CalibrationMethod.Entropy) on ResNet-18 with the same
# random-normal 3x224x224 samples (numpy, fixed seed), timed, with peak RSS. Self-contained:
#
#   bench/calibration/run_device.sh PTQ_BINARY [options]
#     --model M          default $PTQ_TEST_DATA/models/resnet18.onnx
#     --samples "A B"    ptq sample counts (default "256 2048"); the RSS check compares the
#                        largest with the smallest (target: within 5%)
#     --ort-samples "A"  ORT sample counts (default "256"; ORT may keep every batch's outputs
#                        until it builds histograms, so large counts need a lot of memory)
#     --batch B          batch size for both tools (default 32)
#     --backends "cpu vulkan"  ptq backends to time (default "cpu"; ratios are against the first)
#     --threads N        ptq threads (default: all CPUs; ORT uses all by default)
#     --ptq-args "..."   more ptq calibrate options (e.g. "--workers 4")
#     --work DIR         where samples and caches go (default: a temporary folder, removed)
#     --python PY        a Python with numpy (+ onnxruntime for the ORT rows); default: the
#                        first of python3, /usr/bin/python3 that imports onnxruntime, else
#                        one with numpy
#     --skip-ort         time ptq only (e.g. where onnxruntime's Python package is missing)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
ptq="$(readlink -f "$1")"
shift
[ -x "$ptq" ] || { echo "run_device: $ptq is not an executable" >&2; exit 1; }
model="${PTQ_TEST_DATA:-}/models/resnet18.onnx"
samples="256 2048"
ort_samples="256"
batch=32
backends="cpu"
threads="$(nproc)"
ptq_args=""
work=""
python=""
skip_ort=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --ort-samples) ort_samples="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --ptq-args) ptq_args="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --skip-ort) skip_ort=1; shift ;;
    *) usage ;;
  esac
done
[ -f "$model" ] || { echo "run_device: model $model not found (--model or PTQ_TEST_DATA)" >&2; exit 1; }
if [ -z "$python" ]; then
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import onnxruntime.quantization, numpy, onnx' 2>/dev/null; then
      python="$py"; break
    fi
  done
  if [ -z "$python" ]; then
    for py in python3 /usr/bin/python3; do
      if command -v "$py" >/dev/null && "$py" -c 'import numpy' 2>/dev/null; then python="$py"; break; fi
    done
    [ -n "$python" ] || { echo "run_device: no Python with numpy found (--python)" >&2; exit 1; }
    if [ "$skip_ort" = 0 ]; then
      echo "run_device: no Python with onnxruntime.quantization found; ORT rows skipped" >&2
      skip_ort=1
    fi
  fi
fi
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

all_counts="$(echo $samples $([ "$skip_ort" = 1 ] || echo $ort_samples) | tr ' ' '\n' | sort -nu)"
for n in $all_counts; do
  [ -f "$work/calib_$n.npy" ] || "$python" "$here/make_samples.py" "$work/calib_$n.npy" "$n" --seed 0
done
# The sample files (1.2 GB for 2,048) are still being written back to disk when they have just
# been made; flush them so that write-back does not run beside the first timed run.
sync

field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
declare -a rows
run_ptq() {  # run_ptq N BACKEND -> "seconds rss"
  local n="$1" b="$2" m
  m="$("$python" "$here/measure.py" -- "$ptq" calibrate "$model" --data "$work/calib_$n.npy" \
        --method entropy --batch "$batch" --threads "$threads" --backend "$b" --quiet \
        $([ "$b" = cpu ] && echo $ptq_args) -o "$work/ptq_${b}_$n.json" | tail -1)"
  echo "$(echo "$m" | field seconds) $(echo "$m" | field peak_rss_mb)"
}
run_ort() {  # run_ort N MODE -> "seconds rss"
  local m
  m="$("$python" "$here/ort_quantize_static.py" "$model" "$work/calib_$1.npy" --batch "$batch" \
        --mode "$2" | tail -1)"
  echo "$(echo "$m" | field seconds) $(echo "$m" | field peak_rss_mb)"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; ptq threads $threads; batch $batch${ptq_args:+; ptq (cpu) $ptq_args}"
echo "model: $model"
ptq_first=""
declare -A ptq_time ptq_rss
first_backend="${backends%% *}"
for b in $backends; do
  for n in $samples; do
    read -r s r < <(run_ptq "$n" "$b") || true
    [ -n "${r:-}" ] || { echo "run_device: ptq calibrate --backend $b failed on $n samples" >&2; exit 1; }
    if [ "$b" = "$first_backend" ]; then
      ptq_time[$n]="$s"; ptq_rss[$n]="$r"
      [ -n "$ptq_first" ] || ptq_first="$n"
    fi
    rows+=("ptq calibrate (entropy, $b)|$n|$s|$r|ptq|$n")
  done
done
if [ "$skip_ort" = 0 ]; then
  for n in $ort_samples; do
    read -r s r < <(run_ort "$n" quantize) || true
    [ -n "${r:-}" ] || { echo "run_device: ort_quantize_static.py failed on $n samples" >&2; exit 1; }
    rows+=("ORT quantize_static (Entropy)|$n|$s|$r|ort|$n")
    read -r s r < <(run_ort "$n" calibrate) || true
    [ -n "${r:-}" ] || { echo "run_device: ORT calibration step failed on $n samples" >&2; exit 1; }
    rows+=("ORT calibration step only|$n|$s|$r|ort|$n")
  done
fi

printf '\n%-30s %8s %10s %14s %14s %14s\n' run samples seconds "peak RSS MiB" "time/ptq" "RSS/ptq"
for row in "${rows[@]}"; do
  IFS='|' read -r name n s r kind _ <<<"$row"
  ref_n="$n"; [ -n "${ptq_time[$n]:-}" ] || ref_n="$ptq_first"
  tr="$(awk -v a="$s" -v b="${ptq_time[$ref_n]}" 'BEGIN { printf "%.2f", a / b }')"
  rr="$(awk -v a="$r" -v b="${ptq_rss[$ref_n]}" 'BEGIN { printf "%.2f", a / b }')"
  printf '%-30s %8s %10.2f %14.1f %14s %14s\n' "$name" "$n" "$s" "$r" "$tr" "$rr"
done
echo "(time/ptq and RSS/ptq: against ptq --backend $first_backend with the same sample count; ratios > 1 mean that row is slower / larger)"

small="$(echo $samples | tr ' ' '\n' | sort -n | head -1)"
large="$(echo $samples | tr ' ' '\n' | sort -n | tail -1)"
if [ "$small" != "$large" ]; then
  ratio="$(awk -v a="${ptq_rss[$large]}" -v b="${ptq_rss[$small]}" 'BEGIN { printf "%.3f", a / b }')"
  verdict="$(awk -v x="$ratio" 'BEGIN { print (x <= 1.05 ? "PASS" : "FAIL") }')"
  echo "ptq peak RSS with $large samples / with $small samples: $ratio (target <= 1.05): $verdict"
fi
