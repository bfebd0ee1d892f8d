#!/usr/bin/env bash
# Generates the models and data the tests read from PTQ_TEST_DATA (run by `make testdata` and
# `make test`):
#   DIR/models/{resnet18,mobilenet_v2,transformer}.onnx   random-init models, fixed seed
#   DIR/models/<name>.samples.npy                         8 float32 samples each
#   DIR/models/resnet18.calib.npy                         32 float32 samples
#   DIR/models/einsum_attention.{onnx,samples.npy}         attention with torch.einsum
#   DIR/onnx-backend/node/test_*/                         ONNX's own backend node test data
#   DIR/zoo/                                              the model zoo (scripts/export_zoo.py)
# Idempotent: each item has a stamp DIR/.stamps/<item> holding a version string (this script's
# VERSION, the generator's checksum, the versions of torch/torchvision/onnx/numpy). An item whose
# stamp matches and whose files exist is skipped, so a second call is a fast no-op; changing the
# generator regenerates it. Any failure stops the script with a non-zero status.
set -euo pipefail

VERSION=1  # bump to regenerate every item
PY=/usr/bin/python3
here="$(cd "$(dirname "$0")" && pwd)"

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
mkdir -p "$1"
dir="$(cd "$1" && pwd)"
stamps="$dir/.stamps"
mkdir -p "$stamps" "$dir/models"

fail() {
  echo "make-testdata: error: $*" >&2
  exit 1
}

package_versions="$(dpkg-query -W -f='${Package}=${Version} ' \
  python3-torch python3-torchvision python3-onnx python3-numpy 2>/dev/null || true)"

# item NAME GENERATOR "OUTPUTS..." COMMAND...: runs COMMAND unless NAME's stamp is current.
item() {
  local name="$1" generator="$2" outputs="$3"
  shift 3
  local version
  version="v$VERSION $(sha256sum "$generator" "$here/make-testdata.sh" | cut -c1-16 | tr '\n' ' ')$package_versions"
  local stamp="$stamps/$name"
  local complete=1 out
  for out in $outputs; do
    [ -e "$dir/$out" ] || complete=0
  done
  if [ "$complete" = 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ]; then
    echo "make-testdata: $name is up to date"
    return
  fi
  echo "make-testdata: generating $name"
  rm -f "$stamp"
  local start=$SECONDS
  "$@" || fail "generating $name failed (command: $*)"
  for out in $outputs; do
    [ -e "$dir/$out" ] || fail "generating $name did not produce $dir/$out"
  done
  printf '%s' "$version" > "$stamp.tmp" && mv "$stamp.tmp" "$stamp"
  echo "make-testdata: $name done in $((SECONDS - start)) s"
}

# The exporters print TracerWarnings about Python control flow that are expected here.
export PYTHONWARNINGS=ignore

item resnet18 "$here/export_models.py" \
  "models/resnet18.onnx models/resnet18.samples.npy models/resnet18.calib.npy" \
  "$PY" "$here/export_models.py" resnet18 "$dir/models"
item mobilenet_v2 "$here/export_models.py" \
  "models/mobilenet_v2.onnx models/mobilenet_v2.samples.npy" \
  "$PY" "$here/export_models.py" mobilenet_v2 "$dir/models"
item transformer "$here/export_models.py" \
  "models/transformer.onnx models/transformer.samples.npy" \
  "$PY" "$here/export_models.py" transformer "$dir/models"
item einsum_attention "$here/export_einsum_model.py" \
  "models/einsum_attention.onnx models/einsum_attention.samples.npy" \
  "$PY" "$here/export_einsum_model.py" "$dir/models"
item onnx-backend "$here/gen_backend_data.py" \
  "onnx-backend/node/test_conv_with_strides_padding/model.onnx" \
  "$PY" "$here/gen_backend_data.py" "$dir/onnx-backend"
mkdir -p "$dir/zoo"
for model in $("$PY" "$here/export_zoo.py" --list); do
  item "zoo-$model" "$here/export_zoo.py" "zoo/$model.onnx zoo/$model.json" \
    "$PY" "$here/export_zoo.py" "$dir/zoo" "$model"
done
