#version 450
// Min-max pass statistics of n floats, accumulated into 8 uints (zero-filled beforehand):
//   [0] max of ~key(x) (so ~[0] is the ordered key of the min)   [1] max of key(x)
//   [2] count of non-finite values    [3] max of ~index of a non-finite value (~first index)
//   [4] 1 when any value is finite
// key() maps float bits to uints that order as the floats do. Non-finite values are found by
// their exponent bits, which no fast-math setting can optimise away.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) buffer R { uint r[]; };
layout(push_constant) uniform Params {
  uint n;
  uint slot;  // first uint of this tensor's 8 in r
} p;

shared uint s_min[256], s_max[256], s_bad[256], s_first[256], s_any[256];

uint key(uint bits) { return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u; }

void main() {
  uint lmin = 0u, lmax = 0u, bad = 0u, first = 0u, any_ = 0u;
  GRID_STRIDE(i, p.n) {
    uint bits = x[i];
    if ((bits & 0x7f800000u) == 0x7f800000u) {
      bad += 1u;
      first = max(first, ~i);
    } else {
      uint k = key(bits);
      lmin = max(lmin, ~k);
      lmax = max(lmax, k);
      any_ = 1u;
    }
  }
  uint t = gl_LocalInvocationID.x;
  s_min[t] = lmin; s_max[t] = lmax; s_bad[t] = bad; s_first[t] = first; s_any[t] = any_;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) {
      s_min[t] = max(s_min[t], s_min[t + s]);
      s_max[t] = max(s_max[t], s_max[t + s]);
      s_bad[t] += s_bad[t + s];
      s_first[t] = max(s_first[t], s_first[t + s]);
      s_any[t] = max(s_any[t], s_any[t + s]);
    }
    barrier();
  }
  if (t == 0u) {
    if (s_any[0] != 0u) {
      atomicMax(r[p.slot + 0u], s_min[0]);
      atomicMax(r[p.slot + 1u], s_max[0]);
      atomicMax(r[p.slot + 4u], 1u);
    }
    if (s_bad[0] != 0u) {
      atomicAdd(r[p.slot + 2u], s_bad[0]);
      atomicMax(r[p.slot + 3u], s_first[0]);
    }
  }
}
