#version 450
// c = act(op(a, b)) with numpy broadcasting: a and b are read through strides (0 on a broadcast
// dim) over the output's dims, collapsed by the host to at most 6; act is a folded Relu or Clip
// (ResNet's residual Add + Relu in one pass).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint op;
  uint contiguous;  // 1: a and b have the output's shape (no index maps)
  uint dims[6];
  int sa[6];
  int sb[6];
  uint act;  // 0 none, 1 relu, 2 clip
  float act_min, act_max;
} p;

float activated(float v) {
  if (p.act == 1u) return max(v, 0.0);
  if (p.act == 2u) return min(max(v, p.act_min), p.act_max);
  return v;
}

float apply(float x, float y) {
  switch (p.op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: {  // Pow: negative bases only for integral exponents, as C's pow
      if (y == 0.0) return 1.0;
      float r = pow(abs(x), y);
      if (x < 0.0) {
        if (y != floor(y)) return uintBitsToFloat(0x7fc00000u);
        if (mod(y, 2.0) == 1.0) r = -r;
      }
      return r;
    }
    case 5: return (isnan(x) || isnan(y)) ? x + y : max(x, y);
    case 6: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
    case 7: return x < 0.0 ? x * y : x;  // PRelu
    default: return 0.0;
  }
}

void main() {
  GRID_STRIDE(i, p.n) {
    if (p.contiguous == 1u) {
      c[i] = activated(apply(a[i], b[i]));
    } else {
      int ia, ib;
      STRIDED_INDEX(ia, i, p.rank, p.dims, p.sa);
      STRIDED_INDEX(ib, i, p.rank, p.dims, p.sb);
      c[i] = activated(apply(a[ia], b[ib]));
    }
  }
}
