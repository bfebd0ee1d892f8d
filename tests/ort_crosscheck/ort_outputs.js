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

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
};

function halfToFloat(h) {
  const s = (h & 0x8000) ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * Math.pow(2, -14) * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * Math.pow(2, e - 15) * (1 + f / 1024);
}

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
  const off = start + hlen;
  const bytes = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length);
  if (descr === '<f2') {
    const h = new Uint16Array(bytes);
    const f = new Float32Array(h.length);
    for (let i = 0; i < h.length; ++i) f[i] = halfToFloat(h[i]);
    return {type: 'float32', shape, data: f};
  }
  const [type, Arr] = DTYPES[descr] || [];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
  return {type, shape, data: new Arr(bytes)};
}

function npyBytes(type, dims, chunks) {
  const descr = Object.keys(DTYPES).find((k) => DTYPES[k][0] === type);
  if (!descr) throw new Error(`output type ${type} not supported`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = chunks.map((d) => Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  return Buffer.concat([head, Buffer.from(header, 'latin1'), ...data]);
}

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
    fs.writeFileSync(`${file}.tmp`, npyBytes(o.type, [o.rows, ...o.row], o.chunks));
    fs.renameSync(`${file}.tmp`, file);
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
