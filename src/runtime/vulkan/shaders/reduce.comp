#version 450
// Reductions over the middle dim of [outer, R, inner].
//   ROWS (inner == 1): one workgroup per row, threads stride over R, tree in shared memory.
//   otherwise: one thread per (outer, inner) column walking R.
// op: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 sum of squares, 6 L1, 7 L2, 8 log-sum,
//     9 log-sum-exp
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint outer, R, inner, op;
} p;

#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)

float init_value() {
  if (p.op == 2u || p.op == 9u) return NEG_INF;
  if (p.op == 3u) return POS_INF;
  if (p.op == 4u) return 1.0;
  return 0.0;
}

float combine(float a, float b) {
  if (p.op == 2u || p.op == 9u) return (isnan(a) || isnan(b)) ? a + b : max(a, b);
  if (p.op == 3u) return (isnan(a) || isnan(b)) ? a + b : min(a, b);
  if (p.op == 4u) return a * b;
  return a + b;
}

float lift(float v, float m) {
  if (p.op == 5u || p.op == 7u) return v * v;
  if (p.op == 6u) return abs(v);
  if (p.op == 9u) return exp(v - m);
  return v;
}

float finish(float s, float m) {
  if (p.op == 1u) return s / float(p.R);
  if (p.op == 7u) return sqrt(s);
  if (p.op == 8u) return log(s);
  if (p.op == 9u) return m + log(s);
  return s;
}

#ifdef ROWS
shared float s_part[256];

float row_reduce(float v, bool sum) {
  uint t = gl_LocalInvocationID.x;
  s_part[t] = v;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) s_part[t] = sum ? s_part[t] + s_part[t + s] : combine(s_part[t], s_part[t + s]);
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
    float m = 0.0;
    if (p.op == 9u) {  // log-sum-exp: the max first, for stability
      float lm = NEG_INF;
      for (uint i = t; i < p.R; i += 256u) lm = combine(lm, x[base + i]);
      m = row_reduce(lm, false);
    }
    bool additive = p.op != 2u && p.op != 3u && p.op != 4u;
    float acc = additive ? 0.0 : init_value();
    for (uint i = t; i < p.R; i += 256u) {
      float v = lift(x[base + i], m);
      acc = additive ? acc + v : combine(acc, v);
    }
    float r = row_reduce(acc, additive);
    if (t == 0u) y[row] = finish(r, m);
  }
}
#else
void main() {
  GRID_STRIDE(e, p.outer * p.inner) {
    uint o = e / p.inner, i = e % p.inner;
    uint base = o * p.R * p.inner + i;
    float m = 0.0;
    if (p.op == 9u) {
      m = NEG_INF;
      for (uint r = 0u; r < p.R; ++r) m = combine(m, x[base + r * p.inner]);
    }
    bool additive = p.op != 2u && p.op != 3u && p.op != 4u;
    float acc = additive ? 0.0 : init_value();
    for (uint r = 0u; r < p.R; ++r) {
      float v = lift(x[base + r * p.inner], m);
      acc = additive ? acc + v : combine(acc, v);
    }
    y[e] = finish(acc, m);
  }
}
#endif
