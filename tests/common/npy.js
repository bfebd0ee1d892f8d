// .npy reading and writing for the node scripts that run ONNX Runtime beside ptqkit
// (tests/runtime/ort_run.js, tests/ort_crosscheck/ort_outputs.js, tests/common/ort_batches.js).
'use strict';
const fs = require('fs');

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '|b1': ['bool', Uint8Array],
};

function halfToFloat(h) {
  const s = (h & 0x8000) ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * Math.pow(2, -14) * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * Math.pow(2, e - 15) * (1 + f / 1024);
}

// {type, shape, data}: float16 arrays are widened to float32.
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

// The bytes of an .npy file of `type` and `dims` holding `chunks` (typed arrays) in order.
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

// Writes through a temporary name, so a reader never sees a half-written file.
function writeNpy(file, type, dims, chunks) {
  fs.writeFileSync(`${file}.tmp`, npyBytes(type, dims, chunks));
  fs.renameSync(`${file}.tmp`, file);
}

module.exports = {readNpy, writeNpy};
