#!/usr/bin/env bash
# `make demo`: walks through ptqkit on the bundled example (examples/fashion_cnn.onnx, a small
# residual CNN trained on Fashion-MNIST by examples/train_fashion_cnn.py).
# Usage: scripts/demo.sh BUILD_DIR
# Each step has a heading; later steps (calibrate, quantize, evaluate, compare) are added here.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
ptq="$1/ptq"
model=examples/fashion_cnn.onnx
data=examples/data

step() {
  printf '\n== %s ==\n' "$*"
}

for f in "$model" "$data/calib.npy" "$data/test.npy" "$data/test_labels.npy"; do
  [ -f "$f" ] || { echo "demo: error: $f is missing (run examples/train_fashion_cnn.py)" >&2; exit 1; }
done
[ -x "$ptq" ] || { echo "demo: error: $ptq is not built (run make build)" >&2; exit 1; }

step "1. The example"
cat <<EOF
$model: a small residual CNN (conv-bn-relu stem, three residual blocks, max pooling,
global average pooling, linear head) trained on Fashion-MNIST (10 classes of 28x28 clothing
images) by examples/train_fashion_cnn.py, exported as a float32 ONNX model (opset 13).
  input  'input'  [N,1,28,28] float32, normalised (pixel/255 - 0.2860) / 0.3530
  output 'logits' [N,10]
Data: $data/calib.npy (256 training images for calibration), $data/test.npy and
$data/test_labels.npy (the first 1,000 test images and their labels).
EOF
if [ -f examples/fashion_cnn.metrics.json ]; then
  echo "Float accuracy recorded at training time (examples/fashion_cnn.metrics.json):"
  sed -n 's/.*"top1_test_npy_1000": \(.*\),*/  top-1 on data\/test.npy: \1/p' \
    examples/fashion_cnn.metrics.json | tr -d ','
fi

step "2. What is in the model: ptq info"
"$ptq" info "$model"

out="$1/demo"
mkdir -p "$out"
int8_all="$out/fashion_cnn.int8-all.onnx"
int8="$out/fashion_cnn.int8.onnx"
cache="$out/fashion_cnn.calib.json"
# The two quantized layers that read the stem's output (see step 3's warning).
stem_readers="/block1/conv1/conv1.0/Conv,/block1/Add"

step "3. Quantize: entropy calibration on $data/calib.npy (256 images), TensorRT-style Q/DQ"
echo "\$ ptq quantize $model --data $data/calib.npy --method entropy -o $int8_all --cache-out $cache"
"$ptq" quantize "$model" --data "$data/calib.npy" --method entropy -o "$int8_all" \
  --cache-out "$cache" 2>&1 | sed 's/^/  /'
cat <<EOF
The stem conv (1 input channel) stays float, but its output carries the images' constant
background as spikes that entropy calibration fits at the expense of everything else (a known
snag of KL calibration, specs/quantization.md). The layers reading it go float here, from the
same cache (no recalibration):
\$ ptq quantize $model --cache $cache -o $int8 --exclude $stem_readers
EOF
"$ptq" quantize "$model" --cache "$cache" -o "$int8" --exclude "$stem_readers" 2>&1 | sed 's/^/  /'

step "4. Evaluate: FP32 vs INT8 on $data/test.npy (1,000 images)"
json_field() {  # json_field KEY [KEY…]: prints one value of the JSON object on stdin
  /usr/bin/python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]: v = v[k]
print(v)' "$@"
}
row() {  # row LABEL MODEL: top-1, file size and Q/DQ count of one model
  local top1 qdq
  top1="$("$ptq" eval "$2" --data "$data/test.npy" --labels "$data/test_labels.npy" --json --quiet | json_field top1)"
  qdq="$("$ptq" info "$2" --json | json_field qdq_nodes total)"
  /usr/bin/python3 -c 'import sys
label, top1, size, qdq = sys.argv[1:]
print(f"  {label:26} {float(top1) * 100:6.1f}% {int(size) / 1024:7.0f} KiB {qdq:>11}")' \
    "$1" "$top1" "$(stat -c %s "$2")" "$qdq"
}
printf '  %-26s %7s %11s %11s\n' "" "top-1" "size" "Q/DQ nodes"
row "FP32" "$model"
row "INT8, every layer" "$int8_all"
row "INT8, stem readers float" "$int8"

step "5. How closely INT8 follows FP32: ptq compare"
"$ptq" compare "$model" "$int8" --data "$data/test.npy" --quiet

echo
echo "The INT8 models and the calibration cache are in $out/."
