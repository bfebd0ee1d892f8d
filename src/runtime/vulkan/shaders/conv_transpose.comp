#version 450
// 2-D transposed convolution, one thread per output element gathering the inputs that reach
// it: oh = ih * stride - pad + kh * dilation. Weights are [IC, OC/g, KH, KW].
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
  uint icg, ocg;
  uint has_bias;
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
    uint ocl = oc - g * p.ocg;
    float acc = p.has_bias != 0u ? bias[oc] : 0.0;
    for (uint kh = 0u; kh < p.KH; ++kh) {
      int th = int(oh) + p.ph - int(kh) * p.dh;
      if (th < 0 || th % p.sh != 0) continue;
      int ih = th / p.sh;
      if (ih >= int(p.H)) continue;
      for (uint kw = 0u; kw < p.KW; ++kw) {
        int tw = int(ow) + p.pw - int(kw) * p.dw;
        if (tw < 0 || tw % p.sw != 0) continue;
        int iw = tw / p.sw;
        if (iw >= int(p.W)) continue;
        for (uint c = 0u; c < p.icg; ++c) {
          uint ic = g * p.icg + c;
          acc += x[((img * p.IC + ic) * p.H + uint(ih)) * p.W + uint(iw)] *
                 w[((ic * p.ocg + ocl) * p.KH + kh) * p.KW + kw];
        }
      }
    }
    y[e] = acc;
  }
}
