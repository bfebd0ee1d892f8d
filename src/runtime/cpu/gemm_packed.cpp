// GCC 12 reports a false "may be used uninitialized" inside its own AVX-512 min/max intrinsics
// (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "gemm_packed.h"

#include "lanes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

constexpr int64_t MR = kGemmMR, NR = kGemmNR;
// k is consumed in blocks of kKc: an A micro-panel (kKc x MR) stays in L1 while the B panels
// of the block stream from L2. Partial sums go through C between blocks; a float stored and
// loaded back is unchanged, so blocking does not change any result.
constexpr int64_t kKc = 256;
// Columns per outer block: the B block (kKc x kNc floats, 512 KiB) stays in L2.
constexpr int64_t kNc = 512;
// A rows the micro-kernel prefetches ahead when its A micro-panel is not in cache yet (the
// first column panel of a block reads the weights from memory; the later ones find them in L1).
constexpr int64_t kAheadA = 16;

// One call of the micro-kernel: C tile (R x cols, cols <= NR) = (first ? 0 : C) + A * B over
// kc, then the epilogue when `last`.
struct Tile {
  int64_t kc;
  const float* a;  // kc x MR
  const float* b;  // kc x NR
  float* c;
  int64_t ldc, cols;
  bool first, last;
  const float* bias;  // R row biases, or null
  const float* res;   // the residual tile (row stride ldr), or null
  int64_t ldr;
  Activation act;
  float lo, hi;
  bool stream;  // GemmEpilogue::stream
  bool cold_a;  // the block's first column panel: A is read from memory, prefetched ahead
};

#if PTQ_AVX512

// Where the micro-kernel reads row q of its B panel (kGemmNR floats, two vectors) from.
struct PackedRows {  // a packed panel (pack_b): rows NR floats apart
  const float* b;
  void load(int64_t q, __m512& b0, __m512& b1) const {
    b0 = _mm512_loadu_ps(b + q * NR);
    b1 = _mm512_loadu_ps(b + q * NR + 16);
  }
};

// Row q at b + off[q] (gemm_shifted). With kFar (rows a plane apart: a 1x1 conv's input read
// in place) each load also prefetches its row a panel on: the panels of a block are read in
// column order, each touching every row, and with 24 to 256 rows far apart the hardware
// prefetcher does not follow them all, so rows not in cache (batch 32: inputs of 25-77 MB) were
// read at memory latency. A 1x1 conv 96 -> 24 at 56x56, batch 32, input from memory: 16.6 ->
// 6.5 ms (docs/perf-history.md). Four panels on (up to 128 KiB of rows before their use, more than
// L1) measured the same at batch 32 and 3 % slower for MobileNetV2 at batch 1 on two threads, where
// half of each row comes from the other core. Rows of a padded copy (a larger kernel's taps) are in
// cache and read as they are.
template <bool kFar>
struct ShiftedRows {
  static constexpr int64_t kAhead = NR;  // floats: a panel on, two cache lines
  const float* b;
  const int64_t* off;
  void load(int64_t q, __m512& b0, __m512& b1) const {
    const float* row = b + off[q];
    if (kFar) {
      _mm_prefetch(reinterpret_cast<const char*>(row + kAhead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(row + kAhead + 16), _MM_HINT_T0);
    }
    b0 = _mm512_loadu_ps(row);
    b1 = _mm512_loadu_ps(row + 16);
  }
};

// Whether every row of a tile at c (row stride ldc) starts on a 64-byte line.
inline bool streamable(const float* c, int64_t ldc) {
  return reinterpret_cast<uintptr_t>(c) % 64 == 0 && ldc % 16 == 0;
}

template <int R, typename Rows>
void micro_rows(const Tile& t, const Rows& rows) {
  const __mmask16 m0 = lane_mask(t.cols), m1 = lane_mask(t.cols - 16);
  __m512 c0[R], c1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    if (t.first) {
      c0[r] = _mm512_setzero_ps();
      c1[r] = _mm512_setzero_ps();
    } else {
      c0[r] = _mm512_maskz_loadu_ps(m0, t.c + r * t.ldc);
      c1[r] = _mm512_maskz_loadu_ps(m1, t.c + r * t.ldc + 16);
    }
  }
  const float* a = t.a;
  for (int64_t q = 0; q < t.kc; ++q, a += MR) {
    if (t.cold_a) _mm_prefetch(reinterpret_cast<const char*>(a + kAheadA * MR), _MM_HINT_T0);
    __m512 b0, b1;
    rows.load(q, b0, b1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
  }
  if (t.last) {
    const __m512 lo = _mm512_set1_ps(t.lo), hi = _mm512_set1_ps(t.hi);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (t.bias != nullptr) {
        const __m512 bv = _mm512_set1_ps(t.bias[r]);
        c0[r] = _mm512_add_ps(c0[r], bv);
        c1[r] = _mm512_add_ps(c1[r], bv);
      }
      if (t.res != nullptr) {  // masked-off lanes read nothing (and are not stored)
        c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, t.res + r * t.ldr));
        c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, t.res + r * t.ldr + 16));
      }
      c0[r] = activate(c0[r], t.act, lo, hi);
      c1[r] = activate(c1[r], t.act, lo, hi);
    }
  }
  if (t.stream && t.last && t.cols == NR && streamable(t.c, t.ldc)) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      _mm512_stream_ps(t.c + r * t.ldc, c0[r]);
      _mm512_stream_ps(t.c + r * t.ldc + 16, c1[r]);
    }
    return;
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(t.c + r * t.ldc, m0, c0[r]);
    _mm512_mask_storeu_ps(t.c + r * t.ldc + 16, m1, c1[r]);
  }
}

template <int R>
void micro(const Tile& t) {
  micro_rows<R>(t, PackedRows{t.b});
}

// One row of C over P whole panels at once (t.b: the first; panels NR * t.kc floats apart; the
// whole of k): each column's sum and epilogue as micro<1> makes them, so the same bits. A
// matrix-vector product (a classifier at batch 1) reads each weight once; one panel at a time
// kept one stream of them in flight, P at a time keeps P (a 5 MB classifier out of cache:
// 360 -> 190 us).
template <int P>
void row_panels(const Tile& t) {
  __m512 c[2 * P];
#pragma GCC unroll 16
  for (int i = 0; i < 2 * P; ++i) c[i] = _mm512_setzero_ps();
  const int64_t stride = NR * t.kc;
  for (int64_t q = 0; q < t.kc; ++q) {
    const __m512 av = _mm512_set1_ps(t.a[q * MR]);
    const float* b = t.b + q * NR;
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      c[2 * p] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + p * stride), c[2 * p]);
      c[2 * p + 1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(b + p * stride + 16), c[2 * p + 1]);
    }
  }
  const __m512 lo = _mm512_set1_ps(t.lo), hi = _mm512_set1_ps(t.hi);
#pragma GCC unroll 16
  for (int i = 0; i < 2 * P; ++i) {
    __m512 v = c[i];
    if (t.bias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(t.bias[0]));
    if (t.res != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(t.res + 16 * i));
    _mm512_storeu_ps(t.c + 16 * i, activate(v, t.act, lo, hi));
  }
}

// micro_rows<R, Rows> for R = 1..MR rows.
template <typename Rows>
using RowsFn = void (*)(const Tile&, const Rows&);

template <typename Rows, int... Rs>
constexpr auto rows_table(std::integer_sequence<int, Rs...>) {
  return std::array<RowsFn<Rows>, sizeof...(Rs)>{&micro_rows<Rs + 1, Rows>...};
}

template <typename Rows>
constexpr auto kRowsMicro =
    rows_table<Rows>(std::make_integer_sequence<int, static_cast<int>(MR)>{});

#elif PTQ_AVX2

template <int R>
void micro(const Tile& t) {
  // Column tails go through a full-width buffer (AVX2 has no cheap masked float store).
  alignas(32) float edge[R][NR];
  float* c = t.c;
  int64_t ldc = t.ldc;
  if (t.cols < NR) {
    for (int r = 0; r < R; ++r) {
      for (int64_t j = 0; j < NR; ++j)
        edge[r][j] = !t.first && j < t.cols ? t.c[r * t.ldc + j] : 0.0f;
    }
    c = &edge[0][0];
    ldc = NR;
  }
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; ++r) {
    c0[r] = t.first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    c1[r] = t.first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  const float* a = t.a;
  const float* b = t.b;
  for (int64_t q = 0; q < t.kc; ++q, a += MR, b += NR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
    }
  }
  if (t.last) {
    const __m256 lo = _mm256_set1_ps(t.lo), hi = _mm256_set1_ps(t.hi);
    alignas(32) float res[NR] = {};  // a column tail of the residual, zero-padded
    for (int r = 0; r < R; ++r) {
      if (t.bias != nullptr) {
        const __m256 bv = _mm256_set1_ps(t.bias[r]);
        c0[r] = _mm256_add_ps(c0[r], bv);
        c1[r] = _mm256_add_ps(c1[r], bv);
      }
      if (t.res != nullptr) {
        const float* rr = t.res + r * t.ldr;
        if (t.cols < NR) {
          std::copy(rr, rr + t.cols, res);
          rr = res;
        }
        c0[r] = _mm256_add_ps(c0[r], _mm256_loadu_ps(rr));
        c1[r] = _mm256_add_ps(c1[r], _mm256_loadu_ps(rr + 8));
      }
      c0[r] = activate(c0[r], t.act, lo, hi);
      c1[r] = activate(c1[r], t.act, lo, hi);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * ldc, c0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, c1[r]);
  }
  if (t.cols < NR) {
    for (int r = 0; r < R; ++r) std::copy(edge[r], edge[r] + t.cols, t.c + r * t.ldc);
  }
}

#else

// Portable: the same blocking in plain loops the compiler can vectorise.
template <int R>
void micro(const Tile& t) {
  float acc[R][NR];
  for (int r = 0; r < R; ++r) {
    for (int64_t j = 0; j < NR; ++j) acc[r][j] = !t.first && j < t.cols ? t.c[r * t.ldc + j] : 0.0f;
  }
  for (int64_t q = 0; q < t.kc; ++q) {
    for (int r = 0; r < R; ++r) {
      for (int64_t j = 0; j < NR; ++j) acc[r][j] += t.a[q * MR + r] * t.b[q * NR + j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int64_t j = 0; j < t.cols; ++j) {
      float v = acc[r][j];
      if (t.last && t.bias != nullptr) v += t.bias[r];
      if (t.last && t.res != nullptr) v += t.res[r * t.ldr + j];
      if (t.last) v = activate(v, t.act, t.lo, t.hi);
      t.c[r * t.ldc + j] = v;
    }
  }
}

#endif

using MicroFn = void (*)(const Tile&);

template <int... Rs>
constexpr auto micro_table(std::integer_sequence<int, Rs...>) {
  return std::array<MicroFn, sizeof...(Rs)>{&micro<Rs + 1>...};
}

// micro<R> for R = 1..MR rows, so row tails cost no wasted multiply-adds.
constexpr auto kMicro = micro_table(std::make_integer_sequence<int, static_cast<int>(MR)>{});

}  // namespace

void pack_a(bool trans, int64_t m, int64_t k, const float* a, int64_t lda, float* out) {
  for (int64_t i0 = 0; i0 < m; i0 += MR) {
    const int64_t rows = std::min(MR, m - i0);
    float* panel = out + i0 * k;  // panels are MR * k floats apart
    for (int64_t q = 0; q < k; ++q) {
      float* dst = panel + q * MR;
      for (int64_t r = 0; r < rows; ++r)
        dst[r] = trans ? a[q * lda + i0 + r] : a[(i0 + r) * lda + q];
      std::fill(dst + rows, dst + MR, 0.0f);
    }
  }
}

void pack_b(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb, float* out) {
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const int64_t cols = std::min(NR, n - j0);
    float* panel = out + j0 * k;
    for (int64_t q = 0; q < k; ++q) {
      float* dst = panel + q * NR;
      if (trans) {
        for (int64_t j = 0; j < cols; ++j) dst[j] = b[(j0 + j) * ldb + q];
      } else {
        std::copy(b + q * ldb + j0, b + q * ldb + j0 + cols, dst);
      }
      std::fill(dst + cols, dst + NR, 0.0f);
    }
  }
}

namespace {

// The blocking both GEMMs share: for each block of kNc columns (B block in L2), each kKc slice
// of k, each MR-row micro-panel of A (in L1) and each NR-column panel, fn(i0, rows, j0, cols, k0,
// kc) computes that tile's slice of the sum.
template <typename F>
void for_each_tile(int64_t m, int64_t n, int64_t k, F&& fn) {
  for (int64_t j1 = 0; j1 < n; j1 += kNc) {
    const int64_t j1_end = std::min(n, j1 + kNc);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      for (int64_t i0 = 0; i0 < m; i0 += MR) {
        for (int64_t j0 = j1; j0 < j1_end; j0 += NR) {
          fn(i0, std::min(MR, m - i0), j0, std::min(NR, n - j0), k0, kc);
        }
      }
    }
  }
}

// The micro-kernel call for rows from i0 and columns [j0, j0 + cols) over the k slice [k0, k0 +
// kc) of C = A * B (A packed, m x k): the epilogue applies once the slice ends the sum.
Tile tile_at(const float* pa, const float* pb, float* c, int64_t ldc, const GemmEpilogue& e,
             int64_t k, int64_t i0, int64_t j0, int64_t cols, int64_t k0, int64_t kc) {
  return Tile{kc,
              pa + i0 * k + k0 * MR,
              pb,
              c + i0 * ldc + j0,
              ldc,
              cols,
              k0 == 0,
              k0 + kc == k,
              e.row_bias != nullptr ? e.row_bias + i0 : nullptr,
              e.residual != nullptr ? e.residual + i0 * e.ldr + j0 : nullptr,
              e.ldr,
              e.act,
              e.lo,
              e.hi,
              e.stream,
              j0 % kNc == 0};
}

// C = the epilogue of an empty sum (k = 0).
void empty_sum(int64_t m, int64_t n, float* c, int64_t ldc, const GemmEpilogue& e) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = e.row_bias != nullptr ? 0.0f + e.row_bias[i] : 0.0f;
      if (e.residual != nullptr) v += e.residual[i * e.ldr + j];
      c[i * ldc + j] = activate(v, e.act, e.lo, e.hi);
    }
  }
}

}  // namespace

void gemm_packed(int64_t m, int64_t n, int64_t k, const float* pa, const float* pb, float* c,
                 int64_t ldc, const GemmEpilogue& epilogue) {
  GemmEpilogue e = epilogue;
  if (m <= 0 || n <= 0) return;
  if (k == 0) {
    empty_sum(m, n, c, ldc, e);
    return;
  }
#if PTQ_AVX512
  if (m == 1) {  // groups of 8, then 4 whole panels by row_panels; the rest as below
    int64_t j0 = 0;
    for (; j0 + 8 * NR <= n; j0 += 8 * NR)
      row_panels<8>(tile_at(pa, pb + j0 * k, c, ldc, e, k, 0, j0, NR, 0, k));
    for (; j0 + 4 * NR <= n; j0 += 4 * NR)
      row_panels<4>(tile_at(pa, pb + j0 * k, c, ldc, e, k, 0, j0, NR, 0, k));
    pb += j0 * k, c += j0, n -= j0;
    if (e.residual != nullptr) e.residual += j0;
    if (n == 0) return;
  }
#endif
  for_each_tile(m, n, k, [&](int64_t i0, int64_t rows, int64_t j0, int64_t cols, int64_t k0,
                             int64_t kc) {
    const Tile t = tile_at(pa, pb + j0 * k + k0 * NR, c, ldc, e, k, i0, j0, cols, k0, kc);
    kMicro[static_cast<size_t>(rows - 1)](t);
  });
#if PTQ_AVX512
  if (e.stream) _mm_sfence();  // the streamed stores are seen before whatever follows
#endif
}

bool gemm_shifted(int64_t m, int64_t n, int64_t k, const float* pa, const float* b,
                  const int64_t* boff, float* c, int64_t ldc, const GemmEpilogue& e,
                  bool far_rows) {
#if PTQ_AVX512
  if (m <= 0 || n <= 0) return true;
  if (k == 0) {
    empty_sum(m, n, c, ldc, e);
    return true;
  }
  for_each_tile(m, n, k, [&](int64_t i0, int64_t rows, int64_t j0, int64_t cols, int64_t k0,
                             int64_t kc) {
    const Tile t = tile_at(pa, nullptr, c, ldc, e, k, i0, j0, cols, k0, kc);
    const size_t r = static_cast<size_t>(rows - 1);
    if (far_rows) {
      kRowsMicro<ShiftedRows<true>>[r](t, ShiftedRows<true>{b + j0, boff + k0});
    } else {
      kRowsMicro<ShiftedRows<false>>[r](t, ShiftedRows<false>{b + j0, boff + k0});
    }
  });
  if (e.stream) _mm_sfence();  // the streamed stores are seen before whatever follows
  return true;
#else
  (void)m, (void)n, (void)k, (void)pa, (void)b, (void)boff, (void)c, (void)ldc, (void)e;
  (void)far_rows;
  return false;
#endif
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
