#version 450
// The second half of a split-K convolution (gemm.comp with SPLIT_K): adds each output's
// partial sums in split order, then the bias and the activation, and stores it in NCHW.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Part { float part[]; };  // [split][group][M][N]
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) writeonly buffer Out { float o[]; };
layout(push_constant) uniform Params {
  uint total;               // groups * M * N: one split's partial sums
  uint M, N, P;             // output channels per group, batch * pixels, pixels per image
  uint splits;
  uint out_img, out_group;  // output elements per image, per group
  uint has_bias, act;       // act: 0 none, 1 relu, 2 clip
  float act_min, act_max;
} p;

void main() {
  GRID_STRIDE(i, p.total) {
    float v = part[i];
    for (uint s = 1u; s < p.splits; ++s) v += part[s * p.total + i];
    const uint gm = i / p.N, n = i - gm * p.N;  // gm = group * M + m: the bias index too
    if (p.has_bias != 0u) v += bias[gm];
    if (p.act == 1u) v = max(v, 0.0);
    else if (p.act == 2u) v = min(max(v, p.act_min), p.act_max);
    const uint g = gm / p.M, m = gm - g * p.M, img = n / p.P;
    o[img * p.out_img + g * p.out_group + m * p.P + (n - img * p.P)] = v;
  }
}
