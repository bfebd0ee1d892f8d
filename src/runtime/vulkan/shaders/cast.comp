#version 450
// Cast between float32, int32, int64, bool, uint8 and int8 with the CPU kernel's C semantics:
// float to an integer truncates toward zero, anything to bool is x != 0, an integer to a
// narrower one keeps its low bits, an int64 to float rounds to nearest even. Words only (no
// shaderInt64): an int64 is two little-endian words, 8-bit types are packed four to a word.
// Invocation w converts elements 4w .. 4w+3.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint from, to;  // type codes, as cast_vulkan.cpp's CastType
} p;

#define T_F32 0u
#define T_I32 1u
#define T_I64 2u
#define T_BOOL 3u
#define T_U8 4u
#define T_I8 5u

// One element: a float, or an integer as (low word, high word) of its 64-bit two's complement.
struct Num {
  bool is_float;
  float f;
  uvec2 i;
};

uvec2 negate(uvec2 v) {
  const uint lo = ~v.x + 1u;
  return uvec2(lo, ~v.y + (lo == 0u ? 1u : 0u));
}

Num read(uint i) {
  Num v = Num(false, 0.0, uvec2(0u));
  if (p.from == T_F32) {
    v.is_float = true;
    v.f = uintBitsToFloat(x[i]);
  } else if (p.from == T_I32) {
    v.i = uvec2(x[i], int(x[i]) < 0 ? ~0u : 0u);
  } else if (p.from == T_I64) {
    v.i = uvec2(x[2u * i], x[2u * i + 1u]);
  } else {
    const uint b = (x[i / 4u] >> (8u * (i % 4u))) & 0xffu;
    v.i = p.from == T_I8 && b >= 128u ? uvec2(b | 0xffffff00u, ~0u) : uvec2(b, 0u);
  }
  return v;
}

// v >> s for 0 < s < 64.
uvec2 shift_right(uvec2 v, int s) {
  if (s >= 32) return uvec2(v.y >> (s - 32), 0u);
  return uvec2((v.x >> s) | (v.y << (32 - s)), v.y >> s);
}

// Whether any of the low k bits of v is set (0 < k < 64).
bool any_low_bits(uvec2 v, int k) {
  if (k >= 32) return v.x != 0u || (v.y & ((1u << (k - 32)) - 1u)) != 0u;
  return (v.x & ((1u << k) - 1u)) != 0u;
}

// The nearest float (ties to even), built from the top 24 significant bits.
float int_to_float(uvec2 v) {
  const bool neg = int(v.y) < 0;
  if (neg) v = negate(v);
  float mag;
  if (v.y == 0u && v.x < (1u << 24)) {
    mag = float(v.x);  // exact
  } else {
    int s = (v.y != 0u ? 33 + findMSB(v.y) : 1 + findMSB(v.x)) - 24;  // bits dropped, 1..40
    uint mant = shift_right(v, s).x;
    const bool at_half = ((s == 1 ? v.x : shift_right(v, s - 1).x) & 1u) != 0u;
    const bool above_half = s > 1 && any_low_bits(v, s - 1);
    if (at_half && (above_half || (mant & 1u) != 0u)) ++mant;
    if (mant == (1u << 24)) {
      mant >>= 1;
      ++s;
    }
    mag = uintBitsToFloat((uint(s + 23 + 127) << 23) | (mant & 0x7fffffu));
  }
  return neg ? -mag : mag;
}

// Truncation toward zero to 64 bits (values beyond int64 are undefined in C; here they wrap).
uvec2 float_to_int(float f) {
  const float t = trunc(f);
  if (abs(t) < 2147483648.0) {
    const int k = int(t);
    return uvec2(uint(k), k < 0 ? ~0u : 0u);
  }
  const uint b = floatBitsToUint(t);
  const int e = min(int((b >> 23) & 0xffu) - 127 - 23, 40);  // 8 .. 40
  const uint m = (b & 0x7fffffu) | 0x800000u;
  const uvec2 v = e >= 32 ? uvec2(0u, m << (e - 32)) : uvec2(m << e, m >> (32 - e));
  return t < 0.0 ? negate(v) : v;
}

uvec2 as_int(Num v) { return v.is_float ? float_to_int(v.f) : v.i; }

void main() {
  GRID_STRIDE(w, (p.n + 3u) / 4u) {
    uint packed = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      const uint i = w * 4u + k;
      if (i >= p.n) break;
      const Num v = read(i);
      if (p.to == T_F32) {
        y[i] = floatBitsToUint(v.is_float ? v.f : int_to_float(v.i));
      } else if (p.to == T_I32) {
        y[i] = as_int(v).x;
      } else if (p.to == T_I64) {
        const uvec2 r = as_int(v);
        y[2u * i] = r.x;
        y[2u * i + 1u] = r.y;
      } else {
        // !(f == 0) is true for NaN, as C's x != 0.
        const bool nonzero = v.is_float ? !(v.f == 0.0) : (v.i.x | v.i.y) != 0u;
        const uint byte = p.to == T_BOOL ? (nonzero ? 1u : 0u) : as_int(v).x & 0xffu;
        packed |= byte << (8u * k);
      }
    }
    if (p.to == T_BOOL || p.to == T_U8 || p.to == T_I8) y[w] = packed;
  }
}
