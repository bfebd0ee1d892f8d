#!/usr/bin/env node
// Runs a model with ONNX Runtime (onnxruntime-node from third_party/ort) over samples stacked
// on axis 0 of one .npy file per input, BATCH samples a run, and writes every output as
// OUTDIR/<output name>.npy, the batches concatenated on axis 0. The peer of the zoo tests and
// of `make bench-zoo`.
//   node ort_batches.js MODEL OUTDIR BATCH THREADS COUNT NAME=FILE.npy...   (COUNT 0: all)
//   node ort_batches.js --bench MODEL BATCH THREADS SECONDS NAME=FILE.npy...
//       (prints "samples_per_s X runs N seconds S peak_rss_mib M"; the first BATCH samples,
//       cycling, run again and again after two warm-up runs)
'use strict';
const path = require('path');
const {readNpy, writeNpy} = require('./npy.js');
const {cycledBatch, session} = require('./ort.js');

function readInputs(specs) {
  const inputs = {};
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`input '${spec}' is not NAME=FILE.npy`);
    inputs[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  return inputs;
}

function feeds(inputs, first, count) {
  const f = {};
  for (const [name, arr] of Object.entries(inputs)) f[name] = cycledBatch(arr, first, count);
  return f;
}

async function run(model, outdir, batch, threads, count, specs) {
  const s = await session(model, threads);
  const inputs = readInputs(specs);
  const stored = Object.values(inputs)[0].shape[0];
  const n = count > 0 ? Math.min(count, stored) : stored;
  const outputs = {};
  for (let first = 0; first < n; first += batch) {
    const k = Math.min(batch, n - first);
    const results = await s.run(feeds(inputs, first, k));
    for (const name of s.outputNames) {
      const t = results[name];
      if (!outputs[name]) outputs[name] = {type: t.type, row: t.dims.slice(1), rows: 0, chunks: []};
      outputs[name].rows += t.dims[0];
      outputs[name].chunks.push(t.data);
    }
  }
  require('fs').mkdirSync(outdir, {recursive: true});
  for (const [name, o] of Object.entries(outputs)) {
    writeNpy(path.join(outdir, `${name}.npy`), o.type, [o.rows, ...o.row], o.chunks);
  }
}

async function bench(model, batch, threads, seconds, specs) {
  const s = await session(model, threads);
  const f = feeds(readInputs(specs), 0, batch);
  for (let i = 0; i < 2; ++i) await s.run(f);
  let runs = 0;
  let elapsed = 0;
  const t0 = process.hrtime.bigint();
  while (elapsed < seconds || runs < 3) {
    await s.run(f);
    ++runs;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  }
  const rss = process.resourceUsage().maxRSS / 1024;
  console.log(`samples_per_s ${(runs * batch / elapsed).toFixed(3)} runs ${runs} ` +
              `seconds ${elapsed.toFixed(3)} peak_rss_mib ${rss.toFixed(1)}`);
}

const args = process.argv.slice(2);
const job = args[0] === '--bench' ?
    bench(args[1], Number(args[2]), Number(args[3]), Number(args[4]), args.slice(5)) :
    run(args[0], args[1], Number(args[2]), Number(args[3]), Number(args[4]), args.slice(5));
job.catch((e) => {
  console.error(`ort_batches: error: ${e.message}`);
  process.exit(1);
});
