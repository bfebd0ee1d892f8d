#!/usr/bin/env bash
# Sensitivity sweep speed (issue 8): `ptq sensitivity` (prefix reuse) against the naive cost,
# units x one full forward pass over the eval set (what re-running each variant whole costs),
# and against --no-reuse measured directly with --naive. Target: sweep <= 0.6x naive.
#   bench/sensitivity/run.sh BUILD_DIR TESTDATA_DIR [--naive]
# TESTDATA_DIR is what scripts/make-testdata.sh fills (models/resnet18.onnx, transformer.onnx).
# Prints one line per model and eval size; results go to docs/PERF.md by hand.
set -euo pipefail
build="$1"; data="$2"; naive="${3:-}"
ptq="$build/ptq"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
PY=/usr/bin/python3
now() { date +%s.%N; }
for model in resnet18 transformer; do
  onnx="$data/models/$model.onnx"
  calib="$data/models/$model.samples.npy"
  [ -f "$data/models/$model.calib.npy" ] && calib="$data/models/$model.calib.npy"
  "$ptq" calibrate "$onnx" --data "$calib" --method minmax -o "$work/$model.cache.json" --quiet
  for n in 64 256; do
    # n eval samples: the generated samples repeated with fixed-seed noise.
    $PY - "$data/models/$model.samples.npy" "$work/eval.npy" "$n" <<'PYEOF'
import sys, numpy as np
x = np.load(sys.argv[1]); n = int(sys.argv[3])
reps = np.resize(x, (n,) + x.shape[1:])
if reps.dtype.kind == 'f':
    reps = reps + np.random.default_rng(0).normal(0, 0.1, reps.shape).astype(reps.dtype)
np.save(sys.argv[2], reps)
PYEOF
    t0=$(now); "$ptq" run "$onnx" --data "$work/eval.npy" --batch 16 -o "$work/run" > /dev/null; t1=$(now)
    "$ptq" sensitivity "$onnx" --cache "$work/$model.cache.json" --eval "$work/eval.npy" --batch 16 \
      --metric sqnr -o "$work/r.json" --quiet; t2=$(now)
    units=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))['layers']))" "$work/r.json")
    line=$($PY -c "
full=$t1-$t0; sweep=$t2-$t1; naive=$units*full
print(f'$model n=$n units={$units} full_pass={full:.2f}s naive={naive:.1f}s sweep={sweep:.1f}s ratio={sweep/naive:.2f}')")
    if [ "$naive" = "--naive" ]; then
      t3=$(now)
      "$ptq" sensitivity "$onnx" --cache "$work/$model.cache.json" --eval "$work/eval.npy" --batch 16 \
        --metric sqnr -o "$work/r2.json" --quiet --no-reuse; t4=$(now)
      line="$line no_reuse=$($PY -c "print(f'{$t4-$t3:.1f}s')")"
    fi
    echo "$line"
  done
done
