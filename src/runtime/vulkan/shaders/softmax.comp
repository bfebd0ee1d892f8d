#version 450
// Softmax / LogSoftmax over the middle dim of [outer, R, inner].
//   ROWS (inner == 1): one workgroup per row.  otherwise: one thread per column.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint outer, R, inner, log_softmax;
} p;

#define NEG_INF uintBitsToFloat(0xff800000u)

#ifdef ROWS
shared float s_part[256];

float row_reduce(float v, bool is_max) {
  uint t = gl_LocalInvocationID.x;
  s_part[t] = v;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) s_part[t] = is_max ? max(s_part[t], s_part[t + s]) : s_part[t] + s_part[t + s];
    barrier();
  }
  float r = s_part[0];
  barrier();
  return r;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.outer; row += gl_NumWorkGroups.x) {
    uint base = row * p.R;
    float m = NEG_INF;
    for (uint i = t; i < p.R; i += 256u) m = max(m, x[base + i]);
    m = row_reduce(m, true);
    float s = 0.0;
    for (uint i = t; i < p.R; i += 256u) s += exp(x[base + i] - m);
    s = row_reduce(s, false);
    float ls = log(s);
    for (uint i = t; i < p.R; i += 256u) {
      float d = x[base + i] - m;
      y[base + i] = p.log_softmax != 0u ? d - ls : exp(d) / s;
    }
  }
}
#else
void main() {
  GRID_STRIDE(e, p.outer * p.inner) {
    uint o = e / p.inner, i = e % p.inner;
    uint base = o * p.R * p.inner + i;
    float m = NEG_INF;
    for (uint r = 0u; r < p.R; ++r) m = max(m, x[base + r * p.inner]);
    float s = 0.0;
    for (uint r = 0u; r < p.R; ++r) s += exp(x[base + r * p.inner] - m);
    float ls = log(s);
    for (uint r = 0u; r < p.R; ++r) {
      float d = x[base + r * p.inner] - m;
      y[base + r * p.inner] = p.log_softmax != 0u ? d - ls : exp(d) / s;
    }
  }
}
#endif
