#!/usr/bin/env bash
# Sensitivity sweep speed (issue 8 item 5): `ptq sensitivity` (prefix reuse) against the naive
# cost, units x one full FP32 forward pass over the eval set: the report's sweep_seconds (FP32
# reference + fully quantized model + every unit's variant) and float_pass_seconds (the
# evaluator's FP32 pass over the eval set inside the sweep, after its executor is made).
# Target: <= 0.6. An only-mode sweep runs that pass on the first batch alone (its base's runs
# give the rest of the FP32 outputs), so its row takes the full pass from an all-but sweep run
# just before it on the same data: the same evaluator, timed the same way, in a process that
# did the same until then.
# The same ratio from process CPU time (sweep_cpu_seconds, float_pass_cpu_seconds) is printed
# too: on a shared machine it is far steadier than wall time.
#   [REPEAT=N] [MODELS="resnet18 transformer"] bench/sensitivity/run.sh BUILD_DIR TESTDATA_DIR [SIZES] [MODES] [--naive]
# SIZES defaults to "64 256", MODES to "only"; REPEAT runs each point N times (one line each);
# --naive also times --no-reuse (every variant run whole, one after the other in the same
# process, FP32 reference and fully quantized model included) on the same data right after:
# the naive cost measured directly (vs_no_reuse), beside the conservative units x FP32 pass.
# warm_1t_ratio divides by units x the FP32 pass at its fastest: warm (a third run onwards)
# on one thread (BUILD_DIR/bench/runtime_bench, same model, samples and batch), which no naive
# run of fresh variants reaches; it shows what the sweep gains beyond the FP32 pass's own
# first-run and threading costs. TESTDATA_DIR is what scripts/make-testdata.sh fills.
# Eval samples: seeded standard-normal inputs shaped like the model's .samples.npy (the
# models have random weights, so real images would mean nothing more).
# Prints one line per model, size and mode; results go to docs/PERF.md by hand.
set -euo pipefail
build="$1"; data="$2"; sizes="${3:-64 256}"; modes="${4:-only}"; naive="${5:-}"
ptq="$build/ptq"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
PY=/usr/bin/python3
now() { date +%s.%N; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}"
for model in ${MODELS:-resnet18 transformer}; do
  onnx="$data/models/$model.onnx"
  calib="$data/models/$model.samples.npy"
  [ -f "$data/models/$model.calib.npy" ] && calib="$data/models/$model.calib.npy"
  "$ptq" calibrate "$onnx" --data "$calib" --method minmax -o "$work/$model.cache.json" --quiet
  for n in $sizes; do
    $PY - "$data/models/$model.samples.npy" "$work/eval.npy" "$n" <<'PYEOF'
import sys, numpy as np
shape = np.load(sys.argv[1], mmap_mode='r').shape[1:]
n = int(sys.argv[3])
np.save(sys.argv[2], np.random.default_rng(n).standard_normal((n,) + shape, dtype=np.float32))
PYEOF
    ips=$(OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$build/bench/runtime_bench" "$onnx" \
      "$work/eval.npy" 16 1 2 | sed -n 's/^images_per_s=\([0-9.]*\).*/\1/p')
    for mode in $modes; do
     : > "$work/reps.txt"
     for rep in $(seq "${REPEAT:-1}"); do
      pass="$work/r.json"
      if [ "$mode" = only ]; then
        pass="$work/pass.json"
        "$ptq" sensitivity "$onnx" --cache "$work/$model.cache.json" --eval "$work/eval.npy" \
          --batch 16 --metric sqnr --mode all-but -o "$pass" --quiet
      fi
      t0=$(now)
      "$ptq" sensitivity "$onnx" --cache "$work/$model.cache.json" --eval "$work/eval.npy" \
        --batch 16 --metric sqnr --mode "$mode" -o "$work/r.json" --quiet
      t1=$(now)
      line=$($PY - "$work/r.json" "$model" "$n" "$mode" "$t0" "$t1" "$ips" "$pass" "$work/reps.txt" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[8]))
assert p['float_pass_batches'] == p['batches']
units = len(r['layers']); full = p['float_pass_seconds']; sweep = r['sweep_seconds']
warm = int(sys.argv[3]) / float(sys.argv[7])  # the warm 1-thread FP32 pass, seconds
wall = float(sys.argv[6]) - float(sys.argv[5])
naive = units * full
cpu = r['sweep_cpu_seconds'] / (units * p['float_pass_cpu_seconds'])
with open(sys.argv[9], 'a') as f:
    f.write(f"{sweep} {naive} {r['sweep_cpu_seconds']} {units * p['float_pass_cpu_seconds']}\n")
print(f"{sys.argv[2]:<12} n={sys.argv[3]:<4} {sys.argv[4]:<8} units={units:<3} full_pass={full * 1e3:8.1f}ms "
      f"naive={naive * 1e3:9.1f}ms sweep={sweep * 1e3:9.1f}ms (process {wall:6.1f}s) ratio={sweep / naive:.2f} "
      f"cpu_ratio={cpu:.2f} warm_1t_pass={warm * 1e3:.1f}ms warm_1t_ratio={sweep / (units * warm):.2f}")
PYEOF
)
      if [ "$naive" = "--naive" ]; then
        t2=$(now)
        "$ptq" sensitivity "$onnx" --cache "$work/$model.cache.json" --eval "$work/eval.npy" \
          --batch 16 --metric sqnr --mode "$mode" -o "$work/r2.json" --quiet --no-reuse
        t3=$(now)
        line="$line $($PY - "$work/r.json" "$work/r2.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = [x['name'] for x in a['layers']] == [x['name'] for x in b['layers']]
print(f"no_reuse={b['sweep_seconds']:.2f}s vs_no_reuse={a['sweep_seconds'] / b['sweep_seconds']:.2f} "
      f"cpu_vs_no_reuse={a['sweep_cpu_seconds'] / b['sweep_cpu_seconds']:.2f} same_ranking={same}")
PYEOF
)"
      fi
      echo "$line"
     done
     # With REPEAT > 1: medians over the runs, whose ratio moves less than any one run's (the
     # FP32 pass that sets the naive cost is a few milliseconds for the transformer).
     if [ "${REPEAT:-1}" -gt 1 ]; then
       $PY - "$work/reps.txt" "$model" "$n" "$mode" <<'PYEOF'
import statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[1])]
sweep, naive, cpu_sweep, cpu_naive = (statistics.median(c) for c in zip(*rows))
print(f"{sys.argv[2]:<12} n={sys.argv[3]:<4} {sys.argv[4]:<8} median of {len(rows)}: sweep={sweep * 1e3:.1f}ms "
      f"naive={naive * 1e3:.1f}ms ratio={sweep / naive:.2f} cpu_ratio={cpu_sweep / cpu_naive:.2f}")
PYEOF
     fi
    done
  done
done
