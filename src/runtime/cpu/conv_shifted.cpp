// 2-D convolution without im2col. With the input zero-padded and split into SH x SW phases per
// channel (phase (a, b) holds padded rows a, a + SH, ... and columns b, b + SW, ...; one phase
// for stride 1), output (oh, ow) of tap (ci, kh, kw) reads element (oh + kh * DH / SH) * Wq +
// ow + kw * DW / SW of phase (kh * DH % SH, kw * DW % SW) of channel ci. Counting outputs over
// the phase width Wq (p = oh * Wq + ow, the last Wq - OW columns of each row wasted), the im2col
// row of a tap is that copy shifted by a constant. So the packed-weight GEMM reads its B rows
// straight from the copy (gemm_shifted) into a tile of the M x OH * Wq sums, and the valid
// columns are written to Y with the bias and epilogue. The copy is one pass over the input
// where im2col wrote KH * KW (strided) copies; each sum runs over k in the order the im2col
// path uses. Small outputs (7x7) interleave the images in the copy instead (`interleaves`), so
// a row of outputs of all images fills whole column panels.

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <numeric>
#include <vector>

#include "conv.h"
#include "gemm_packed.h"
#include "phase_copy.h"
#include "plane_copy.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

#if PTQ_AVX512

namespace {

int64_t panels(int64_t n) { return (n + kGemmNR - 1) / kGemmNR; }

// Rows [m0, m0 + rows) and sum columns [j0, j0 + cols) of one image, from a tile of sums with
// row stride ld: the valid columns (ow < OW) + bias (when there is one), + residual, then the
// activation, the micro-kernel epilogue's operations in its order.
void write_tile(const Shifted& g, const float* tile, int64_t ld, int64_t m0, int64_t rows,
                int64_t j0, int64_t cols, const float* b, const ConvEpilogue& e,
                const float* res, float* y) {
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t m = m0 + i;
    for (int64_t p = j0; p < j0 + cols;) {
      const int64_t oh = p / g.Wq, row_end = std::min(j0 + cols, (oh + 1) * g.Wq);
      const int64_t ow = p - oh * g.Wq, ow_end = std::min(g.OW, row_end - oh * g.Wq);
      const int64_t at = (m * g.OH + oh) * g.OW + ow;
      if (ow < ow_end) {
        finish_run(tile + i * ld + p - j0, ow_end - ow, b != nullptr ? b + m : nullptr,
                   res != nullptr ? res + at : nullptr, e.act, lo, hi, y + at);
      }
      p = row_end;
    }
  }
}

// The tiles of an image (t: row tile t % mtiles, column block t / mtiles), largest first.
std::vector<int64_t> largest_first(const Shifted& g, int64_t tm, int64_t tn, int64_t mtiles,
                                   int64_t per_image) {
  auto size = [&](int64_t t) {
    return std::min(tm, g.M - t % mtiles * tm) * std::min(tn, g.P - t / mtiles * tn);
  };
  std::vector<int64_t> order(static_cast<size_t>(per_image));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return size(a) > size(b);
  });
  return order;
}

// Images interleaved: where an image's outputs fill its column panels poorly (7x7: 63 sums
// over the phase width, 49 of them outputs, in 64 columns), the padded copy takes the image as
// its innermost index (Layout: N floats an element), so the outputs (ow, n) of one output row
// oh are OW * N columns in a row with no padding between. A tile is (output row, row tile of
// the outputs, block of whole outputs of all images). For ResNet-18's 3x3 convolutions at batch
// 32 on 1 thread that paid at 7x7 (153-157 -> 159-188 GFLOP/s) but not at 14x14 (within noise)
// or 28x28 (180 -> 161: each tap row spans three times the cache lines), nor with stride 2.
bool interleaves(const Shifted& g, int64_t n) {
  const int64_t cols = g.OW * n;
  const double mine = static_cast<double>(g.OH * g.OW) / static_cast<double>(panels(g.P) * kGemmNR);
  const double theirs = static_cast<double>(cols) / static_cast<double>(panels(cols) * kGemmNR);
  return n > 1 && g.SH == 1 && g.SW == 1 && theirs >= 1.2 * mine &&
         16 * g.C * g.H * g.W < (int64_t{1} << 31);
}

// A pitch of at least `floats`, whole cache lines, and not a multiple of 2 KiB: rows, phases
// or channels that far apart would share L1 sets (a 14x14 plane of 32 images is 32 KiB).
int64_t pitch(int64_t floats) {
  const int64_t line = 16;
  const int64_t n = (floats + line - 1) / line * line;
  return n % 512 == 0 ? n + line : n;
}

Layout interleaved_layout(const Shifted& g, int64_t n_images) {
  Layout l{0, 0, pitch(g.Wq * n_images), n_images};
  l.phase = pitch(g.Hq * l.row);
  l.channel = pitch(g.SH * g.SW * l.phase);
  return l;
}

// Lane l: l * step (a gather's offsets over 16 images or 16 columns).
__m512i lane_steps(int64_t step) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int>(step)));
}

// Channel c of all N images, padded, into the interleaved copy xq: each element of 16 images
// at a time, gathered from their planes.
void interleave_channel(const Shifted& g, const Layout& l, const float* x, int64_t c, float* xq) {
  const int64_t in = g.C * g.H * g.W, n_images = l.unit;
  const __m512i images = lane_steps(in);
  for (int64_t ph = 0; ph < g.SH * g.SW; ++ph) {
    for (int64_t i = 0; i < g.Hq; ++i) {
      float* row = xq + l.at(c, ph, i, 0);
      const int64_t ih = i * g.SH + ph / g.SW - g.PT;
      for (int64_t j = 0; j < g.Wq; ++j) {
        const int64_t iw = j * g.SW + ph % g.SW - g.PL;
        float* d = row + j * n_images;
        if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) {
          zero_floats(d, n_images);
          continue;
        }
        const float* src = x + (c * g.H + ih) * g.W + iw;
        for (int64_t n = 0; n < n_images; n += 16) {
          const __mmask16 k = lane_mask(n_images - n);
          _mm512_mask_storeu_ps(d + n, k, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, images,
                                                                   src + n * in, 4));
        }
      }
    }
  }
}

// Sums of rows [m0, m0 + rows) over outputs [ow0, ow1) of output row oh (column (ow - ow0) * N
// + n: output ow of image n) into y with the bias and the epilogue, in write_tile's order.
void write_interleaved(const Shifted& g, int64_t n_images, const float* tile, int64_t ld,
                       int64_t oh, int64_t m0, int64_t rows, int64_t ow0, int64_t ow1,
                       const float* b, const ConvEpilogue& e, float* y) {
  const int64_t out = g.M * g.OH * g.OW;
  const __m512i cols = lane_steps(n_images);
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t m = m0 + i;
    for (int64_t n = 0; n < n_images; ++n) {
      const int64_t at = n * out + (m * g.OH + oh) * g.OW;
      for (int64_t ow = ow0; ow < ow1; ow += 16) {
        const __mmask16 k = lane_mask(ow1 - ow);
        const float* s = tile + i * ld + (ow - ow0) * n_images + n;
        finish_vector(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, cols, s, 4), k,
                      b != nullptr ? b + m : nullptr,
                      e.residual != nullptr ? e.residual + at + ow : nullptr, e.act, lo, hi,
                      y + at + ow);
      }
    }
  }
}

// The conv on the interleaved copy (interleaves): every channel of every image padded, then
// the tiles (output row, row tile, block of whole outputs of all images).
void interleaved(const Shifted& g, int64_t n_images, const float* x, const float* packed_w,
                 const float* b, const ConvEpilogue& e, float* y, int threads) {
  const int64_t k = g.C * g.KH * g.KW;
  const Layout l = interleaved_layout(g, n_images);
  const std::vector<int64_t> boff = tap_offsets(g, l);
  const int64_t floats = g.C * l.channel;
  const int64_t tm = 4 * kGemmMR, mtiles = (g.M + tm - 1) / tm;
  const int64_t blocks = (g.OW * n_images + 511) / 512, bw = (g.OW + blocks - 1) / blocks;
  const int64_t tn = panels(bw * n_images) * kGemmNR, per_row = blocks * mtiles;
  thread_local std::vector<float> copy;
  float* xq = grown(copy, static_cast<size_t>(floats + kGemmNR));  // + the last panel's overrun
  std::fill(xq + floats, xq + floats + kGemmNR, 0.0f);
  parallel_for(threads, g.C, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) interleave_channel(g, l, x, c, xq);
  });
  parallel_tasks(threads, g.OH * per_row, [&](int64_t t) {
    thread_local std::vector<float> sums;
    float* s = grown(sums, static_cast<size_t>(tm * tn));
    const int64_t oh = t / per_row, ow0 = t % per_row / mtiles * bw, m0 = t % mtiles * tm;
    const int64_t rows = std::min(tm, g.M - m0), ow1 = std::min(g.OW, ow0 + bw);
    gemm_shifted(rows, (ow1 - ow0) * n_images, k, packed_w + m0 * k,
                 xq + oh * l.row + ow0 * n_images, boff.data(), s, tn);
    write_interleaved(g, n_images, s, tn, oh, m0, rows, ow0, ow1, b, e, y);
  });
}

// Each thread pads its own images when it gets several (or is the only one); otherwise they
// are padded in rounds shared by all threads (`whole` in conv_shifted).
bool pads_own_images(const ConvParams& p, int threads) {
  return threads <= 1 || p.N >= 4 * int64_t{threads};
}

}  // namespace

bool conv_shifted_interleaves(const ConvParams& p) {
  if (p.in.size() != 2 || p.G != 1 || p.w.kernel[0] * p.w.kernel[1] == 1) return false;
  const Shifted g = shifted_geometry(p);
  return g.OH > 0 && g.OW > 0 && interleaves(g, p.N);
}

bool conv_shifted_applies(const ConvParams& p, int threads) {
  if (conv_shifted_interleaves(p)) return true;
  // A stem over a few input channels (RGB) padded in rounds stays on im2col: ResNet-18's 7x7/2
  // stem took 71-72 ms a batch of 32 in rounds against 57-68 ms on im2col (2 threads), but 26
  // ms against 37 with each thread padding its own images (and 51 against 94 on 1 thread). A
  // single image is one round, padded once: MobileNetV2's 3x3/2 stem on 2 threads 194-221 us
  // against 239-251 on im2col, ResNet-18's 1303-1470 against 1475-1675.
  if (p.in.size() != 2 || p.G != 1 || p.w.kernel[0] * p.w.kernel[1] == 1 ||
      (p.C < 8 && !pads_own_images(p, threads) && p.N > 1)) {
    return false;
  }
  const Shifted g = shifted_geometry(p);
  // Narrow outputs waste too many columns: keep within a quarter more panels than im2col.
  return g.OH > 0 && g.OW > 0 && 4 * panels(g.P) <= 5 * panels(g.OH * g.OW);
}

bool conv_shifted(const ConvParams& p, const float* x, const float* packed_w, const float* b,
                  float* y, const ConvEpilogue& e, int threads) {
  if (packed_w == nullptr || !conv_shifted_applies(p, threads)) return false;
  if (conv_shifted_interleaves(p)) {
    interleaved(shifted_geometry(p), p.N, x, packed_w, b, e, y, threads);
    return true;
  }
  const bool own = pads_own_images(p, threads);
  const Shifted g = shifted_geometry(p);
  const int64_t k = g.C * g.KH * g.KW, plane = g.SH * g.SW * g.Hq * g.Wq;
  const std::vector<int64_t> boff = tap_offsets(g, image_layout(g));
  // A tile: (row tile of 4 micro-panels, column block of up to 512 sums) of one image. Column
  // blocks narrow (to 64) while the batch gives fewer than 8 tiles a thread. (Tiling never
  // changes a sum: each element is summed over k in the same order.)
  const int64_t tm = 4 * kGemmMR, mtiles = (g.M + tm - 1) / tm;
  int64_t tn = 512;
  while (tn > 2 * kGemmNR && p.N * ((g.P + tn - 1) / tn) * mtiles < 8 * int64_t{threads}) tn /= 2;
  // Over few taps (an RGB stem's 27) writing the sums to the tile and then the outputs from it
  // took half as long as the sums (MobileNetV2's stem at batch 32: 30 % of its time in
  // write_tile): there each output row is a GEMM of its own, written in place with the epilogue
  // by the micro-kernel, and a tile is a block of whole output rows (the row's last panel then
  // computes up to 31 unused columns). That stem alone: 303 -> 288 us at batch 1 on 1 thread,
  // 170 -> 165 on 2, 14.8 -> 14.5 ms at batch 32 (the sums themselves are the rest).
  constexpr int64_t kDirectTaps = 64;
  const bool direct = k <= kDirectTaps && g.OW >= kGemmNR;
  const bool stream = streams_output(p.N * g.M * g.OH * g.OW);
  const int64_t block_rows = std::max<int64_t>(1, tn / g.Wq);
  const int64_t per_image =
      (direct ? (g.OH + block_rows - 1) / block_rows : (g.P + tn - 1) / tn) * mtiles;
  // The last panel reads up to kGemmNR - 1 columns past P, and the last tap (KW - 1) * DW more.
  const int64_t image = g.C * plane, slack = kGemmNR + (g.KW - 1) * g.DW;
  const int64_t in = g.C * g.H * g.W, out = g.M * g.OH * g.OW;
  // Tile t of image n from its padded copy xi.
  auto tile = [&](const float* xi, int64_t n, int64_t t) {
    if (direct) {
      const int64_t m0 = (t % mtiles) * tm, rows = std::min(tm, g.M - m0);
      const int64_t oh0 = (t / mtiles) * block_rows, oh1 = std::min(g.OH, oh0 + block_rows);
      const int64_t plane_out = g.OH * g.OW;
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        const int64_t at = n * out + m0 * plane_out + oh * g.OW;
        const GemmEpilogue ge{b != nullptr ? b + m0 : nullptr,
                              e.residual != nullptr ? e.residual + at : nullptr,
                              plane_out,
                              e.act,
                              e.lo,
                              e.hi,
                              stream};
        gemm_shifted(rows, g.OW, k, packed_w + m0 * k, xi + oh * g.Wq, boff.data(), y + at,
                     plane_out, ge);
      }
      return;
    }
    thread_local std::vector<float> sums;
    float* s = grown(sums, static_cast<size_t>(tm * tn));
    const int64_t m0 = (t % mtiles) * tm, j0 = (t / mtiles) * tn;
    const int64_t rows = std::min(tm, g.M - m0), cols = std::min(tn, g.P - j0);
    gemm_shifted(rows, cols, k, packed_w + m0 * k, xi + j0, boff.data(), s, tn);
    const int64_t at = n * out;
    write_tile(g, s, tn, m0, rows, j0, cols, b, e,
               e.residual != nullptr ? e.residual + at : nullptr, y + at);
  };
  // With several images a thread, a task is an image: its thread pads it into a buffer of its
  // own (which stays in its cache) and computes all its tiles, with no barrier between padding
  // and multiplying. With fewer, whole images would leave threads idle at the end (and did on
  // the 16-thread GPU host at 2 images a thread: 2.6-2.8 s against 2.3-2.5 s to calibrate).
  const int64_t whole = own ? p.N / threads * threads : 0;
  parallel_tasks(threads, whole, [&](int64_t n) {
    thread_local std::vector<float> mine;
    float* xi = grown(mine, static_cast<size_t>(image + slack));
    std::fill(xi + image, xi + image + slack, 0.0f);
    pad_planes(g, x + n * in, 0, g.C, xi);
    for (int64_t t = 0; t < per_image; ++t) tile(xi, n, t);
  });
  // The other images are padded and multiplied in even rounds of enough of them for about 8
  // tiles a thread, each round's tiles handed out one at a time, the largest first (so the
  // last ones are the small edge tiles, and the threads finish together).
  const int64_t left = p.N - whole;
  if (left == 0) return true;
  const std::vector<int64_t> order = largest_first(g, tm, tn, mtiles, per_image);
  const int64_t rounds = std::clamp<int64_t>(left * per_image / (8 * int64_t{threads}), 1, left);
  const int64_t round = (left + rounds - 1) / rounds;
  thread_local std::vector<float> padded;
  float* xp = grown(padded, static_cast<size_t>(round * image + slack));
  std::fill(xp + round * image, xp + round * image + slack, 0.0f);
  for (int64_t n0 = whole; n0 < p.N; n0 += round) {
    const int64_t images = std::min(round, p.N - n0);
    parallel_for(threads, images * g.C, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t i = t / g.C, c = t % g.C;
        pad_planes(g, x + (n0 + i) * in, c, c + 1, xp + i * image);
      }
    });
    parallel_tasks(threads, images * per_image, [&](int64_t t) {
      const int64_t i = t % images;
      tile(xp + i * image, n0 + i, order[static_cast<size_t>(t / images)]);
    });
  }
  return true;
}

#else

bool conv_shifted_interleaves(const ConvParams&) { return false; }

bool conv_shifted_applies(const ConvParams&, int) { return false; }

bool conv_shifted(const ConvParams&, const float*, const float*, const float*, float*,
                  const ConvEpilogue&, int) {
  return false;
}

#endif

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
