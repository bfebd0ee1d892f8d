// Single-precision GEMM blocks on Eigen (no Eigen threading: callers tile and parallelise with
// a partition that does not depend on the thread count). Compiled once per instruction-set level
// (gemm_kernel.cpp), so each level's namespace declares its own copy.
#pragma once

#include <algorithm>
#include <cstdint>

// C[m x n] (row stride ldc) = op(A)[m x k] * op(B)[k x n], all row-major; op transposes when
// asked (then A is stored k x m with row stride lda, B n x k with row stride ldb).
// Overwrites C. One thread. sgemm: the same on `threads` threads: C is cut into fixed tiles
// (sizes from m, n, k only, sgemm_tiles), so every element is computed by the same code for any
// thread count.
#define PTQ_SGEMM_DECLARATIONS                                                                  \
  void sgemm_block(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, \
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);            \
  void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,       \
             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int threads);

namespace ptq::runtime::cpu {

// Tile sizes of sgemm's partition (rows, cols) for a problem; the same at every level.
inline void sgemm_tiles(int64_t m, int64_t n, int64_t k, int64_t& tile_m, int64_t& tile_n) {
  // Aim for tiles of ~64K multiply-adds per k step or more, so Eigen's packing is amortised,
  // and for at least a few tiles on large problems so threads have work.
  tile_n = n <= 256 ? n : 256;
  tile_m = m <= 64 ? m : 64;
  if (m * n * k < (int64_t{1} << 18)) {  // small: one tile
    tile_m = m;
    tile_n = n;
  }
  tile_m = std::max<int64_t>(tile_m, 1);
  tile_n = std::max<int64_t>(tile_n, 1);
}

namespace baseline {
PTQ_SGEMM_DECLARATIONS
}  // namespace baseline
namespace avx2 {
PTQ_SGEMM_DECLARATIONS
}  // namespace avx2
namespace avx512 {
PTQ_SGEMM_DECLARATIONS
}  // namespace avx512

}  // namespace ptq::runtime::cpu

#undef PTQ_SGEMM_DECLARATIONS
