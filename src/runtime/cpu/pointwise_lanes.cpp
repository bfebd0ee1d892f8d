// 1x1 convolutions with the output channels in the vector lanes. The GEMM of conv_fast puts an
// image's output positions in the micro-kernel's 32-column panels, so a 7x7 plane computes 64
// columns for 49 outputs (and a 14x14 plane 224 for 196). Here the GEMM is transposed: a tile is
// up to kRows output positions (the rows, read in place from the input: position p of channel q
// at x + q * HW + p) by 32 output channels (a panel of the weights, packed once with pack_b),
// so no lane is wasted on positions. A finished tile is transposed in registers and written
// out channel by channel with the epilogue.
//
// Each output is the same multiply-adds over the input channels in order as in conv_fast's
// GEMM (a * b and b * a are the same float), so the results are the same bits either way.

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "conv.h"
#include "gemm_packed.h"
#include "kernel_util.h"
#include "lanes.h"

namespace ptq::runtime::cpu {

namespace {

constexpr int64_t kRows = 14;      // output positions a tile (28 accumulators)
constexpr int64_t kPanel = kGemmNR;  // output channels a tile: pack_b's panel width

// Fraction of the multiply-adds that compute outputs: positions in 32-column panels times
// channels in kGemmMR-row panels (conv_fast), or channels in 32-lane panels (here).
double panel_use(int64_t used, int64_t panel) {
  return static_cast<double>(used) / static_cast<double>((used + panel - 1) / panel * panel);
}

}  // namespace

bool pointwise_lanes_applies(const ConvParams& p) {
#if defined(__AVX512F__)
  if (p.in.size() != 2 || p.G != 1 || p.w.kernel != std::vector<int64_t>{1, 1}) return false;
  const Window& w = p.w;
  if (w.strides != std::vector<int64_t>{1, 1} || p.out != p.in) return false;
  const int64_t hw = p.out[0] * p.out[1];
  // Worth it where the positions waste a tenth of the panels, and over enough input channels
  // to pay for turning each tile around (MobileNetV2's 7x7 and 14x14 planes; from 64 rather
  // than 128 channels its 14x14 expansions join, 1-2.5 % faster a pass).
  const double theirs = panel_use(hw, kGemmNR) * panel_use(p.M, kGemmMR);
  return p.C >= kPointwiseLanesMinChannels && panel_use(p.M, kPanel) > 1.1 * theirs;
#else
  (void)p;
  return false;
#endif
}

int64_t pointwise_lanes_weight_floats(int64_t m, int64_t c) { return packed_b_floats(c, m); }

void pack_pointwise_lanes_weights(const float* w, int64_t m, int64_t c, float* out) {
  pack_b(true, c, m, w, c, out);  // W^T (C x M): W is stored M x C
}

#if defined(__AVX512F__)

namespace {

// Transposes 16 rows of 16 floats in registers: v[j] becomes column j (lane i = row i).
inline void transpose16(__m512 v[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {  // pairs of rows interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5 | ...]
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  auto lo64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  auto hi64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  __m512 u[16];
  for (int i = 0; i < 4; ++i) {  // groups of four rows: u[4i + c] = [a_c b_c c_c d_c | a_c+4 ...]
    u[4 * i] = lo64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = hi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = lo64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = hi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // 128-bit lanes: w[c] (rows 0-7) = [a..d_c | a..d_c+8 | e..h_c | e..h_c+8], c < 4, and
  // w[4 + c] the same for c + 4; x[] likewise for rows 8-15.
  __m512 w[8], x[8];
  for (int c = 0; c < 4; ++c) {
    w[c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    w[4 + c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
    x[c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    x[4 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
  }
  for (int c = 0; c < 4; ++c) {
    v[c] = _mm512_shuffle_f32x4(w[c], x[c], 0x88);
    v[c + 8] = _mm512_shuffle_f32x4(w[c], x[c], 0xdd);
    v[c + 4] = _mm512_shuffle_f32x4(w[4 + c], x[4 + c], 0x88);
    v[c + 12] = _mm512_shuffle_f32x4(w[4 + c], x[4 + c], 0xdd);
  }
}

// One tile: R positions from x (row stride hw) by the panel's `cols` channels over k input
// channels, written to y (channel stride hw) with the epilogue.
template <int R>
void tile(const float* x, int64_t hw, int64_t k, const float* panel, int64_t cols,
          const float* bias, const float* res, const ConvEpilogue& e, float* y) {
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  const float* a = x;
  for (int64_t q = 0; q < k; ++q, a += hw, panel += kPanel) {
    const __m512 b0 = _mm512_loadu_ps(panel), b1 = _mm512_loadu_ps(panel + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
  }
  const __mmask16 m = lane_mask(R);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int half = 0; half < 2 && half * 16 < cols; ++half) {
    __m512 v[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) v[r] = r < R ? (half == 0 ? c0[r] : c1[r]) : _mm512_setzero_ps();
    transpose16(v);  // v[j]: channel half * 16 + j at the tile's positions
    const int64_t n = std::min<int64_t>(16, cols - half * 16);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t ch = half * 16 + j;
      finish_vector(v[j], m, bias != nullptr ? bias + ch : nullptr,
                    res != nullptr ? res + ch * hw : nullptr, e.act, lo, hi, y + ch * hw);
    }
  }
}

using TileFn = void (*)(const float*, int64_t, int64_t, const float*, int64_t, const float*,
                        const float*, const ConvEpilogue&, float*);

template <int... Rs>
constexpr auto tile_table(std::integer_sequence<int, Rs...>) {
  return std::array<TileFn, sizeof...(Rs)>{&tile<Rs + 1>...};
}

constexpr auto kTiles = tile_table(std::make_integer_sequence<int, static_cast<int>(kRows)>{});

}  // namespace

bool conv_pointwise_lanes(const ConvParams& p, const float* x, const float* packed,
                          const float* b, float* y, const ConvEpilogue& e, int threads) {
  if (!pointwise_lanes_applies(p)) return false;
  const int64_t hw = p.out[0] * p.out[1], k = p.C, panels = (p.M + kPanel - 1) / kPanel;
  // A task: one image's outputs for one panel of channels (its weights stay in L2 across the
  // task's row tiles), over a block of its row tiles: the tiles are cut into blocks where there
  // would be fewer than four tasks, so that threads can share the call (a 28x28 plane with 32
  // output channels is one panel).
  const int64_t tiles = (hw + kRows - 1) / kRows;
  const int64_t blocks = std::clamp<int64_t>((4 + p.N * panels - 1) / (p.N * panels), 1, tiles);
  const int64_t per_block = (tiles + blocks - 1) / blocks;
  parallel_tasks(threads, p.N * panels * blocks, [&](int64_t task) {
    const int64_t n = task / (panels * blocks), m0 = task / blocks % panels * kPanel;
    const int64_t first = task % blocks * per_block * kRows;
    const int64_t last = std::min(hw, first + per_block * kRows);
    const int64_t cols = std::min(kPanel, p.M - m0);
    const float* xn = x + n * k * hw;
    const int64_t at = (n * p.M + m0) * hw;
    for (int64_t p0 = first; p0 < last; p0 += kRows) {
      const int64_t rows = std::min(kRows, hw - p0);
      kTiles[static_cast<size_t>(rows - 1)](xn + p0, hw, k, packed + m0 * k, cols,
                                            b != nullptr ? b + m0 : nullptr,
                                            e.residual != nullptr ? e.residual + at + p0 : nullptr,
                                            e, y + at + p0);
    }
  });
  return true;
}

#else

bool conv_pointwise_lanes(const ConvParams&, const float*, const float*, const float*, float*,
                          const ConvEpilogue&, int) {
  return false;
}

#endif

}  // namespace ptq::runtime::cpu
