#!/usr/bin/env node
// Runs a (Q/DQ) model with ONNX Runtime (onnxruntime-node from third_party/ort) on the first
// COUNT samples of an .npy file, BATCH samples per run, and writes every output as
// OUTDIR/<output name>.npy (samples stacked on the first axis). The peer of the ORT
// cross-check (ort_crosscheck_test.cpp).
//   node ort_outputs.js MODEL INPUT.npy COUNT BATCH OUTDIR LEVEL
// LEVEL is ONNX Runtime's graph optimization level: "disabled" executes QuantizeLinear and
// DequantizeLinear as written (the semantics ptqkit's runtime implements); "all" lets ORT fuse
// Q/DQ patterns into integer kernels (QLinearConv, QGemm, …), as a deployment would run.
// Float16 inputs are widened to float32 (the example data is stored in float16).
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const ort = require(path.join(root, 'third_party', 'ort', 'node_modules', 'onnxruntime-node'));

const {readNpy, writeNpy} = require(path.join(root, 'tests', 'common', 'npy.js'));

async function main(model, input, count, batch, outdir, level) {
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: level,
  });
  const arr = readNpy(input);
  const n = count > 0 ? Math.min(count, arr.shape[0]) : arr.shape[0];
  const per = arr.shape.slice(1).reduce((a, b) => a * b, 1);
  const outputs = {};
  for (let first = 0; first < n; first += batch) {
    const k = Math.min(batch, n - first);
    const x = new ort.Tensor(arr.type, arr.data.slice(first * per, (first + k) * per),
        [k, ...arr.shape.slice(1)]);
    const results = await session.run({[session.inputNames[0]]: x});
    for (const name of session.outputNames) {
      const t = results[name];
      if (!outputs[name]) outputs[name] = {type: t.type, row: t.dims.slice(1), rows: 0, chunks: []};
      outputs[name].rows += t.dims[0];
      outputs[name].chunks.push(t.data);
    }
  }
  fs.mkdirSync(outdir, {recursive: true});
  for (const [name, o] of Object.entries(outputs)) {
    const file = path.join(outdir, `${name.replace(/[^A-Za-z0-9._-]/g, '_')}.npy`);
    writeNpy(file, o.type, [o.rows, ...o.row], o.chunks);
  }
}

const args = process.argv.slice(2);
if (args.length !== 6) {
  console.error('usage: node ort_outputs.js MODEL INPUT.npy COUNT BATCH OUTDIR disabled|basic|extended|all');
  process.exit(2);
}
main(args[0], args[1], Number(args[2]), Number(args[3]), args[4], args[5]).catch((e) => {
  console.error(`ort_outputs: error: ${e.message}`);
  process.exit(1);
});
