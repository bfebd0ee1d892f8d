// Fast float32 convolutions: direct depthwise, 1x1 as GEMM, im2col + GEMM otherwise. Work is
// cut into tasks whose sizes depend on the shape only, so results do not depend on threads.
#include <algorithm>
#include <vector>

#include "conv.h"
#include "gemm_kernel.h"

namespace ptq::runtime::cpu {

namespace {

// 2-D geometry (1-D convs get H = 1).
struct Geo {
  int64_t N, C, H, W, M, G, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW;
};

Geo to_geo(const ConvParams& p) {
  const bool one = p.in.size() == 1;
  auto at = [&](const std::vector<int64_t>& v, size_t i2, int64_t d1) {
    return one ? (i2 == 0 ? d1 : v[0]) : v[i2];
  };
  const Window& w = p.w;
  Geo g{};
  g.N = p.N, g.C = p.C, g.M = p.M, g.G = p.G;
  g.H = at(p.in, 0, 1), g.W = at(p.in, 1, 1);
  g.OH = at(p.out, 0, 1), g.OW = at(p.out, 1, 1);
  g.KH = at(w.kernel, 0, 1), g.KW = at(w.kernel, 1, 1);
  g.SH = at(w.strides, 0, 1), g.SW = at(w.strides, 1, 1);
  g.DH = at(w.dilations, 0, 1), g.DW = at(w.dilations, 1, 1);
  g.PT = one ? 0 : w.pad_begin(0);
  g.PL = one ? w.pad_begin(0) : w.pad_begin(1);
  return g;
}

void clamp_row(float* y, int64_t n, float bias, Clamp c) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i] + bias, c.lo), c.hi);
}

// Valid output range [lo, hi) for which o * s - p + k * d lies in [0, size).
void valid_range(int64_t out, int64_t s, int64_t p, int64_t kd, int64_t size, int64_t& lo,
                 int64_t& hi) {
  const int64_t first = p - kd;  // need o * s >= first
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  const int64_t last = size - 1 + p - kd;  // need o * s <= last
  hi = last < 0 ? 0 : std::min(out, last / s + 1);
  lo = std::min(lo, hi);
}

// Per-thread scratch that grows and is kept: a fresh vector per call would zero-fill and
// page-fault a quarter megabyte for every conv.
float* scratch(size_t n) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

constexpr int64_t kLanes = 16;  // outputs of a row accumulated together (one AVX-512 register)
constexpr int64_t kRows = 4;    // output rows accumulated together (independent FMA chains)

// Depthwise (one input channel per group). Each plane is first copied into a zero-padded
// buffer split into SW column phases (phase q holds padded columns q, q + SW, …), so every tap
// reads a contiguous run; outputs are then accumulated in kRows x kLanes blocks in registers,
// taps in (kh, kw) order, then bias and clamp.
void depthwise(const Geo& g, const float* x, const float* w, const float* b, float* y, Clamp c,
               int threads) {
  const int64_t mult = g.M / g.G;
  const int64_t owv = (g.OW + kLanes - 1) / kLanes * kLanes;
  const int64_t wq = owv + (g.KW - 1) * g.DW / g.SW + 1;  // columns per phase row
  const int64_t ohr = (g.OH + kRows - 1) / kRows * kRows;  // output rows computed
  const int64_t hq = (ohr - 1) * g.SH + (g.KH - 1) * g.DH + 1;  // padded rows read
  std::vector<int64_t> tap_at(static_cast<size_t>(g.KW));  // offset of tap kw in the buffer
  for (int64_t kw = 0; kw < g.KW; ++kw) {
    tap_at[kw] = (kw * g.DW % g.SW) * hq * wq + kw * g.DW / g.SW;
  }
  parallel_for(threads, g.N * g.M, [&](int64_t begin, int64_t end) {
    float* pad = scratch(static_cast<size_t>(g.SW * hq * wq));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / g.M, m = t % g.M, ci = m / mult;
      const float* xp = x + (n * g.C + ci) * g.H * g.W;
      for (int64_t q = 0; q < g.SW; ++q) {
        int64_t lo = 0, hi = 0;  // phase columns j with input column j * SW + q - PL inside
        valid_range(wq, g.SW, g.PL, q, g.W, lo, hi);
        for (int64_t r = 0; r < hq; ++r) {
          float* dst = pad + (q * hq + r) * wq;
          const int64_t ih = r - g.PT;
          if (ih < 0 || ih >= g.H) {
            std::fill(dst, dst + wq, 0.0f);
            continue;
          }
          const float* xr = xp + ih * g.W;
          std::fill(dst, dst + lo, 0.0f);
          for (int64_t j = lo; j < hi; ++j) dst[j] = xr[j * g.SW + q - g.PL];
          std::fill(dst + hi, dst + wq, 0.0f);
        }
      }
      const float* wp = w + m * g.KH * g.KW;
      const float bias = b != nullptr ? b[m] : 0.0f;
      float* yp = y + (n * g.M + m) * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; oh += kRows) {
        for (int64_t ow0 = 0; ow0 < g.OW; ow0 += kLanes) {
          float acc[kRows][kLanes] = {};
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            const float* row = pad + (oh * g.SH + kh * g.DH) * wq + ow0;
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const float* src = row + tap_at[kw];
              const float wv = wp[kh * g.KW + kw];
              for (int64_t rr = 0; rr < kRows; ++rr) {
                for (int64_t i = 0; i < kLanes; ++i) acc[rr][i] += wv * src[rr * g.SH * wq + i];
              }
            }
          }
          const int64_t lanes = std::min(kLanes, g.OW - ow0), rows = std::min(kRows, g.OH - oh);
          for (int64_t rr = 0; rr < rows; ++rr) {
            for (int64_t i = 0; i < lanes; ++i) {
              yp[(oh + rr) * g.OW + ow0 + i] = std::min(std::max(acc[rr][i] + bias, c.lo), c.hi);
            }
          }
        }
      }
    }
  });
}

// Columns [c0, c0 + t) of the im2col matrix of one group: rows (ci, kh, kw), ld = t. Each
// output row segment splits into padding (zeros) and a valid run copied in one go.
void im2col(const Geo& g, const float* xg, int64_t cg, int64_t c0, int64_t t, float* col) {
  for (int64_t kw = 0; kw < g.KW; ++kw) {
    int64_t lo = 0, hi = 0;  // output columns whose input column is inside the image
    valid_range(g.OW, g.SW, g.PL, kw * g.DW, g.W, lo, hi);
    const int64_t base = kw * g.DW - g.PL;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* xc = xg + ci * g.H * g.W;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        float* row = col + ((ci * g.KH + kh) * g.KW + kw) * t;
        int64_t j = 0, oh = c0 / g.OW, ow = c0 % g.OW;
        while (j < t) {
          const int64_t run = std::min(t - j, g.OW - ow);
          const int64_t ih = oh * g.SH - g.PT + kh * g.DH;
          float* seg = row + j;  // seg[q - ow] for output column q in [ow, ow + run)
          if (ih < 0 || ih >= g.H) {
            std::fill(seg, seg + run, 0.0f);
          } else {
            const float* xr = xc + ih * g.W;
            const int64_t a = std::clamp(lo, ow, ow + run), b = std::clamp(hi, a, ow + run);
            std::fill(seg, seg + (a - ow), 0.0f);
            if (g.SW == 1) {
              std::copy(xr + a + base, xr + b + base, seg + (a - ow));
            } else {
              for (int64_t q = a; q < b; ++q) seg[q - ow] = xr[q * g.SW + base];
            }
            std::fill(seg + (b - ow), seg + run, 0.0f);
          }
          j += run;
          ow = 0;
          ++oh;
        }
      }
    }
  }
}

// Per-call buffer shared by all threads (owned by the calling thread, kept between calls).
float* shared_scratch(size_t n) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Y tile (rows x t at yt, row stride hw) = W rows x K * columns (ldb), then bias and clamp.
void gemm_tile(const float* w, int64_t rows, int64_t t, int64_t k, const float* cols, int64_t ldb,
               float* yt, int64_t hw, const float* bias, Clamp c) {
  sgemm_block(false, false, rows, t, k, w, k, cols, ldb, yt, hw);
  for (int64_t r = 0; r < rows; ++r) clamp_row(yt + r * hw, t, bias != nullptr ? bias[r] : 0.0f, c);
}

// Work is cut into "units" (image, group, column tile) and, when there are fewer than 4 units,
// each unit's output channels into up to 4 row tiles that share one im2col buffer. Tile sizes
// follow from the shape alone.
void gemm_conv(const Geo& g, const float* x, const float* w, const float* b, float* y, Clamp c,
               int threads) {
  const int64_t cg = g.C / g.G, mg = g.M / g.G, hw = g.OH * g.OW;
  const int64_t k = cg * g.KH * g.KW;
  const bool pointwise = g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 &&
                         g.PL == 0 && g.OH == g.H && g.OW == g.W;
  // Column tile: an im2col tile of about 512 KiB; a multiple of 16 for the GEMM kernel.
  int64_t tn = std::clamp<int64_t>(131072 / std::max<int64_t>(k, 1) / 16 * 16, 64, 2048);
  if (tn >= hw) tn = hw;
  const int64_t ctiles = (hw + tn - 1) / tn;
  const int64_t units = g.N * g.G * ctiles;
  auto unit_at = [&](int64_t u, int64_t& n, int64_t& grp, int64_t& c0, int64_t& t) {
    const int64_t ng = u / ctiles;
    n = ng / g.G, grp = ng % g.G, c0 = (u % ctiles) * tn, t = std::min(tn, hw - c0);
  };
  int64_t parts = 1;
  if (units < 4 && mg >= 128) parts = std::min<int64_t>((4 + units - 1) / units, mg / 64);
  if (parts == 1) {
    parallel_for(threads, units, [&](int64_t begin, int64_t end) {
      float* col = pointwise ? nullptr : scratch(static_cast<size_t>(k * tn));
      for (int64_t u = begin; u < end; ++u) {
        int64_t n = 0, grp = 0, c0 = 0, t = 0;
        unit_at(u, n, grp, c0, t);
        const float* xg = x + (n * g.C + grp * cg) * g.H * g.W;
        if (!pointwise) im2col(g, xg, cg, c0, t, col);
        gemm_tile(w + grp * mg * k, mg, t, k, pointwise ? xg + c0 : col, pointwise ? hw : t,
                  y + (n * g.M + grp * mg) * hw + c0, hw, b != nullptr ? b + grp * mg : nullptr, c);
      }
    });
    return;
  }
  const int64_t tm = ((mg + parts - 1) / parts + 15) / 16 * 16;
  const int64_t mtiles = (mg + tm - 1) / tm;
  float* cols = pointwise ? nullptr : shared_scratch(static_cast<size_t>(units * k * tn));
  if (!pointwise) {
    parallel_for(threads, units, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        int64_t n = 0, grp = 0, c0 = 0, t = 0;
        unit_at(u, n, grp, c0, t);
        im2col(g, x + (n * g.C + grp * cg) * g.H * g.W, cg, c0, t, cols + u * k * tn);
      }
    });
  }
  parallel_for(threads, units * mtiles, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t u = task / mtiles, m0 = (task % mtiles) * tm, rows = std::min(tm, mg - m0);
      int64_t n = 0, grp = 0, c0 = 0, t = 0;
      unit_at(u, n, grp, c0, t);
      const float* xg = x + (n * g.C + grp * cg) * g.H * g.W;
      gemm_tile(w + (grp * mg + m0) * k, rows, t, k, pointwise ? xg + c0 : cols + u * k * tn,
                pointwise ? hw : t, y + (n * g.M + grp * mg + m0) * hw + c0, hw,
                b != nullptr ? b + grp * mg + m0 : nullptr, c);
    }
  });
}

}  // namespace

bool conv_fast(const ConvParams& p, const float* x, const float* w, const float* b, float* y,
               Clamp clamp, int threads) {
  if (p.in.size() != 1 && p.in.size() != 2) return false;
  const Geo g = to_geo(p);
  if (g.C / g.G == 1) {
    depthwise(g, x, w, b, y, clamp, threads);
  } else {
    gemm_conv(g, x, w, b, y, clamp, threads);
  }
  return true;
}

}  // namespace ptq::runtime::cpu
