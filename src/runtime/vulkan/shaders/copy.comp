#version 450
// Strided copy of n elements of `words` 32-bit words each: element i (row-major over dims)
// goes from src[src_off + sum idx*ss] to dst[dst_off + sum idx*ds]. Transpose, Slice (negative
// strides for negative steps), Concat/Split pieces and Expand (zero strides) are all this.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer S { uint s[]; };
layout(std430, binding = 1) writeonly buffer D { uint d[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  int src_off;
  int dst_off;
  uint words;
  uint dims[6];
  int ss[6];
  int ds[6];
} p;

void main() {
  GRID_STRIDE(i, p.n) {
    int si, di;
    STRIDED_INDEX(si, i, p.rank, p.dims, p.ss);
    STRIDED_INDEX(di, i, p.rank, p.dims, p.ds);
    si = (si + p.src_off) * int(p.words);
    di = (di + p.dst_off) * int(p.words);
    for (uint w = 0u; w < p.words; ++w) d[di + int(w)] = s[si + int(w)];
  }
}
