#!/usr/bin/env node
// Runs a model with ONNX Runtime (onnxruntime-node from third_party/ort) on samples from an
// .npy file and writes every output as OUTDIR/<output name>.npy. The peer the runtime tests
// and benchmarks compare against.
//   node ort_run.js MODEL INPUT.npy COUNT OUTDIR [THREADS]
//   node ort_run.js --bench MODEL INPUT.npy BATCH THREADS SECONDS   (prints "images_per_s X")
// COUNT > 0 takes the first COUNT samples (cycling if the file holds fewer); 0 takes them all.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const {readNpy, writeNpy} = require(path.join(root, 'tests', 'common', 'npy.js'));
const {cycledBatch, session} = require(path.join(root, 'tests', 'common', 'ort.js'));

// The first `count` samples of `arr` (cycling); 0 takes them all.
function batchOf(arr, count) {
  return cycledBatch(arr, 0, count > 0 ? count : arr.shape[0]);
}

async function run(model, input, count, outdir, threads) {
  const s = await session(model, threads);
  const feeds = {[s.inputNames[0]]: batchOf(readNpy(input), count)};
  const results = await s.run(feeds);
  fs.mkdirSync(outdir, {recursive: true});
  for (const name of s.outputNames) {
    const t = results[name];
    writeNpy(path.join(outdir, `${name}.npy`), t.type, t.dims, [t.data]);
  }
}

async function bench(model, input, batch, threads, seconds) {
  const s = await session(model, threads);
  const feeds = {[s.inputNames[0]]: batchOf(readNpy(input), batch)};
  for (let i = 0; i < 2; ++i) await s.run(feeds);  // warm-up
  let runs = 0;
  const t0 = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < seconds || runs < 3) {
    await s.run(feeds);
    ++runs;
    elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  }
  console.log(`images_per_s ${(runs * batch / elapsed).toFixed(3)} runs ${runs} seconds ${elapsed.toFixed(3)}`);
}

const args = process.argv.slice(2);
const job = args[0] === '--bench' ?
    bench(args[1], args[2], Number(args[3]), Number(args[4]), Number(args[5])) :
    run(args[0], args[1], Number(args[2]), args[3], Number(args[4] || 1));
job.catch((e) => {
  console.error(`ort_run: error: ${e.message}`);
  process.exit(1);
});
