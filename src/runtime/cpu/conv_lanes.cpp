// Convolutions with the output channels in the vector lanes. The GEMMs of conv_fast and
// conv_shifted put an image's output positions in the micro-kernel's 32-column panels, so a
// 7x7 plane computes 64 columns for 49 outputs (a 14x14 1x1 conv 224 for 196). Here the GEMM
// is transposed: a tile is up to kRows output positions (the rows) by 32 output channels (a
// panel of the weights, packed once with pack_b), so no lane is wasted on positions. A 1x1
// conv reads its positions in place (position p of channel q at x + q * HW + p: one "row" of
// H * W outputs); a larger kernel reads the input's padded phase copy (phase_copy.h), where tap
// q of output (oh, ow) is at taps[q] + oh * Wq + ow. Outputs narrower than half a tile (7x7)
// take two rows a tile. A finished tile is transposed in registers and written out channel by
// channel with the epilogue.
//
// Each output is the same multiply-adds over the taps in order as in conv_fast's and
// conv_shifted's GEMMs (a * b and b * a are the same float), so the results are the same bits
// whichever computes them.

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "conv.h"
#include "gemm_packed.h"
#include "kernel_util.h"
#include "lanes.h"
#include "phase_copy.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

constexpr int64_t kRows = 14;        // output positions a tile (28 accumulators)
constexpr int64_t kPanel = kGemmNR;  // output channels a tile: pack_b's panel width
constexpr int64_t kMinChannels = 64;  // the fewest input channels a 1x1 conv takes
// Weight rows a tile prefetches ahead (2 KiB). A task's first tile reads its panel from
// memory (ResNet-18's layer 4 at batch 1: 590 KB a panel, 9.4 MB a conv, read once a pass): the
// hardware prefetcher stops at every 4 KiB page, the tile then waits on memory. 8, 16 and 32
// measured alike; ResNet-18 at batch 1 8-10 % faster a pass (docs/perf-history.md, session 19).
constexpr int64_t kWeightAhead = 16;
// Taps a tile prefetches its input rows ahead. A 1x1 conv reads each of its K input planes
// (a plane apart) once a tile; after a depthwise conv on two threads half of those planes sit in
// the other core's cache, and each tap waited on them. MobileNetV2 at batch 1 on two threads:
// 259 -> 285 img/s (4 ahead 266, 8 278, 16 and 32 alike; docs/perf-history.md, session 19).
constexpr int64_t kInputAhead = 16;

#if PTQ_AVX512  // what conv_lanes_fits weighs; the lower levels have no lanes kernel
// Fraction of the multiply-adds that compute outputs: `used` of whole panels.
double panel_use(int64_t used, int64_t panel) {
  return static_cast<double>(used) / static_cast<double>((used + panel - 1) / panel * panel);
}

bool pointwise(const ConvParams& p) {
  return p.w.kernel == std::vector<int64_t>{1, 1} && p.w.strides == std::vector<int64_t>{1, 1} &&
         p.out == p.in;
}

// Floats of an image's padded copy (a larger kernel), and the most all images may take.
int64_t copy_floats(const ConvParams& p) {
  const Shifted g = shifted_geometry(p);
  return g.C * g.SH * g.SW * g.Hq * g.Wq;
}
// 1 MiB: a few images of ResNet-18's layer 4 (the 8 MiB first allowed took a batch of 32 of
// its first conv, and its peak memory 8 MB up).
constexpr int64_t kMaxCopyFloats = int64_t{1} << 18;
#endif

}  // namespace

bool conv_lanes_fits(const ConvParams& p) {
#if PTQ_AVX512
  if (p.in.size() != 2 || p.G != 1) return false;
  // A 1x1 conv over enough input channels to pay for turning each tile around (from 64 input
  // channels rather than 128, MobileNetV2's 14x14 expansions join: 1-2.5 % faster a pass), or
  // a larger kernel.
  const bool one = p.w.kernel[0] * p.w.kernel[1] == 1;
  return !one || (p.w.strides == std::vector<int64_t>{1, 1} && p.C >= kMinChannels);
#else
  (void)p;
  return false;
#endif
}

bool conv_lanes_applies(const ConvParams& p) {
#if PTQ_AVX512
  if (!conv_lanes_fits(p)) return false;
  const int64_t hw = p.out[0] * p.out[1];
  if (pointwise(p)) {
    // Worth it where the positions waste a tenth of the panels (MobileNetV2's 7x7 and 14x14
    // planes).
    const double theirs = panel_use(hw, kGemmNR) * panel_use(p.M, kGemmMR);
    return panel_use(p.M, kPanel) > 1.1 * theirs;
  }
  if (p.w.kernel[0] * p.w.kernel[1] == 1 || p.out[0] <= 0 || p.out[1] <= 0) return false;
  // A larger kernel: where conv_shifted wastes a tenth of its columns on positions (7x7: 64
  // for 49) and does not lay the images side by side (which fills them), and the images'
  // copies stay small. (Stems, whose 112-wide rows waste 1-3 %, measured no faster here.)
  if (conv_shifted_interleaves(p) || p.N * copy_floats(p) > kMaxCopyFloats) return false;
  const Shifted g = shifted_geometry(p);
  const double theirs =
      static_cast<double>(hw) / static_cast<double>((g.P + kGemmNR - 1) / kGemmNR * kGemmNR);
  return panel_use(p.M, kPanel) > 1.1 * theirs;
#else
  (void)p;
  return false;
#endif
}

int64_t lanes_weight_floats(int64_t m, int64_t k) { return packed_b_floats(k, m); }

void pack_lanes_weights(const float* w, int64_t m, int64_t k, float* out) {
  pack_b(true, k, m, w, k, out);  // W^T (K x M): W is stored M x K
}

#if PTQ_AVX512

namespace {

// The low / high 64-bit halves of each 128-bit lane of a and b, interleaved. (Functions, not
// lambdas: a lambda's function-pointer thunk is not covered by the level's target pragma.)
inline __m512 lo64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
inline __m512 hi64(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// Transposes 16 rows of 16 floats in registers: v[j] becomes column j (lane i = row i).
inline void transpose16(__m512 v[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {  // pairs of rows interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5 | ...]
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
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

// Up to kRows output positions: n[0] from column ow of output row oh on, then n[1] from the
// start of the next row. Position i of run r reads the source at src[r] + i (after each tap's
// offset) and is written at out[r] + i of each output plane.
struct Tile {
  int64_t src[2], out[2];
  int n[2];
};

// The tiles of one image: rows cut into runs of at most kRows, evened out; rows of at most
// half a tile paired.
std::vector<Tile> image_tiles(int64_t rows, int64_t cols, int64_t pitch) {
  std::vector<Tile> tiles;
  if (2 * cols <= kRows) {
    for (int64_t oh = 0; oh < rows; oh += 2) {
      const int second = oh + 1 < rows ? static_cast<int>(cols) : 0;
      tiles.push_back({{oh * pitch, (oh + 1) * pitch},
                       {oh * cols, (oh + 1) * cols},
                       {static_cast<int>(cols), second}});
    }
    return tiles;
  }
  const int64_t pieces = (cols + kRows - 1) / kRows, width = (cols + pieces - 1) / pieces;
  for (int64_t oh = 0; oh < rows; ++oh) {
    for (int64_t ow = 0; ow < cols; ow += width) {
      const int n = static_cast<int>(std::min(width, cols - ow));
      tiles.push_back({{oh * pitch + ow, 0}, {oh * cols + ow, 0}, {n, 0}});
    }
  }
  return tiles;
}

// What every tile of a call shares.
struct Job {
  const float* src;     // the image's source (input or padded copy)
  const int64_t* taps;  // where each of the k taps starts in it
  int64_t k;
  const float* panel;  // the packed weights of the tile's channels
  int64_t cols;        // channels of the panel (up to kPanel)
  const float* bias;   // the panel's bias, or null
  const float* res;    // the residual of the panel's first channel (laid out as y), or null
  int64_t plane;       // floats of an output plane
  float* y;            // the output plane of the panel's first channel
};

// The epilogue of one run of a transposed tile: lanes `m` of v (v's lane first + i is output
// at + i) to channel ch.
inline void finish_lanes(const Job& j, int64_t ch, __m512 v, __mmask16 m, int64_t at,
                         const ConvEpilogue& e, __m512 lo, __m512 hi) {
  const int64_t o = ch * j.plane + at;
  finish_vector(v, m, j.bias != nullptr ? j.bias + ch : nullptr,
                j.res != nullptr ? j.res + o : nullptr, e.act, lo, hi, j.y + o);
}

// The first and last cache line of a run of n floats at p.
inline void prefetch_taps(const float* p, int n) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(p + n - 1), _MM_HINT_T0);
}

// One tile of R1 + R2 positions (runs of R1 and R2) by the panel's channels.
template <int R1, int R2>
void tile(const Job& j, const Tile& t, const ConvEpilogue& e) {
  constexpr int R = R1 + R2;
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  const float* panel = j.panel;
  for (int64_t q = 0; q < j.k; ++q, panel += kPanel) {
    const float* a = j.src + j.taps[q] + t.src[0];
    const float* b = j.src + j.taps[q] + t.src[1] - R1;  // b[R1]: the second run's first
    _mm_prefetch(reinterpret_cast<const char*>(panel + kWeightAhead * kPanel), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(panel + kWeightAhead * kPanel + 16), _MM_HINT_T0);
    const int64_t ahead = j.taps[std::min(q + kInputAhead, j.k - 1)] - j.taps[q];
    prefetch_taps(a + ahead, R1);
    if (R2 > 0) prefetch_taps(b + R1 + ahead, R2);
    const __m512 b0 = _mm512_loadu_ps(panel), b1 = _mm512_loadu_ps(panel + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(r < R1 ? a[r] : b[r]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
  }
  const __mmask16 first = lane_mask(R1), second = __mmask16(lane_mask(R) & ~first);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int half = 0; half < 2 && half * 16 < j.cols; ++half) {
    __m512 v[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) v[r] = r < R ? (half == 0 ? c0[r] : c1[r]) : _mm512_setzero_ps();
    transpose16(v);  // v[i]: channel half * 16 + i at the tile's positions
    const int64_t n = std::min<int64_t>(16, j.cols - half * 16);
    for (int64_t i = 0; i < n; ++i) {
      finish_lanes(j, half * 16 + i, v[i], first, t.out[0], e, lo, hi);
      if (R2 > 0) finish_lanes(j, half * 16 + i, v[i], second, t.out[1] - R1, e, lo, hi);
    }
  }
}

using TileFn = void (*)(const Job&, const Tile&, const ConvEpilogue&);

// tile<R, 0> for R = 1..kRows (one run), and tile<R, R> for R = 1..kRows / 2 (two rows).
template <int... Rs>
constexpr auto single_runs(std::integer_sequence<int, Rs...>) {
  return std::array<TileFn, sizeof...(Rs)>{&tile<Rs + 1, 0>...};
}

template <int... Rs>
constexpr auto paired_runs(std::integer_sequence<int, Rs...>) {
  return std::array<TileFn, sizeof...(Rs)>{&tile<Rs + 1, Rs + 1>...};
}

constexpr auto kSingle = single_runs(std::make_integer_sequence<int, static_cast<int>(kRows)>{});
constexpr auto kPaired =
    paired_runs(std::make_integer_sequence<int, static_cast<int>(kRows / 2)>{});

TileFn tile_fn(const Tile& t) {
  const size_t i = static_cast<size_t>(t.n[0] - 1);
  return t.n[1] == 0 ? kSingle[i] : kPaired[i];
}

// Where the taps read: a 1x1 conv reads the input in place (a single row of H * W outputs);
// a larger kernel reads every image's padded copy, made here.
struct Source {
  const float* x;
  int64_t image;  // floats between images
  int64_t rows, cols, pitch;
  std::vector<int64_t> taps;
};

Source source(const ConvParams& p, const float* x, int threads) {
  Source s;
  const int64_t hw = p.out[0] * p.out[1];
  if (pointwise(p)) {
    s.x = x, s.image = p.C * hw, s.rows = 1, s.cols = hw, s.pitch = hw;
    s.taps.resize(static_cast<size_t>(p.C));
    for (int64_t q = 0; q < p.C; ++q) s.taps[static_cast<size_t>(q)] = q * hw;
    return s;
  }
  const Shifted g = shifted_geometry(p);
  s.image = copy_floats(p), s.rows = g.OH, s.cols = g.OW, s.pitch = g.Wq;
  s.taps = tap_offsets(g, image_layout(g));
  thread_local std::vector<float> copy;
  float* xp = grown(copy, static_cast<size_t>(p.N * s.image));
  const int64_t in = g.C * g.H * g.W;
  parallel_for(threads, p.N * g.C, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      pad_planes(g, x + n * in, c, c + 1, xp + n * s.image);
    }
  });
  s.x = xp;
  return s;
}

}  // namespace

bool conv_lanes(const ConvParams& p, const float* x, const float* packed, const float* b, float* y,
                const ConvEpilogue& e, int threads) {
  if (!conv_lanes_applies(p)) return false;
  const Source s = source(p, x, threads);
  const std::vector<Tile> tiles = image_tiles(s.rows, s.cols, s.pitch);
  const int64_t plane = p.out[0] * p.out[1], k = static_cast<int64_t>(s.taps.size());
  const int64_t panels = (p.M + kPanel - 1) / kPanel, count = static_cast<int64_t>(tiles.size());
  // A task: one image's outputs for one panel of channels (its weights stay in L2 across the
  // task's tiles), over a block of its tiles: the tiles are cut into blocks where there would
  // be fewer than four tasks, so that threads can share the call (a 28x28 plane with 32 output
  // channels is one panel), and into more while the threads cannot take equal shares of fewer
  // than four tasks a thread (MobileNetV2's 7x7 projections to 160 channels are 5 panels).
  int64_t blocks = std::clamp<int64_t>((4 + p.N * panels - 1) / (p.N * panels), 1, count);
  while (blocks < count && uneven_shares(p.N * panels * blocks, threads)) ++blocks;
  const int64_t per_block = (count + blocks - 1) / blocks;
  parallel_tasks(threads, p.N * panels * blocks, [&](int64_t task) {
    const int64_t n = task / (panels * blocks), m0 = task / blocks % panels * kPanel;
    const int64_t at = (n * p.M + m0) * plane;
    const Job j{s.x + n * s.image,
                s.taps.data(),
                k,
                packed + m0 * k,
                std::min(kPanel, p.M - m0),
                b != nullptr ? b + m0 : nullptr,
                e.residual != nullptr ? e.residual + at : nullptr,
                plane,
                y + at};
    const int64_t first = task % blocks * per_block, last = std::min(count, first + per_block);
    for (int64_t i = first; i < last; ++i) {
      const Tile& t = tiles[static_cast<size_t>(i)];
      tile_fn(t)(j, t, e);
    }
  });
  return true;
}

#else

bool conv_lanes(const ConvParams&, const float*, const float*, const float*, float*,
                const ConvEpilogue&, int) {
  return false;
}

#endif

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
