#version 450
// Direct 2-D convolution, one thread per output element: for depthwise and other grouped
// convolutions whose per-group GEMM would be too small to tile.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint OC, OH, OW, IC, H, W, KH, KW;
  int sh, sw, ph, pw, dh, dw;
  uint icg, ocg;  // channels per group
  uint has_bias, act;
  float act_min, act_max;
} p;

void main() {
  GRID_STRIDE(e, p.n) {
    uint ow = e % p.OW;
    uint t = e / p.OW;
    uint oh = t % p.OH;
    t /= p.OH;
    uint oc = t % p.OC;
    uint img = t / p.OC;
    uint g = oc / p.ocg;
    int ih0 = int(oh) * p.sh - p.ph, iw0 = int(ow) * p.sw - p.pw;
    float acc = p.has_bias != 0u ? bias[oc] : 0.0;
    for (uint c = 0u; c < p.icg; ++c) {
      uint xc = (img * p.IC + g * p.icg + c) * p.H * p.W;
      uint wc = (oc * p.icg + c) * p.KH * p.KW;
      for (uint kh = 0u; kh < p.KH; ++kh) {
        int ih = ih0 + int(kh) * p.dh;
        if (ih < 0 || ih >= int(p.H)) continue;
        for (uint kw = 0u; kw < p.KW; ++kw) {
          int iw = iw0 + int(kw) * p.dw;
          if (iw < 0 || iw >= int(p.W)) continue;
          acc += x[xc + uint(ih) * p.W + uint(iw)] * w[wc + kh * p.KW + kw];
        }
      }
    }
    if (p.act == 1u) acc = max(acc, 0.0);
    else if (p.act == 2u) acc = min(max(acc, p.act_min), p.act_max);
    y[e] = acc;
  }
}
