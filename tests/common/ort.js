// ONNX Runtime (onnxruntime-node from third_party/ort) as the node scripts run it: one session
// setup and one way to cut batches, shared by tests/runtime/ort_run.js and ort_batches.js.
'use strict';
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const ort = require(path.join(root, 'third_party', 'ort', 'node_modules', 'onnxruntime-node'));

// All graph optimisations, THREADS intra-op threads. PTQ_BENCH_SPIN=0 turns off the intra-op
// pool's spin-waiting (bench/run.sh then turns off ptqkit's short watch for the next loop too,
// task_pool.h); otherwise ORT's default applies.
async function session(model, threads) {
  const options = {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  if (process.env.PTQ_BENCH_SPIN === '0') {
    options.extra = {session: {intra_op: {allow_spinning: '0'}}};
  }
  return ort.InferenceSession.create(model, options);
}

// Samples [first, first + count) of `arr` (cycling through those stored) as one tensor.
function cycledBatch(arr, first, count) {
  const per = arr.shape.slice(1).reduce((a, b) => a * b, 1);
  const out = new arr.data.constructor(per * count);
  for (let i = 0; i < count; ++i) {
    const s = (first + i) % arr.shape[0];
    out.set(arr.data.subarray(s * per, (s + 1) * per), i * per);
  }
  return new ort.Tensor(arr.type, out, [count, ...arr.shape.slice(1)]);
}

module.exports = {cycledBatch, session};
