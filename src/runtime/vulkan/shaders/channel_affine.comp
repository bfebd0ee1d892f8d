#version 450
// y = x * scale[c] + shift[c] over [outer, C, inner] (BatchNormalization, folded at build).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) readonly buffer T { float shift[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint channels;
  uint inner;
} p;

void main() {
  GRID_STRIDE(i, p.n) {
    uint c = (i / p.inner) % p.channels;
    y[i] = x[i] * scale[c] + shift[c];
  }
}
