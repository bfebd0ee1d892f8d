#version 450
// Resize of the last two dims of [outer, H, W] (nearest or bilinear), with ONNX's coordinate
// transformation modes. Neighbours outside the input take the edge value.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint in_h, in_w, out_h, out_w;
  float scale_h, scale_w;  // output / input
  uint linear;             // 0 nearest, 1 linear
  uint coord;              // 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel
  uint nearest;            // 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
} p;

float source(uint o, uint in_len, uint out_len, float scale) {
  float xo = float(o);
  if (p.coord == 0u) return (xo + 0.5) / scale - 0.5;
  if (p.coord == 1u) return xo / scale;
  if (p.coord == 2u) return out_len == 1u ? 0.0 : xo * float(in_len - 1u) / float(out_len - 1u);
  return out_len > 1u ? (xo + 0.5) / scale - 0.5 : 0.0;
}

int nearest_index(float v, uint len) {
  int i;
  if (p.nearest == 0u) i = (v == floor(v) + 0.5) ? int(floor(v)) : int(floor(v + 0.5));
  else if (p.nearest == 1u) i = int(floor(v + 0.5));
  else if (p.nearest == 2u) i = int(floor(v));
  else i = int(ceil(v));
  return clamp(i, 0, int(len) - 1);
}

void main() {
  GRID_STRIDE(e, p.n) {
    uint ox = e % p.out_w;
    uint oy = (e / p.out_w) % p.out_h;
    uint plane = e / (p.out_w * p.out_h);
    uint base = plane * p.in_h * p.in_w;
    float sy = source(oy, p.in_h, p.out_h, p.scale_h);
    float sx = source(ox, p.in_w, p.out_w, p.scale_w);
    if (p.linear == 0u) {
      y[e] = x[base + uint(nearest_index(sy, p.in_h)) * p.in_w + uint(nearest_index(sx, p.in_w))];
    } else {
      sy = clamp(sy, 0.0, float(p.in_h - 1u));
      sx = clamp(sx, 0.0, float(p.in_w - 1u));
      int y0 = int(floor(sy)), x0 = int(floor(sx));
      int y1 = min(y0 + 1, int(p.in_h) - 1), x1 = min(x0 + 1, int(p.in_w) - 1);
      float fy = sy - float(y0), fx = sx - float(x0);
      float a = x[base + uint(y0) * p.in_w + uint(x0)], b = x[base + uint(y0) * p.in_w + uint(x1)];
      float c = x[base + uint(y1) * p.in_w + uint(x0)], d = x[base + uint(y1) * p.in_w + uint(x1)];
      y[e] = (a * (1.0 - fx) + b * fx) * (1.0 - fy) + (c * (1.0 - fx) + d * fx) * fy;
    }
  }
}
