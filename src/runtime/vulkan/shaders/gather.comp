#version 450
// Gather along an axis: data viewed as [outer, axis_len, inner], K indices; out[o, j, i] =
// data[o, idx[j], i]. Elements are `words` 32-bit words; indices int32 or int64 (low word).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint axis_len;
  uint inner;
  uint k;
  uint words;
  uint index_words;
} p;

void main() {
  GRID_STRIDE(e, p.n) {
    uint i = e % p.inner;
    uint t = e / p.inner;
    uint j = t % p.k;
    uint o = t / p.k;
    int v = idx[j * p.index_words];
    if (v < 0) v += int(p.axis_len);
    v = clamp(v, 0, int(p.axis_len) - 1);
    uint src = ((o * p.axis_len + uint(v)) * p.inner + i) * p.words;
    for (uint w = 0u; w < p.words; ++w) y[e * p.words + w] = x[src + w];
  }
}
