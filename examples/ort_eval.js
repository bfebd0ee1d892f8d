// Top-1 accuracy of a classifier with ONNX Runtime (onnxruntime-node), as a peer check of
// `ptq eval`. Usage: node examples/ort_eval.js MODEL.onnx DATA.npy LABELS.npy
// DATA.npy: float16 or float32 samples, batch first; LABELS.npy: int64 or int32 [N].
// Prints one JSON line: {"model": …, "samples": N, "top1": …}.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'third_party', 'ort', 'node_modules',
                              'onnxruntime-node'));

// Reads a little-endian, C-order .npy file (format 1.0 or 2.0) into {dtype, shape, data}.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const body = buf.subarray(start);
  const aligned = new Uint8Array(body).buffer;  // a copy, so typed arrays are aligned
  const types = {'<f4': Float32Array, '<f2': Uint16Array, '<i8': BigInt64Array, '<i4': Int32Array};
  if (!(descr in types)) throw new Error(`${file}: unsupported dtype ${descr}`);
  return {dtype: descr, shape, data: new types[descr](aligned)};
}

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

async function main() {
  if (process.argv.length !== 5) {
    console.error('usage: node examples/ort_eval.js MODEL.onnx DATA.npy LABELS.npy');
    process.exit(2);
  }
  const [modelPath, dataPath, labelsPath] = process.argv.slice(2);
  const x = readNpy(dataPath);
  const labels = readNpy(labelsPath);
  const floats = x.dtype === '<f2' ? Float32Array.from(x.data, halfToFloat) : x.data;
  const session = await ort.InferenceSession.create(modelPath);
  const n = x.shape[0];
  const per = floats.length / n;
  const batch = 100;
  let correct = 0;
  for (let i = 0; i < n; i += batch) {
    const b = Math.min(batch, n - i);
    const input = new ort.Tensor('float32', floats.subarray(i * per, (i + b) * per),
                                 [b, ...x.shape.slice(1)]);
    const out = await session.run({[session.inputNames[0]]: input});
    const logits = out[session.outputNames[0]].data;
    const classes = logits.length / b;
    for (let s = 0; s < b; s++) {
      let best = 0;
      for (let c = 1; c < classes; c++) {
        if (logits[s * classes + c] > logits[s * classes + best]) best = c;
      }
      if (best === Number(labels.data[i + s])) correct++;
    }
  }
  console.log(JSON.stringify({model: modelPath, samples: n, top1: correct / n}));
}

main().catch((e) => { console.error(`ort_eval: error: ${e.message}`); process.exit(1); });
