// Fast float32 convolutions (the algorithm from choose_conv, conv_choice.cpp): depthwise 3x3
// read in place (depthwise3x3.cpp) or a direct depthwise on padded planes; otherwise the GEMM
// on shifted rows of a padded input (conv_shifted.cpp) or, for 1x1, grouped and narrow convs,
// a GEMM of the packed weights with the input (1x1) or its im2col columns, both packed for the
// micro-kernel (gemm_packed.h). Work is cut into tasks whose sizes depend on the shape only,
// so results do not depend on threads.

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <vector>

#include "conv.h"
#include "gemm_packed.h"
#include "kernel_util.h"
#include "plane_copy.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

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
  return grown(buffer, n);
}

constexpr int64_t kLanes = 16;  // outputs of a row accumulated together (one AVX-512 register)
constexpr int64_t kRows = 4;    // output rows accumulated together (independent FMA chains)

// One block of depthwise outputs: rows x lanes (at most kRows x kLanes) at y (row stride OW)
// from the padded phase buffer at `pad` (the block's first row and column). Taps in (kh, kw)
// order, then bias, the residual block `res` (laid out as y, or null) and the activation.
#if PTQ_AVX512
void depthwise_block(const Geo& g, const float* pad, int64_t wq, const int64_t* tap_at,
                     const float* wp, float bias, const ConvEpilogue& e, const float* res,
                     int64_t lanes, int64_t rows, float* y) {
  static_assert(kLanes == 16 && kRows == 4);
  __m512 acc[kRows];
  for (int64_t r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t step = g.SH * wq;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const float* row = pad + kh * g.DH * wq;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const float* src = row + tap_at[kw];
      const __m512 wv = _mm512_set1_ps(wp[kh * g.KW + kw]);
      for (int64_t r = 0; r < kRows; ++r) {
        acc[r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + r * step), acc[r]);
      }
    }
  }
  const __mmask16 m = lane_mask(lanes);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int64_t r = 0; r < rows; ++r) {
    finish_vector(acc[r], m, &bias, res != nullptr ? res + r * g.OW : nullptr, e.act, lo, hi,
                  y + r * g.OW);
  }
}
#else
void depthwise_block(const Geo& g, const float* pad, int64_t wq, const int64_t* tap_at,
                     const float* wp, float bias, const ConvEpilogue& e, const float* res,
                     int64_t lanes, int64_t rows, float* y) {
  float acc[kRows][kLanes] = {};
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const float* row = pad + kh * g.DH * wq;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const float* src = row + tap_at[kw];
      const float wv = wp[kh * g.KW + kw];
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t i = 0; i < kLanes; ++i) acc[r][i] += wv * src[r * g.SH * wq + i];
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < lanes; ++i) {
      float v = acc[r][i] + bias;
      if (res != nullptr) v += res[r * g.OW + i];
      y[r * g.OW + i] = activate(v, e.act, e.lo, e.hi);
    }
  }
}
#endif

// Depthwise (one input channel per group). Each plane is first copied into a zero-padded
// buffer split into SW column phases (phase q holds padded columns q, q + SW, …), so every tap
// reads a contiguous run; outputs are then accumulated in kRows x kLanes blocks in registers,
// taps in (kh, kw) order, then the bias and the epilogue.
void depthwise(const Geo& g, const float* x, const float* w, const float* b, float* y,
               const ConvEpilogue& e, int threads) {
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
            zero_floats(dst, wq);
            continue;
          }
          const float* xr = xp + ih * g.W;
          zero_floats(dst, lo);
          copy_strided(xr + lo * g.SW + q - g.PL, g.SW, hi - lo, dst + lo);
          zero_floats(dst + hi, wq - hi);
        }
      }
      const float* wp = w + m * g.KH * g.KW;
      const float bias = b != nullptr ? b[m] : 0.0f;
      const int64_t plane = (n * g.M + m) * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; oh += kRows) {
        for (int64_t ow0 = 0; ow0 < g.OW; ow0 += kLanes) {
          const int64_t lanes = std::min(kLanes, g.OW - ow0), rows = std::min(kRows, g.OH - oh);
          const int64_t at = plane + oh * g.OW + ow0;
          depthwise_block(g, pad + oh * g.SH * wq + ow0, wq, tap_at.data(), wp, bias, e,
                          e.residual != nullptr ? e.residual + at : nullptr, lanes, rows, y + at);
        }
      }
    }
  });
}

// Copies n <= kGemmNR floats (src[0], src[step], …, or zeros when src is null) to d. The runs
// are short (an output row clipped to a panel), so masked vector moves beat memcpy/memset calls.
void put_piece(float* d, int64_t n, const float* src, int64_t step) {
#if PTQ_AVX512
  if (step <= 1) {
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = lane_mask(n - i);
      const __m512 v = src == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, src + i);
      _mm512_mask_storeu_ps(d + i, m, v);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) d[i] = src == nullptr ? 0.0f : src[i * step];
}

// Writes `len` values into row k of a packed B tile (panels of kGemmNR columns, `rows` rows
// each; see pack_b) from column j on: src[0], src[step], … or zeros when src is null.
void put_run(float* col, int64_t rows, int64_t k, int64_t j, int64_t len, const float* src,
             int64_t step) {
  while (len > 0) {
    const int64_t off = j % kGemmNR, n = std::min(len, kGemmNR - off);
    put_piece(col + (j / kGemmNR) * rows * kGemmNR + k * kGemmNR + off, n, src, step);
    if (src != nullptr) src += n * step;
    j += n;
    len -= n;
  }
}

// Columns [c0, c0 + t) of the im2col matrix of one group (rows (ci, kh, kw)), written straight
// into the packed-B layout the GEMM micro-kernel reads, so the columns are copied once. Each
// output row segment splits into padding (zeros) and a valid run.
void im2col(const Geo& g, const float* xg, int64_t cg, int64_t c0, int64_t t, float* col) {
  const int64_t rows = cg * g.KH * g.KW;
  const int64_t tail = (t + kGemmNR - 1) / kGemmNR * kGemmNR - t;
  for (int64_t kw = 0; kw < g.KW; ++kw) {
    int64_t lo = 0, hi = 0;  // output columns whose input column is inside the image
    valid_range(g.OW, g.SW, g.PL, kw * g.DW, g.W, lo, hi);
    const int64_t base = kw * g.DW - g.PL;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* xc = xg + ci * g.H * g.W;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        const int64_t k = (ci * g.KH + kh) * g.KW + kw;
        int64_t j = 0, oh = c0 / g.OW, ow = c0 % g.OW;
        while (j < t) {
          const int64_t run = std::min(t - j, g.OW - ow);
          const int64_t ih = oh * g.SH - g.PT + kh * g.DH;
          if (ih < 0 || ih >= g.H) {
            put_run(col, rows, k, j, run, nullptr, 0);
          } else {
            const float* xr = xc + ih * g.W;
            const int64_t a = std::clamp(lo, ow, ow + run), b = std::clamp(hi, a, ow + run);
            put_run(col, rows, k, j, a - ow, nullptr, 0);
            put_run(col, rows, k, j + (a - ow), b - a, xr + a * g.SW + base, g.SW);
            put_run(col, rows, k, j + (b - ow), ow + run - b, nullptr, 0);
          }
          j += run;
          ow = 0;
          ++oh;
        }
        put_run(col, rows, k, t, tail, nullptr, 0);
      }
    }
  }
}

#if PTQ_AVX512
// 16 consecutive im2col columns ("a half" of a 32-column panel) and, for column stride 1 or 2,
// the output rows they span: lanes [lane0[s], lane0[s + 1]) lie in output row oh[s] and read
// input columns that follow each other (stride 1: one masked load per row fills them) or every
// other one (stride 2: two masked loads and a permute; a 7x7/2 RGB stem otherwise gathers).
constexpr int64_t kMaxRowStride = 2;  // wider column strides gather

struct Half {
  __m512i top, left;  // input row / column of tap (0, 0) for each lane
  __mmask16 live;     // lanes inside the tile
  int segments = 0;   // 0: gather (strided, or too many rows)
  int64_t oh[3], col0[3];
  int lane0[4];
};

Half make_half(const Geo& g, int64_t c0, int64_t t, int64_t j0) {
  Half hf;
  alignas(64) int32_t ih[16], iw[16];
  for (int l = 0; l < 16; ++l) {
    const int64_t j = std::min(c0 + j0 + l, c0 + t - 1);
    ih[l] = static_cast<int32_t>(j / g.OW * g.SH - g.PT);
    iw[l] = static_cast<int32_t>(j % g.OW * g.SW - g.PL);
  }
  hf.top = _mm512_load_si512(ih);
  hf.left = _mm512_load_si512(iw);
  const int lanes = static_cast<int>(std::clamp<int64_t>(t - j0, 0, 16));
  hf.live = lane_mask(lanes);
  if (g.SW > kMaxRowStride || lanes == 0) return hf;
  int n = 0;
  for (int l = 0; l < lanes; ++l) {
    const int64_t j = c0 + j0 + l;
    if (l > 0 && j / g.OW == hf.oh[n - 1]) continue;
    if (n == 3) {
      hf.segments = 0;
      return hf;
    }
    hf.oh[n] = j / g.OW;
    hf.col0[n] = (j % g.OW - l) * g.SW - g.PL;  // input column of lane 0 if the row continued
    hf.lane0[n++] = l;
  }
  hf.lane0[n] = 16;
  hf.segments = n;
  return hf;
}

// Lanes `m` of v set to p[0], p[2], …, p[30]: the two vectors' worth of floats that hold them
// are loaded with only the wanted floats enabled (no read outside the row), evens picked.
__m512 load_every_other(__m512 v, __mmask16 m, const float* p) {
#if PTQ_BMI2
  const uint32_t wide = _pdep_u32(m, 0x55555555u);  // bit 2l set for lane l
#else
  uint32_t wide = 0;
  for (uint32_t bits = m; bits != 0; bits &= bits - 1) wide |= 1u << (2 * __builtin_ctz(bits));
#endif
  const __m512 lo = _mm512_maskz_loadu_ps(__mmask16(wide & 0xffff), p);
  const __m512 hi = _mm512_maskz_loadu_ps(__mmask16(wide >> 16), p + 16);
  const __m512i evens =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_mask_mov_ps(v, m, _mm512_permutex2var_ps(lo, evens, hi));
}

// One row (tap dy, dx) of one half: masked row loads, or a gather.
__m512 load_half(const Geo& g, const Half& hf, const float* xc, int64_t dy, int64_t dx) {
  const __m512i w = _mm512_set1_epi32(static_cast<int>(g.W));
  const __m512i c = _mm512_add_epi32(hf.left, _mm512_set1_epi32(static_cast<int>(dx)));
  // Unsigned compares reject negative columns (and rows) too.
  const __mmask16 cols = hf.live & _mm512_cmplt_epu32_mask(c, w);
  if (hf.segments == 0) {
    const __m512i r = _mm512_add_epi32(hf.top, _mm512_set1_epi32(static_cast<int>(dy)));
    const __mmask16 in =
        cols & _mm512_cmplt_epu32_mask(r, _mm512_set1_epi32(static_cast<int>(g.H)));
    const __m512i at = _mm512_add_epi32(_mm512_mullo_epi32(r, w), c);
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), in, at, xc, 4);
  }
  __m512 v = _mm512_setzero_ps();
  for (int s = 0; s < hf.segments; ++s) {
    const int64_t r = hf.oh[s] * g.SH - g.PT + dy;
    if (r < 0 || r >= g.H) continue;
    const __mmask16 seg = __mmask16(((1u << hf.lane0[s + 1]) - 1) & ~((1u << hf.lane0[s]) - 1));
    // Lane l reads xc[r * W + col0 + dx + SW * l]; masked-off lanes are not read (no fault).
    const float* row = xc + r * g.W + hf.col0[s] + dx;
    v = g.SW == 1 ? _mm512_mask_loadu_ps(v, cols & seg, row) : load_every_other(v, cols & seg, row);
  }
  return v;
}

// The same columns as im2col, panel by panel and row by row, so the packed tile is written in
// order (the run-by-run copy scatters short writes over the whole tile and is bound by their
// bookkeeping). Lanes outside the image or past column t read zero.
void im2col_vector(const Geo& g, const float* xg, int64_t cg, int64_t c0, int64_t t, float* col) {
  const int64_t rows = cg * g.KH * g.KW;
  for (int64_t j0 = 0; j0 < t; j0 += kGemmNR) {
    const Half halves[2] = {make_half(g, c0, t, j0), make_half(g, c0, t, j0 + 16)};
    float* dst = col + j0 * rows;
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* xc = xg + ci * g.H * g.W;
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        for (int64_t kw = 0; kw < g.KW; ++kw, dst += kGemmNR) {
          _mm512_storeu_ps(dst, load_half(g, halves[0], xc, kh * g.DH, kw * g.DW));
          _mm512_storeu_ps(dst + 16, load_half(g, halves[1], xc, kh * g.DH, kw * g.DW));
        }
      }
    }
  }
}
#endif

// Per-call buffer shared by all threads (owned by the calling thread, kept between calls).
float* shared_scratch(size_t n) {
  thread_local std::vector<float> buffer;
  return grown(buffer, n);
}

// Weights packed for the GEMM when the caller has none packed (weights that are not
// initializers): owned by the calling thread, kept between calls.
const float* pack_weights_now(const Geo& g, const float* w) {
  const int64_t mg = g.M / g.G, k = g.C / g.G * g.KH * g.KW;
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>(g.G * packed_a_floats(mg, k)));
  pack_conv_weights(w, g.M, g.G, k, buffer.data());
  return buffer.data();
}

// The B operand of one unit: the im2col columns, or (1x1) the input rows, packed.
void pack_unit(const Geo& g, bool pointwise, const float* xg, int64_t cg, int64_t k, int64_t c0,
               int64_t t, float* col) {
  if (pointwise) {
    pack_b(false, k, t, xg + c0, g.OH * g.OW, col);
    return;
  }
#if PTQ_AVX512
  if (g.H * g.W < (int64_t{1} << 30) && g.OH * g.OW < (int64_t{1} << 30)) {
    im2col_vector(g, xg, cg, c0, t, col);
    return;
  }
#endif
  im2col(g, xg, cg, c0, t, col);
}

// gemm_conv's column tile for `images` (images x groups) of hw outputs over k rows: the slice
// of one k block (up to 256 rows) of the packed columns takes about 256 KiB, so it stays in L2
// while every row panel of the weights passes over it; tiles are then evened out and rounded up
// to whole micro-kernel panels. A small convolution (batch 1 at 28x28 and below) would be a few
// tiles, which the threads could not share: narrower tiles (whole panels) until there are four
// (MobileNetV2 at batch 1 on 2 threads: its 14x14 projections ran on one thread), and on until
// four a thread while the threads cannot take equal shares (a count they do not divide, or a
// last tile of half a tile or less): its 1x1 32 -> 192 at 28x28 took 66-83 us as tiles of 7, 7,
// 7 and 3.5 panels (one thread got 14 of the 24.5), 55-62 us as 12 of 2 and a half. A 56x56
// plane as four tiles of 25, 25, 25 and 23 panels stays so (as eight: 10 % slower).
int64_t column_tile(int64_t hw, int64_t k, int64_t images, int threads) {
  const int64_t widest = std::clamp<int64_t>(65536 / std::clamp<int64_t>(k, 1, 256), 64, 2048);
  const int64_t even = (hw + widest - 1) / widest;
  int64_t tn = std::min(hw, ((hw + even - 1) / even + kGemmNR - 1) / kGemmNR * kGemmNR);
  for (;;) {
    const int64_t tiles = (hw + tn - 1) / tn, total = images * tiles;
    const bool short_last =
        total < 4 * int64_t{std::max(threads, 1)} && 2 * (hw - (tiles - 1) * tn) <= tn;
    const bool narrower = total < 4 || uneven_shares(total, threads) || short_last;
    if (!narrower || tn <= kGemmNR) return tn;
    tn = std::max(kGemmNR, (tn / 2 + kGemmNR - 1) / kGemmNR * kGemmNR);
  }
}

// Work is cut into "units" (image, group, column tile) and, when there are fewer than 4 units,
// each unit's output channels into up to 4 row tiles that share one packed column buffer.
// Tile sizes follow from the shape alone.
void gemm_conv(const Geo& g, const float* x, const float* pw, const float* b, float* y,
               const ConvEpilogue& e, int threads) {
  const int64_t cg = g.C / g.G, mg = g.M / g.G, hw = g.OH * g.OW;
  const int64_t k = cg * g.KH * g.KW;
  const int64_t group_floats = packed_a_floats(mg, k);
  const bool pointwise = g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 &&
                         g.PL == 0 && g.OH == g.H && g.OW == g.W;
  const int64_t tn = column_tile(hw, k, g.N * g.G, threads);
  const int64_t ctiles = (hw + tn - 1) / tn;
  const int64_t units = g.N * g.G * ctiles;
  const int64_t col_floats = packed_b_floats(k, tn);
  auto unit_at = [&](int64_t u, int64_t& n, int64_t& grp, int64_t& c0, int64_t& t) {
    const int64_t ng = u / ctiles;
    n = ng / g.G, grp = ng % g.G, c0 = (u % ctiles) * tn, t = std::min(tn, hw - c0);
  };
  // The epilogue of the output rows from row0 (of the group's M) whose tile starts at y + at.
  // An output far past the caches is streamed to memory (GemmEpilogue::stream).
  const bool stream = streams_output(g.N * g.M * hw);
  auto epilogue = [&](int64_t row0, int64_t at) {
    return GemmEpilogue{b != nullptr ? b + row0 : nullptr,
                        e.residual != nullptr ? e.residual + at : nullptr,
                        hw,
                        e.act,
                        e.lo,
                        e.hi,
                        stream};
  };
  int64_t parts = 1;
  if (units < 4 && mg >= 128) parts = std::min<int64_t>((4 + units - 1) / units, mg / 64);
  if (parts == 1) {
    // A 1x1 convolution's B rows are the input's own rows (hw floats apart): with up to 256 of
    // them (a panel's rows then fill L1 at most) the micro-kernel reads them in place, unless
    // its whole panels would read past the input's end. MobileNetV2 at batch 32 on one thread:
    // the 1x1 convs of 16-144 input channels 25-35 % faster than packing first; those of
    // 384-576 5-10 % slower, which keep the packing.
    const bool in_place = pointwise && k <= 256;
    std::vector<int64_t> rows_at;
    if (in_place) {
      rows_at.resize(static_cast<size_t>(k));
      for (int64_t q = 0; q < k; ++q) rows_at[static_cast<size_t>(q)] = q * hw;
    }
    const float* x_end = x + g.N * g.C * g.H * g.W;
    parallel_tasks(threads, units, [&](int64_t u) {
      int64_t n = 0, grp = 0, c0 = 0, t = 0;
      unit_at(u, n, grp, c0, t);
      const float* xg = x + (n * g.C + grp * cg) * g.H * g.W;
      const int64_t at = (n * g.M + grp * mg) * hw + c0;
      const float* read_end = xg + (k - 1) * hw + c0 + (t + kGemmNR - 1) / kGemmNR * kGemmNR;
      if (in_place && read_end <= x_end &&
          gemm_shifted(mg, t, k, pw + grp * group_floats, xg + c0, rows_at.data(), y + at, hw,
                       epilogue(grp * mg, at), true)) {
        return;
      }
      float* col = scratch(static_cast<size_t>(col_floats));
      pack_unit(g, pointwise, xg, cg, k, c0, t, col);
      gemm_packed(mg, t, k, pw + grp * group_floats, col, y + at, hw, epilogue(grp * mg, at));
    });
    return;
  }
  const int64_t tm = ((mg + parts - 1) / parts + kGemmMR - 1) / kGemmMR * kGemmMR;
  const int64_t mtiles = (mg + tm - 1) / tm;
  float* cols = shared_scratch(static_cast<size_t>(units * col_floats));
  parallel_for(threads, units, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t n = 0, grp = 0, c0 = 0, t = 0;
      unit_at(u, n, grp, c0, t);
      pack_unit(g, pointwise, x + (n * g.C + grp * cg) * g.H * g.W, cg, k, c0, t,
                cols + u * col_floats);
    }
  });
  parallel_for(threads, units * mtiles, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t u = task / mtiles, m0 = (task % mtiles) * tm, rows = std::min(tm, mg - m0);
      int64_t n = 0, grp = 0, c0 = 0, t = 0;
      unit_at(u, n, grp, c0, t);
      const int64_t at = (n * g.M + grp * mg + m0) * hw + c0;
      gemm_packed(rows, t, k, pw + grp * group_floats + m0 * k, cols + u * col_floats, y + at, hw,
                  epilogue(grp * mg + m0, at));
    }
  });
}

}  // namespace

void pack_conv_weights(const float* w, int64_t m, int64_t groups, int64_t k, float* out) {
  const int64_t mg = m / groups;
  for (int64_t grp = 0; grp < groups; ++grp) {
    pack_a(false, mg, k, w + grp * mg * k, k, out + grp * packed_a_floats(mg, k));
  }
}

bool conv_with(ConvAlgo algo, const ConvParams& p, const float* x, const float* w,
               const float* packed_w, const float* b, float* y, const ConvEpilogue& e,
               int threads) {
  if (!conv_fast_handles(p)) return false;
  const Geo g = to_geo(p);
  switch (algo) {
    case ConvAlgo::kDepthwise3x3:
      return depthwise3x3(p, x, w, b, y, e, threads);
    case ConvAlgo::kDepthwise:
      depthwise(g, x, w, b, y, e, threads);
      return true;
    case ConvAlgo::kShifted:
      return conv_shifted(p, x, packed_w != nullptr ? packed_w : pack_weights_now(g, w), b, y, e,
                          threads);
    case ConvAlgo::kGemm:
      gemm_conv(g, x, packed_w != nullptr ? packed_w : pack_weights_now(g, w), b, y, e, threads);
      return true;
    default:
      return false;
  }
}

bool conv_fast(const ConvParams& p, const float* x, const float* w, const float* packed_w,
               const float* b, float* y, const ConvEpilogue& e, int threads) {
  return conv_with(choose_conv(p, ConvSetting{threads}), p, x, w, packed_w, b, y, e, threads);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
