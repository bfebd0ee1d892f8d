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
const ort = require(path.join(root, 'third_party', 'ort', 'node_modules', 'onnxruntime-node'));

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not an .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
      .filter((s) => s.length).map(Number);
  const [type, Arr] = DTYPES[descr] || [];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
  const off = start + hlen;
  const bytes = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length);
  return {type, shape, data: new Arr(bytes)};
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`output type ${tensor.type} not supported`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
  fs.renameSync(tmp, file);
}

// The first `count` samples of `arr` (cycling) as one batch tensor.
function batchOf(arr, count) {
  const per = arr.shape.slice(1).reduce((a, b) => a * b, 1);
  const n = count > 0 ? count : arr.shape[0];
  const out = new arr.data.constructor(per * n);
  for (let i = 0; i < n; ++i) {
    const s = i % arr.shape[0];
    out.set(arr.data.subarray(s * per, (s + 1) * per), i * per);
  }
  return new ort.Tensor(arr.type, out, [n, ...arr.shape.slice(1)]);
}

// PTQ_BENCH_SPIN=0 turns off the intra-op pool's spin-waiting (bench/run.sh then turns off
// ptqkit's short watch for the next loop too, task_pool.h); otherwise ORT's default applies.
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

async function run(model, input, count, outdir, threads) {
  const s = await session(model, threads);
  const feeds = {[s.inputNames[0]]: batchOf(readNpy(input), count)};
  const results = await s.run(feeds);
  fs.mkdirSync(outdir, {recursive: true});
  for (const name of s.outputNames) writeNpy(path.join(outdir, `${name}.npy`), results[name]);
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
