#version 450
// MaxPool / AveragePool over the last two dims of [planes, H, W], one thread per output.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint H, W, OH, OW, KH, KW;
  int sh, sw, ph, pw, dh, dw;
  int pad_h_end, pad_w_end;
  uint mode;  // 0 max, 1 average counting pads, 2 average over real elements
} p;

void main() {
  GRID_STRIDE(e, p.n) {
    uint ow = e % p.OW;
    uint t = e / p.OW;
    uint oh = t % p.OH;
    uint plane = t / p.OH;
    uint base = plane * p.H * p.W;
    int ih0 = int(oh) * p.sh - p.ph, iw0 = int(ow) * p.sw - p.pw;
    float acc = p.mode == 0u ? uintBitsToFloat(0xff800000u) : 0.0;
    uint real = 0u, padded = 0u;
    for (uint kh = 0u; kh < p.KH; ++kh) {
      int ih = ih0 + int(kh) * p.dh;
      bool in_pad_h = ih >= -p.ph && ih < int(p.H) + p.pad_h_end;
      for (uint kw = 0u; kw < p.KW; ++kw) {
        int iw = iw0 + int(kw) * p.dw;
        if (in_pad_h && iw >= -p.pw && iw < int(p.W) + p.pad_w_end) padded += 1u;
        if (ih < 0 || ih >= int(p.H) || iw < 0 || iw >= int(p.W)) continue;
        float v = x[base + uint(ih) * p.W + uint(iw)];
        real += 1u;
        if (p.mode == 0u) acc = (isnan(v) || v > acc) ? v : acc;
        else acc += v;
      }
    }
    if (p.mode == 1u) acc /= float(max(padded, 1u));
    else if (p.mode == 2u) acc /= float(max(real, 1u));
    y[e] = acc;
  }
}
