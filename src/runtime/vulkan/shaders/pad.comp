#version 450
// Pad (constant, reflect, edge, wrap) of 32-bit elements over up to 6 dims.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint mode;   // 0 constant, 1 reflect, 2 edge, 3 wrap
  uint value;  // constant's bits
  uint out_dims[6];
  uint in_dims[6];
  int begin[6];
} p;

void main() {
  GRID_STRIDE(e, p.n) {
    uint rem = e;
    int src = 0;
    int stride = 1;
    bool outside = false;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      uint q = rem / p.out_dims[d];
      int c = int(rem - q * p.out_dims[d]) - p.begin[d];
      rem = q;
      int len = int(p.in_dims[d]);
      if (c < 0 || c >= len) {
        if (p.mode == 0u) {
          outside = true;
        } else if (p.mode == 1u) {
          int period = 2 * (len - 1);
          if (period == 0) {
            c = 0;
          } else {
            c = c % period;
            if (c < 0) c += period;
            if (c >= len) c = period - c;
          }
        } else if (p.mode == 2u) {
          c = clamp(c, 0, len - 1);
        } else {
          c = c % len;
          if (c < 0) c += len;
        }
      }
      src += c * stride;
      stride *= len;
    }
    y[e] = outside ? p.value : x[src];
  }
}
