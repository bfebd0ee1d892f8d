#!/usr/bin/env bash
# The portable build (-DPTQ_NATIVE=OFF: kernels pick their instruction set at run time) against
# the -march=native build on the bench models, in the same run: both are built (runtime_bench
# only; configured when missing) into NATIVE_BUILD (default ROOT/build-native) and
# PORTABLE_BUILD (ROOT/build-portable), then each point runs them alternately REPEAT times
# (default 5) and prints each one's median throughput and portable / native.
#   [MODELS="resnet18 mobilenet_v2"] [REPEAT=5] [NATIVE_BUILD=DIR] [PORTABLE_BUILD=DIR] \
#     bench/portable.sh [SECONDS_PER_RUN]
# With two ptq binaries instead, the zoo's transformers (Eigen's sgemm for their activation
# MatMuls, the elementwise, Erf, LayerNorm and reduction loops): `ptq run` on each model's test
# samples, the two binaries alternately REPEAT times, median wall seconds and native / portable
# (the portable build's speed relative to native, as above):
#   [TRANSFORMERS="bert_opset17 gpt_decoder"] (default: all six) [THREADS="1 2"] [REPEAT=5] \
#     bench/portable.sh --ptq NATIVE_PTQ PORTABLE_PTQ
# Needs the test data (make testdata): $PTQ_TEST_DATA or ROOT/build/testdata.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
repeat="${REPEAT:-5}"
testdata="${PTQ_TEST_DATA:-$root/build/testdata}"
data="$testdata/models"

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {
  print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
machine() {
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg); $1"
}

# Wall seconds of one `ptq run` of zoo model $2 on $3 threads by binary $1 (each input's
# test samples, NAME.npy, fed by name).
run_seconds() {
  local out start f data=()
  out="$(mktemp -d)"
  for f in "$testdata/zoo/$2/test/"*.npy; do data+=(--data "$(basename "$f" .npy)=$f"); done
  start="$(date +%s.%N)"
  "$1" run "$testdata/zoo/$2.onnx" "${data[@]}" --threads "$3" -q -o "$out" >/dev/null
  awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
  rm -rf "$out"
}

if [ "${1:-}" = --ptq ]; then
  [ $# -eq 3 ] || { echo "usage: bench/portable.sh --ptq NATIVE_PTQ PORTABLE_PTQ" >&2; exit 2; }
  machine "$repeat alternating runs per binary and point"
  printf '%-16s %7s %10s %12s %9s\n' model threads "native s" "portable s" ratio
  all="bert_opset17 bert_opset13 gpt_decoder whisper_encoder vit_b_16 swin_t"
  for model in ${TRANSFORMERS:-$all}; do
    for threads in ${THREADS:-1 2}; do
      n=""; p=""
      for ((r = 0; r < repeat; r++)); do
        n+=" $(run_seconds "$2" "$model" "$threads")"
        p+=" $(run_seconds "$3" "$model" "$threads")"
      done
      nm="$(echo "$n" | median)"; pm="$(echo "$p" | median)"
      printf '%-16s %7s %10.3f %12.3f %9.3f\n' "$model" "$threads" "$nm" "$pm" \
        "$(awk -v a="$nm" -v b="$pm" 'BEGIN { print a / b }')"
    done
  done
  exit 0
fi

secs="${1:-3}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
declare -A dir=([native]="${NATIVE_BUILD:-$root/build-native}"
               [portable]="${PORTABLE_BUILD:-$root/build-portable}")
for kind in portable native; do
  native=ON; [ "$kind" = portable ] && native=OFF
  if [ ! -f "${dir[$kind]}/CMakeCache.txt" ]; then
    cmake -S "$root" -B "${dir[$kind]}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTQ_NATIVE=$native \
      -DPTQ_TESTS=OFF -DPTQ_VULKAN=OFF "${launcher[@]}" >/dev/null
  fi
  grep -q "^PTQ_NATIVE:BOOL=$native" "${dir[$kind]}/CMakeCache.txt" ||
    { echo "portable.sh: ${dir[$kind]} is not configured with PTQ_NATIVE=$native" >&2; exit 1; }
  nice cmake --build "${dir[$kind]}" -j "${JOBS:-2}" --target runtime_bench >/dev/null
done

rate() { "${dir[$1]}/bench/runtime_bench" "$data/$2.onnx" "$data/$2.samples.npy" "$3" "$4" "$secs" |
  sed -n 's/.*images_per_s=\([0-9.]*\).*/\1/p'; }

machine "${secs}s per run, $repeat alternating runs per build and point"
printf '%-13s %5s %7s %14s %14s %9s\n' model batch threads "native img/s" "portable img/s" ratio
for model in ${MODELS:-resnet18 mobilenet_v2}; do
  for batch in 1 32; do
    for threads in 1 2; do
      n=""; p=""
      for ((r = 0; r < repeat; r++)); do
        n+=" $(rate native "$model" "$batch" "$threads")"
        p+=" $(rate portable "$model" "$batch" "$threads")"
      done
      nm="$(echo "$n" | median)"; pm="$(echo "$p" | median)"
      printf '%-13s %5s %7s %14.2f %14.2f %9.3f\n' "$model" "$batch" "$threads" "$nm" "$pm" \
        "$(awk -v a="$pm" -v b="$nm" 'BEGIN { print a / b }')"
    done
  done
done
