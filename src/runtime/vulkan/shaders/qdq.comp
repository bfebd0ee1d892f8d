#version 450
// QuantizeLinear (QUANTIZE) and DequantizeLinear between float32 and 8-bit integers stored
// packed four to a uint (little-endian, as on the host). Scale and zero point per tensor or
// per channel of [outer, C, inner]. Quantize: saturate(round_half_even(x / scale) + zp).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) readonly buffer Z { int zero[]; };
layout(push_constant) uniform Params {
  uint n;
  uint channels, inner;  // channels == 1: per tensor
  uint is_signed;
  uint has_zero;
} p;

uint channel(uint i) { return p.channels == 1u ? 0u : (i / p.inner) % p.channels; }

#ifdef QUANTIZE
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 3) writeonly buffer Q { uint q[]; };

uint quantize(uint i) {
  uint c = channel(i);
  float z = p.has_zero != 0u ? float(zero[c]) : 0.0;
  float v = roundEven(x[i] / scale[c]) + z;
  float lo = p.is_signed != 0u ? -128.0 : 0.0, hi = p.is_signed != 0u ? 127.0 : 255.0;
  v = clamp(v, lo, hi);
  return uint(int(v)) & 0xffu;
}

void main() {
  GRID_STRIDE(w, (p.n + 3u) / 4u) {
    uint word = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      uint i = w * 4u + k;
      if (i < p.n) word |= quantize(i) << (8u * k);
    }
    q[w] = word;
  }
}
#else
layout(std430, binding = 0) readonly buffer Q { uint q[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

void main() {
  GRID_STRIDE(i, p.n) {
    uint c = channel(i);
    uint byte = (q[i / 4u] >> (8u * (i % 4u))) & 0xffu;
    int v = p.is_signed != 0u ? (int(byte << 24) >> 24) : int(byte);
    int z = p.has_zero != 0u ? zero[c] : 0;
    y[i] = float(v - z) * scale[c];
  }
}
#endif
