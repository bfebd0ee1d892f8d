// Depthwise 3x3 convolution (stride 1 or 2, dilation 1, any pads) on NCHW planes, read in
// place: each tap of a block of output columns is one masked row load (stride 2: two loads
// narrowed to their even lanes), lanes outside the image or the block are not read and count
// as zero, so no padded copy of the plane is made. Rows outside the image load nothing. Each
// output sums its taps in (kh, kw) order from zero, then the bias and the epilogue; blocks of
// R rows x V vectors give R * V independent FMA chains (the FMA latency needs about 8).

// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <vector>

#include "conv.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

#if PTQ_AVX512

namespace {

struct Plane {
  int64_t H, W, OH, OW, S, PT, PL;
};

// Lanes l < 16 with lo <= first + l < hi.
__mmask16 lanes_in(int64_t first, int64_t lo, int64_t hi) {
  unsigned m = 0;
  for (int64_t l = 0; l < 16; ++l) {
    if (first + l >= lo && first + l < hi) m |= 1u << l;
  }
  return static_cast<__mmask16>(m);
}

// What one vector of a column block reads for tap kw: input columns from `at` on (relative to
// the row), masked; for stride 2 the 32 columns at..at+31 as two masks.
struct Tap {
  int64_t at;
  __mmask16 lo, hi;
};

// The taps of one column block of V vectors (16 * V output columns from ow0) and its store
// masks. Depends on the geometry only, so it is made once per call for all planes.
template <int V>
struct ColumnBlock {
  int64_t ow0;
  Tap tap[V][3];
  __mmask16 store[V];
};

template <int V>
std::vector<ColumnBlock<V>> column_blocks(const Plane& g) {
  std::vector<ColumnBlock<V>> blocks;
  for (int64_t ow0 = 0; ow0 < g.OW; ow0 += 16 * V) {
    ColumnBlock<V> cb{};
    cb.ow0 = ow0;
    for (int v = 0; v < V; ++v) {
      const int64_t first = ow0 + 16 * v;            // output column of lane 0
      const int64_t lanes = std::clamp<int64_t>(g.OW - first, 0, 16);
      cb.store[v] = lanes_in(0, 0, lanes);
      for (int64_t kw = 0; kw < 3; ++kw) {
        Tap& t = cb.tap[v][kw];
        t.at = first * g.S - g.PL + kw;  // input column of lane 0
        if (g.S == 1) {
          t.lo = lanes_in(t.at, 0, g.W) & cb.store[v];
          t.hi = 0;
        } else {  // input lane i feeds output lane i / 2 when i is even
          const int64_t need = 2 * lanes;
          t.lo = lanes_in(t.at, 0, g.W) & lanes_in(0, 0, need);
          t.hi = lanes_in(t.at + 16, 0, g.W) & lanes_in(16, 0, need);
        }
      }
    }
    blocks.push_back(cb);
  }
  return blocks;
}

template <int S>
inline __m512 load_tap(const float* row, const Tap& t) {
  // A masked-off lane is not read, so the address may point before or past the row.
  if constexpr (S == 1) {
    return _mm512_maskz_loadu_ps(t.lo, row + t.at);
  } else {
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512 a = _mm512_maskz_loadu_ps(t.lo, row + t.at);
    const __m512 b = _mm512_maskz_loadu_ps(t.hi, row + t.at + 16);
    return _mm512_permutex2var_ps(a, even, b);
  }
}

// Everything one plane's blocks share.
struct PlaneJob {
  const float* x;    // the input plane
  const float* zero;  // a row of W zeros, read in place of rows outside the image
  const float* res;  // the residual plane (laid out as y), or null
  float* y;          // the output plane
  float bias;
  __m512 w[9];
};

// R output rows from oh0 x one column block: taps, then bias, residual and activation. Each
// input row the block spans is loaded once (3 taps x V vectors) and added into every output
// row that uses it; an output row meets its rows in kh order, so its taps still sum in (kh, kw)
// order. Rows outside the image load zeros; rows past OH are computed and not stored.
template <int R, int V, int S>
void block(const Plane& g, const PlaneJob& j, const ColumnBlock<V>& cb, int64_t oh0,
           const ConvEpilogue& e) {
  constexpr int kIn = (R - 1) * S + 3;
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  }
#pragma GCC unroll 32
  for (int i = 0; i < kIn; ++i) {
    const int64_t ih = oh0 * S - g.PT + i;
    const float* row = ih >= 0 && ih < g.H ? j.x + ih * g.W : j.zero;
    __m512 t[3][V];
#pragma GCC unroll 3
    for (int kw = 0; kw < 3; ++kw) {
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) t[kw][v] = load_tap<S>(row, cb.tap[v][kw]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const int kh = i - r * S;
      if (kh < 0 || kh > 2) continue;
#pragma GCC unroll 3
      for (int kw = 0; kw < 3; ++kw) {
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
          acc[r][v] = _mm512_fmadd_ps(j.w[kh * 3 + kw], t[kw][v], acc[r][v]);
        }
      }
    }
  }
  const __m512 b = _mm512_set1_ps(j.bias), lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    if (oh0 + r >= g.OH) break;
    const int64_t at = (oh0 + r) * g.OW + cb.ow0;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 out = _mm512_add_ps(acc[r][v], b);
      if (j.res != nullptr) {
        out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(cb.store[v], j.res + at + 16 * v));
      }
      _mm512_mask_storeu_ps(j.y + at + 16 * v, cb.store[v], activate(out, e.act, lo, hi));
    }
  }
}

template <int R, int V, int S>
void run_planes(const Plane& g, int64_t planes, int64_t mult, int64_t channels, const float* x,
                const float* w, const float* b, float* y, const ConvEpilogue& e, int threads) {
  const std::vector<ColumnBlock<V>> blocks = column_blocks<V>(g);
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  const std::vector<float> zero(static_cast<size_t>(g.W), 0.0f);
  parallel_for(threads, planes, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / channels, m = t % channels;
      PlaneJob j;
      j.x = x + (n * (channels / mult) + m / mult) * in_plane;
      j.zero = zero.data();
      j.res = e.residual != nullptr ? e.residual + t * out_plane : nullptr;
      j.y = y + t * out_plane;
      j.bias = b != nullptr ? b[m] : 0.0f;
      for (int i = 0; i < 9; ++i) j.w[i] = _mm512_set1_ps(w[m * 9 + i]);
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += R) {
        for (const ColumnBlock<V>& cb : blocks) block<R, V, S>(g, j, cb, oh0, e);
      }
    }
  });
}

}  // namespace

bool depthwise3x3_applies(const ConvParams& p) {
  if (p.in.size() != 2 || p.C != p.G || p.w.kernel != std::vector<int64_t>{3, 3} ||
      p.w.dilations != std::vector<int64_t>{1, 1} || p.w.strides[0] != p.w.strides[1] ||
      (p.w.strides[0] != 1 && p.w.strides[0] != 2)) {
    return false;
  }
  // Plane sizes well inside int32 keep every column offset exact; degenerate planes go elsewhere.
  const int64_t h = p.in[0], w = p.in[1];
  return h > 0 && w > 0 && p.out[0] > 0 && p.out[1] > 0 && h * w < (int64_t{1} << 30);
}

bool depthwise3x3(const ConvParams& p, const float* x, const float* w, const float* b, float* y,
                  const ConvEpilogue& e, int threads) {
  if (!depthwise3x3_applies(p)) return false;
  const Plane g{p.in[0], p.in[1], p.out[0], p.out[1], p.w.strides[0], p.w.pad_begin(0),
                p.w.pad_begin(1)};
  const int64_t planes = p.N * p.M, mult = p.M / p.G;
  // Wide planes: 4 rows x 2 vectors; narrow ones (<= 16 columns): 8 rows x 1 vector.
  if (g.OW > 16) {
    if (g.S == 1) {
      run_planes<4, 2, 1>(g, planes, mult, p.M, x, w, b, y, e, threads);
    } else {
      run_planes<4, 2, 2>(g, planes, mult, p.M, x, w, b, y, e, threads);
    }
  } else if (g.S == 1) {
    run_planes<8, 1, 1>(g, planes, mult, p.M, x, w, b, y, e, threads);
  } else {
    run_planes<8, 1, 2>(g, planes, mult, p.M, x, w, b, y, e, threads);
  }
  return true;
}

#else

bool depthwise3x3_applies(const ConvParams&) { return false; }

bool depthwise3x3(const ConvParams&, const float*, const float*, const float*, float*,
                  const ConvEpilogue&, int) {
  return false;
}

#endif

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
