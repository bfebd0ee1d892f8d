#version 450
// The 2048-bin histogram of |x| over [0, T] (specs/calibrators.md) for the finite values of n
// floats, added into 2048 uint counts. Each workgroup counts in shared memory, then adds its
// non-zero bins to the global counts.
// EXACT: the bin is floor(2048 |x| / T) computed exactly in integers from the float bits, which
// equals the spec's float64 rule min(floor((double)|x| / (double)T * 2048), 2047) whenever T is
// a float (see docs/VULKAN.md for the argument). Otherwise float32 arithmetic: values within a
// few float roundings of a bin edge may land in the neighbouring bin.
#ifdef EXACT
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) buffer H { uint counts[]; };
layout(push_constant) uniform Params {
  uint n;
  uint t_bits;  // T as float bits (EXACT), T > 0
  float t;      // T as float
  uint zero_range;  // 1: T <= 0, every finite value goes to bin 0
} p;

shared uint s_hist[2048];

#ifdef EXACT
void split(uint bits, out uint m, out int e) {
  uint ex = (bits >> 23) & 0xffu;
  m = bits & 0x7fffffu;
  if (ex != 0u) {
    m |= 0x800000u;
    e = int(ex) - 150;
  } else {
    e = -149;
  }
}

uint bin_of(uint vbits) {
  if (uintBitsToFloat(vbits) >= uintBitsToFloat(p.t_bits)) return 2047u;
  uint mv, mt;
  int ev, et;
  split(vbits, mv, ev);
  split(p.t_bits, mt, et);
  if (mv == 0u) return 0u;
  int s = ev - et + 11;
  uint64_t q;
  if (s >= 0) {
    q = (uint64_t(mv) << uint64_t(s)) / uint64_t(mt);
  } else {
    if (-s >= 40) return 0u;
    q = uint64_t(mv) / (uint64_t(mt) << uint64_t(-s));
  }
  return uint(min(q, uint64_t(2047)));
}
#else
uint bin_of(uint vbits) {
  float q = uintBitsToFloat(vbits) / p.t * 2048.0;
  return q >= 2047.0 ? 2047u : uint(floor(q));
}
#endif

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint b = t; b < 2048u; b += 256u) s_hist[b] = 0u;
  barrier();
  // Bin 0 is counted in a register: after a ReLU half the values are exact zeros, and one
  // shared counter hit by every thread would serialise them.
  uint zeros = 0u;
  GRID_STRIDE(i, p.n) {
    uint bits = x[i] & 0x7fffffffu;
    if ((bits & 0x7f800000u) == 0x7f800000u) continue;
    uint b = p.zero_range != 0u ? 0u : bin_of(bits);
    if (b == 0u) zeros += 1u;
    else atomicAdd(s_hist[b], 1u);
  }
  if (zeros != 0u) atomicAdd(s_hist[0], zeros);
  barrier();
  for (uint b = t; b < 2048u; b += 256u) {
    uint v = s_hist[b];
    if (v != 0u) atomicAdd(counts[b], v);
  }
}
