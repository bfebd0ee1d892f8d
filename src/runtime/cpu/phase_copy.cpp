// The padded phase copy of a conv's input (phase_copy.h).
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "phase_copy.h"

#include <algorithm>

#include "plane_copy.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// Indices j < n with first <= j * s < first + size (first may be negative): [lo, hi).
void inside(int64_t first, int64_t s, int64_t size, int64_t n, int64_t& lo, int64_t& hi) {
  lo = first >= 0 ? 0 : (-first + s - 1) / s;
  const int64_t last = size - 1 - first;  // need j * s <= last
  hi = last < 0 ? 0 : std::min(n, last / s + 1);
  lo = std::min(lo, hi);
}

}  // namespace

Shifted shifted_geometry(const ConvParams& p) {
  Shifted g{};
  g.C = p.C, g.H = p.in[0], g.W = p.in[1], g.M = p.M;
  g.KH = p.w.kernel[0], g.KW = p.w.kernel[1], g.SH = p.w.strides[0], g.SW = p.w.strides[1];
  g.DH = p.w.dilations[0], g.DW = p.w.dilations[1];
  g.PT = p.w.pad_begin(0), g.PL = p.w.pad_begin(1), g.OH = p.out[0], g.OW = p.out[1];
  g.Hq = g.OH + (g.KH - 1) * g.DH / g.SH, g.Wq = g.OW + (g.KW - 1) * g.DW / g.SW;
  g.P = g.OH * g.Wq;
  return g;
}

Layout image_layout(const Shifted& g) { return {g.SH * g.SW * g.Hq * g.Wq, g.Hq * g.Wq, g.Wq, 1}; }

// Where row q = (ci, kh, kw) of the im2col matrix starts in a padded copy.
std::vector<int64_t> tap_offsets(const Shifted& g, const Layout& l) {
  std::vector<int64_t> boff(static_cast<size_t>(g.C * g.KH * g.KW));
  for (int64_t ci = 0, q = 0; ci < g.C; ++ci) {
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t r = kh * g.DH;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t c = kw * g.DW;
        boff[static_cast<size_t>(q++)] = l.at(ci, r % g.SH * g.SW + c % g.SW, r / g.SH, c / g.SW);
      }
    }
  }
  return boff;
}

// Channels [c0, c1) of one image into their zero-padded phases (Hq x Wq each).
void pad_planes(const Shifted& g, const float* x, int64_t c0, int64_t c1, float* xp) {
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t a = 0; a < g.SH; ++a) {
      for (int64_t b = 0; b < g.SW; ++b) {
        int64_t lo = 0, hi = 0;  // phase columns inside the image
        inside(b - g.PL, g.SW, g.W, g.Wq, lo, hi);
        float* phase = xp + ((c * g.SH + a) * g.SW + b) * g.Hq * g.Wq;
        for (int64_t i = 0; i < g.Hq; ++i) {
          float* d = phase + i * g.Wq;
          const int64_t ih = i * g.SH + a - g.PT;
          if (ih < 0 || ih >= g.H) {
            zero_floats(d, g.Wq);
            continue;
          }
          const float* row = x + (c * g.H + ih) * g.W;
          const int64_t at = b - g.PL;  // input column of phase column 0
          zero_floats(d, lo);
          copy_strided(row + lo * g.SW + at, g.SW, hi - lo, d + lo);
          zero_floats(d + hi, g.Wq - hi);
        }
      }
    }
  }
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
