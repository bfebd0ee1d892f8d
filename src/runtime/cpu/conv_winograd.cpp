// 3x3 stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3) (Lavin & Gray, 2016): each
// 2x2 block of outputs ("tile") of an output channel is A^T [sum_c U_c . V_c] A, with the 4x4
// input patch under the tile transformed to V = B^T d B and each 3x3 filter to U = G g G^T
// (once, when the weights are packed). Summed over the input channels, the 16 positions xi of
// the 4x4 transforms are 16 independent GEMMs, U_xi (M x C) times V_xi (C x tiles): 16
// multiply-adds per tile and channel pair where the direct convolution needs 36. The transforms'
// coefficients are 0, +-1 and +-1/2, so they add little rounding error (the tests bound it
// against the float64 reference).
//
// Work is cut into blocks of kBlock consecutive tiles (in image, tile-row, tile-column order,
// spanning images) and, when there are few blocks, the output channels into parts: a task is a
// block and a part. It transforms the block's patches into packed B panels, then for each chunk
// of its rows runs the 16 GEMMs into tiles of sums and writes A^T M A + bias with the epilogue.
// Each output depends only on its own patch and the weights, summed in a fixed order, so
// results are the same whatever the blocking, the batch size or the thread count (the parts
// follow the thread count; the results do not).

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <vector>

#include "conv.h"
#include "gemm_packed.h"
#include "kernel_util.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

constexpr int64_t kXi = 16;  // positions of a 4x4 transform

// Weights to the Winograd domain: U = G g G^T, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], in
// float64, rounded to float32 once.
void transform_filter(const float* g, double u[kXi]) {
  double t[4][3];
  for (int j = 0; j < 3; ++j) {
    const double g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    t[0][j] = g0;
    t[1][j] = 0.5 * (g0 + g1 + g2);
    t[2][j] = 0.5 * (g0 - g1 + g2);
    t[3][j] = g2;
  }
  for (int i = 0; i < 4; ++i) {
    u[i * 4 + 0] = t[i][0];
    u[i * 4 + 1] = 0.5 * (t[i][0] + t[i][1] + t[i][2]);
    u[i * 4 + 2] = 0.5 * (t[i][0] - t[i][1] + t[i][2]);
    u[i * 4 + 3] = t[i][2];
  }
}

}  // namespace

int64_t winograd_weight_floats(int64_t m, int64_t c) { return kXi * packed_a_floats(m, c); }

// Each filter's 16 transformed taps go straight to their places in the 16 packed matrices:
// row r of U_xi in panel r / MR at column c (pack_a's layout, missing rows of the last panel
// zero), so no unpacked copy of the 16 matrices is made.
void pack_winograd_weights(const float* w, int64_t m, int64_t c, float* out) {
  const int64_t stride = packed_a_floats(m, c);
  std::fill(out, out + kXi * stride, 0.0f);
  double t[kXi];
  for (int64_t r = 0; r < m; ++r) {
    float* row = out + r / kGemmMR * kGemmMR * c + r % kGemmMR;
    for (int64_t k = 0; k < c; ++k) {
      transform_filter(w + (r * c + k) * 9, t);
      for (int64_t xi = 0; xi < kXi; ++xi) {
        row[xi * stride + k * kGemmMR] = static_cast<float>(t[xi]);
      }
    }
  }
}

#if PTQ_AVX512

namespace {

constexpr int64_t kBlock = 64;  // tiles (GEMM columns) a block: two micro-kernel panels

struct Wino {
  int64_t N, C, M, H, W, OH, OW, PT, PL, TH, TW, tiles;  // tiles of all images
};

Wino wino_geometry(const ConvParams& p) {
  Wino g{};
  g.N = p.N, g.C = p.C, g.M = p.M, g.H = p.in[0], g.W = p.in[1], g.OH = p.out[0], g.OW = p.out[1];
  g.PT = p.w.pad_begin(0), g.PL = p.w.pad_begin(1);
  g.TH = (g.OH + 1) / 2, g.TW = (g.OW + 1) / 2;
  g.tiles = g.N * g.TH * g.TW;
  return g;
}

// A run of `count` (<= 16) tiles of one tile row of image n from column tx, at column p of its
// block; runs do not cross a micro-kernel panel.
struct Run {
  int64_t n, ty, tx, count, p;
};

// The runs of the tiles [first, first + count).
std::vector<Run> block_runs(const Wino& g, int64_t first, int64_t count) {
  std::vector<Run> runs;
  for (int64_t p = 0; p < count;) {
    const int64_t t = first + p, n = t / (g.TH * g.TW), in_image = t % (g.TH * g.TW);
    const int64_t ty = in_image / g.TW, tx = in_image % g.TW;
    const int64_t len = std::min({int64_t{16}, g.TW - tx, count - p, kGemmNR - p % kGemmNR});
    runs.push_back({n, ty, tx, len, p});
    p += len;
  }
  return runs;
}

// The lanes l with 0 <= first + l < size.
__mmask16 inside_mask(int64_t first, int64_t size) {
  return static_cast<__mmask16>(lane_mask(size - first) & ~lane_mask(-first));
}

// Where a run's patches lie in a channel's plane: whether each of the 4 rows is inside the
// image (else padding), its offset at the run's first column, and the masks of the 3 vectors
// a row is loaded from (lanes inside [0, W)); the same for every channel.
struct PatchRows {
  bool inside[4];
  int64_t at[4];
  __mmask16 k[3];
};

PatchRows patch_rows(const Wino& g, const Run& r) {
  PatchRows pr{};
  const int64_t col = 2 * r.tx - g.PL;
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t ih = 2 * r.ty - g.PT + i;
    pr.inside[i] = ih >= 0 && ih < g.H;
    pr.at[i] = ih * g.W + col;
  }
  for (int64_t v = 0; v < 3; ++v) pr.k[v] = inside_mask(col + 16 * v, g.W);
  pr.k[2] &= 0x3;  // the third vector supplies the last tile's columns 2 and 3 only
  return pr;
}

// Columns 2l + s of a patch row from p (the run's first column) for its 16 tiles, s = 0..3:
// d[s] lane l = p[2l + s], zero outside the masks.
void load_patch_row(const float* p, const __mmask16 k[3], __m512 d[4]) {
  const __m512 a = _mm512_maskz_loadu_ps(k[0], p);
  const __m512 b = _mm512_maskz_loadu_ps(k[1], p + 16);
  const __m512 c = _mm512_maskz_loadu_ps(k[2], p + 32);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  d[0] = _mm512_permutex2var_ps(a, even, b);
  d[1] = _mm512_permutex2var_ps(a, odd, b);
  const __m512i ci = _mm512_castps_si512(c);
  d[2] = _mm512_castsi512_ps(_mm512_alignr_epi32(ci, _mm512_castps_si512(d[0]), 1));
  const __m512i c1 = _mm512_alignr_epi32(ci, ci, 1);  // lane 0: c[1]
  d[3] = _mm512_castsi512_ps(_mm512_alignr_epi32(c1, _mm512_castps_si512(d[1]), 1));
}

// V = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], for 16 tiles at once.
void transform_input(const __m512 d[4][4], __m512 v[kXi]) {
  __m512 t[4][4];
  for (int s = 0; s < 4; ++s) {
    t[0][s] = _mm512_sub_ps(d[0][s], d[2][s]);
    t[1][s] = _mm512_add_ps(d[1][s], d[2][s]);
    t[2][s] = _mm512_sub_ps(d[2][s], d[1][s]);
    t[3][s] = _mm512_sub_ps(d[1][s], d[3][s]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i * 4 + 0] = _mm512_sub_ps(t[i][0], t[i][2]);
    v[i * 4 + 1] = _mm512_add_ps(t[i][1], t[i][2]);
    v[i * 4 + 2] = _mm512_sub_ps(t[i][2], t[i][1]);
    v[i * 4 + 3] = _mm512_sub_ps(t[i][1], t[i][3]);
  }
}

// The transformed patches of a run, every channel, into the 16 packed B operands (v + xi *
// vstride; column p of panel p / NR is k rows of NR floats).
void transform_run(const Wino& g, const float* x, const Run& r, float* v, int64_t vstride) {
  const __mmask16 lanes = lane_mask(r.count);
  const PatchRows pr = patch_rows(g, r);
  const int64_t panel = r.p / kGemmNR * kGemmNR * g.C;
  for (int64_t c = 0; c < g.C; ++c) {
    const float* plane = x + (r.n * g.C + c) * g.H * g.W;
    __m512 d[4][4], t[kXi];
    for (int64_t i = 0; i < 4; ++i) {
      if (pr.inside[i]) {
        load_patch_row(plane + pr.at[i], pr.k, d[i]);
      } else {
        for (auto& s : d[i]) s = _mm512_setzero_ps();
      }
    }
    transform_input(d, t);
    float* at = v + panel + c * kGemmNR + r.p % kGemmNR;
    for (int64_t xi = 0; xi < kXi; ++xi) _mm512_mask_storeu_ps(at + xi * vstride, lanes, t[xi]);
  }
}

// Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1]: the 2x2 outputs of 16 tiles, y[row][col].
void transform_output(const __m512 m[kXi], __m512 y[2][2]) {
  __m512 r0[4], r1[4];
  for (int j = 0; j < 4; ++j) {
    r0[j] = _mm512_add_ps(_mm512_add_ps(m[j], m[4 + j]), m[8 + j]);
    r1[j] = _mm512_sub_ps(_mm512_sub_ps(m[4 + j], m[8 + j]), m[12 + j]);
  }
  const __m512* r[2] = {r0, r1};
  for (int i = 0; i < 2; ++i) {
    y[i][0] = _mm512_add_ps(_mm512_add_ps(r[i][0], r[i][1]), r[i][2]);
    y[i][1] = _mm512_sub_ps(_mm512_sub_ps(r[i][1], r[i][2]), r[i][3]);
  }
}

// Output rows of channels [m0, m0 + rows) for a run, from the 16 tiles of sums s + xi * sstride
// (row stride kBlock): + bias, + residual, then the activation, as the GEMM epilogue does.
void write_run(const Wino& g, const float* s, int64_t sstride, int64_t m0, int64_t rows,
               const Run& r, const float* b, const ConvEpilogue& e, float* y) {
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __mmask16 lanes = lane_mask(r.count);
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  const int64_t ow = 2 * r.tx, width = std::min(2 * r.count, g.OW - ow);
  const __mmask16 k0 = lane_mask(width), k1 = lane_mask(width - 16);
  const int64_t out_rows = std::min<int64_t>(2, g.OH - 2 * r.ty);
  for (int64_t i = 0; i < rows; ++i) {
    __m512 m[kXi], out[2][2];
    for (int64_t xi = 0; xi < kXi; ++xi) {
      m[xi] = _mm512_maskz_loadu_ps(lanes, s + xi * sstride + i * kBlock + r.p);
    }
    transform_output(m, out);
    const int64_t ch = m0 + i;
    const float* bias = b != nullptr ? b + ch : nullptr;
    for (int64_t k = 0; k < out_rows; ++k) {
      const int64_t at = ((r.n * g.M + ch) * g.OH + 2 * r.ty + k) * g.OW + ow;
      const float* res = e.residual != nullptr ? e.residual + at : nullptr;
      const __m512 v0 = _mm512_permutex2var_ps(out[k][0], first, out[k][1]);
      const __m512 v1 = _mm512_permutex2var_ps(out[k][0], second, out[k][1]);
      finish_vector(v0, k0, bias, res, e.act, lo, hi, y + at);
      if (k1 != 0) {
        const float* res1 = res != nullptr ? res + 16 : nullptr;
        finish_vector(v1, k1, bias, res1, e.act, lo, hi, y + at + 16);
      }
    }
  }
}

// Output channels a chunk: 16 tiles of sums of kBlock columns stay in L2 (~460 KiB at 112).
constexpr int64_t kChunkRows = 8 * kGemmMR;

// Rows a chunk of a part of `rows` rows: as even as whole panels allow, at most kChunkRows.
int64_t even_chunk_rows(int64_t rows) {
  const int64_t count = (rows + kChunkRows - 1) / kChunkRows;
  return ((rows + count - 1) / count + kGemmMR - 1) / kGemmMR * kGemmMR;
}

// Output channels a task (whole micro-kernel panels): all of them when there are two blocks or
// more a thread; with fewer (small batches) a part of them, at least two panels, for about two
// tasks a thread. Each task transforms its block's patches itself, so parts cost transforms
// and are made only for threads that would otherwise idle. The split does not change any
// result: an output's sum runs over the channels in order in whichever task computes it.
int64_t part_rows(int64_t m, int64_t blocks, int threads) {
  const int64_t panels = (m + kGemmMR - 1) / kGemmMR, want = 2 * int64_t{std::max(threads, 1)};
  const int64_t parts =
      blocks >= want ? 1 : std::min((want + blocks - 1) / blocks, (panels + 1) / 2);
  return (panels + parts - 1) / parts * kGemmMR;
}

// A distance between the 16 operands or sums of a block that is 4 KiB plus one cache line
// times some n: at a multiple of 4 KiB (C = 64: 16 KiB) the 16 stores of a transformed patch,
// or the 16 loads of a tile's sums, would all fall into one L1 set.
int64_t spread(int64_t floats) { return (floats + 1023) / 1024 * 1024 + 16; }

}  // namespace

bool conv_winograd_fits(const ConvParams& p) {
  if (p.in.size() != 2 || p.G != 1 || p.w.kernel != std::vector<int64_t>{3, 3}) return false;
  const Window& w = p.w;
  if (w.strides != std::vector<int64_t>{1, 1} || w.dilations != std::vector<int64_t>{1, 1}) {
    return false;
  }
  // Narrow convolutions do too little arithmetic per transformed value to pay for the
  // transforms.
  return p.C >= 32 && p.M >= 32;
}

bool conv_winograd_applies(const ConvParams& p) {
  // At 7x7 (ResNet-18's layer 4) the 2x2 tiles compute 64 outputs for 49 and it measured no
  // faster than the direct GEMM, while its weights take 16/9 the floats.
  return conv_winograd_fits(p) && p.out[0] >= 8 && p.out[1] >= 8;
}

bool conv_winograd(const ConvParams& p, const float* x, const float* packed_u, const float* b,
                   float* y, const ConvEpilogue& e, int threads) {
  if (!conv_winograd_applies(p)) return false;
  const Wino g = wino_geometry(p);
  const int64_t vstride = spread(packed_b_floats(g.C, kBlock));
  const int64_t ustride = packed_a_floats(g.M, g.C);
  const int64_t blocks = (g.tiles + kBlock - 1) / kBlock;
  const int64_t rows_a_part = part_rows(g.M, blocks, threads);
  const int64_t parts = (g.M + rows_a_part - 1) / rows_a_part;
  const int64_t chunk_rows = even_chunk_rows(rows_a_part);
  const int64_t sstride = spread(chunk_rows * kBlock);
  parallel_tasks(threads, blocks * parts, [&](int64_t task) {
    thread_local std::vector<float> v_buffer, s_buffer;
    float* v = grown(v_buffer, static_cast<size_t>(kXi * vstride));
    float* s = grown(s_buffer, static_cast<size_t>(kXi * sstride));
    const int64_t block = task / parts, part = task % parts;
    const int64_t first = block * kBlock, count = std::min(kBlock, g.tiles - first);
    const std::vector<Run> runs = block_runs(g, first, count);
    for (const Run& r : runs) transform_run(g, x, r, v, vstride);
    const int64_t m_end = std::min(g.M, (part + 1) * rows_a_part);
    for (int64_t m0 = part * rows_a_part; m0 < m_end; m0 += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, m_end - m0);
      for (int64_t xi = 0; xi < kXi; ++xi) {
        gemm_packed(rows, count, g.C, packed_u + xi * ustride + m0 * g.C, v + xi * vstride,
                    s + xi * sstride, kBlock);
      }
      for (const Run& r : runs) write_run(g, s, sstride, m0, rows, r, b, e, y);
    }
  });
  return true;
}

#else

bool conv_winograd_fits(const ConvParams&) { return false; }

bool conv_winograd_applies(const ConvParams&) { return false; }

bool conv_winograd(const ConvParams&, const float*, const float*, const float*, float*,
                   const ConvEpilogue&, int) {
  return false;
}

#endif

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
