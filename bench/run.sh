#!/usr/bin/env bash
# CPU runtime benchmark against ONNX Runtime (onnxruntime-node, same machine, same run):
# ResNet-18 and MobileNetV2 at 224x224, batch 1 and 32, 1 and 2 threads; throughput ratios and
# peak RSS at batch 32 against weights + the largest live activation set from the executor.
#   [MODELS="resnet18 mobilenet_v2"] bench/run.sh BUILD_DIR [SECONDS_PER_POINT]
# MODELS picks the test models (transformer: the small encoder, 16 tokens of 64 per sample).
# Needs the test data (make testdata) in BUILD_DIR/testdata or $PTQ_TEST_DATA.
# REPEAT=N (default 1) runs each point's pair (ptq, then ORT) N times back to back and prints
# each runtime's best rate, their ratio and the range of the N pairwise ratios: on a shared
# machine other jobs only ever slow a run down, so the best of several is the steadier figure.
set -euo pipefail
declare -A mem
build="$(cd "${1:?usage: bench/run.sh BUILD_DIR [SECONDS]}" && pwd)"
secs="${2:-10}"
repeat="${REPEAT:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
data="${PTQ_TEST_DATA:-$build/testdata}/models"
bin="$build/bench/runtime_bench"
[ -x "$bin" ] || { echo "bench: $bin is missing (build the runtime_bench target)" >&2; exit 1; }
command -v node >/dev/null || { echo "bench: node is missing (scripts/install-deps.sh)" >&2; exit 1; }

# Each runtime waits for work as it does by default (PTQ_BENCH_SPIN=1, the default): ONNX
# Runtime's intra-op pool spins before it blocks (milliseconds), ptqkit's kernel helpers watch
# for the next loop for 100 microseconds before they sleep (include/ptq/runtime/task_pool.h).
# PTQ_BENCH_SPIN=0 makes neither spin: ORT's allow_spinning=0, ptqkit's PTQ_SPIN_US=0, and
# OMP_WAIT_POLICY=passive for the OpenMP loop left in ptqkit (the calibrators' ranges).
export PTQ_BENCH_SPIN="${PTQ_BENCH_SPIN:-1}"
if [ "$PTQ_BENCH_SPIN" = 0 ]; then export OMP_WAIT_POLICY=passive PTQ_SPIN_US=0; fi

mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); ${secs}s per point; ${repeat} pair(s) per point; spinning ${PTQ_BENCH_SPIN}"
printf '%-13s %5s %7s %12s %12s %7s %13s\n' model batch threads "ptq img/s" "ORT img/s" ratio "pair ratios"
for model in ${MODELS:-resnet18 mobilenet_v2}; do
  for batch in 1 32; do
    for threads in 1 2; do
      a=0; b=0; lo=; hi=
      for ((r = 0; r < repeat; r++)); do
        ours="$("$bin" "$data/$model.onnx" "$data/$model.samples.npy" "$batch" "$threads" "$secs")"
        theirs="$(node "$here/../tests/runtime/ort_run.js" --bench "$data/$model.onnx" \
          "$data/$model.samples.npy" "$batch" "$threads" "$secs")"
        x="$(echo "$ours" | field images_per_s)"
        y="$(echo "$theirs" | sed -n 's/images_per_s \([0-9.]*\).*/\1/p')"
        q="$(awk -v a="$x" -v b="$y" 'BEGIN { printf "%.2f", a / b }')"
        a="$(awk -v a="$a" -v x="$x" 'BEGIN { print (x > a ? x : a) }')"
        b="$(awk -v b="$b" -v y="$y" 'BEGIN { print (y > b ? y : b) }')"
        lo="$(awk -v l="${lo:-$q}" -v q="$q" 'BEGIN { print (q < l ? q : l) }')"
        hi="$(awk -v h="${hi:-$q}" -v q="$q" 'BEGIN { print (q > h ? q : h) }')"
      done
      printf '%-13s %5s %7s %12.2f %12.2f %7.2f %13s\n' "$model" "$batch" "$threads" "$a" "$b" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" "$lo-$hi"
      if [ "$batch" = 32 ] && [ "$threads" = 1 ]; then
        mem["$model"]="$ours"
      fi
    done
  done
done
echo
echo "memory at batch 32 (MiB): peak RSS while running vs weights + input + largest live activation set"
printf '%-13s %9s %9s %9s %11s %9s %9s\n' model weights input "live max" "sum" "pool" "peak RSS"
for model in ${MODELS:-resnet18 mobilenet_v2}; do
  line="${mem[$model]}"
  w="$(echo "$line" | field weight_bytes)"; l="$(echo "$line" | field peak_live_bytes)"
  i="$(echo "$line" | field input_bytes)"; p="$(echo "$line" | field pool_bytes)"
  r="$(echo "$line" | field rss_bytes)"
  printf '%-13s %9s %9s %9s %11s %9s %9s\n' "$model" "$(mib "$w")" "$(mib "$i")" "$(mib "$l")" \
    "$(mib $((w + i + l)))" "$(mib "$p")" "$(mib "$r")"
done
