// Single-precision GEMM blocks on Eigen (no Eigen threading: callers tile and parallelise with
// a partition that does not depend on the thread count).
#pragma once

#include <cstdint>

namespace ptq::runtime::cpu {

// C[m x n] (row stride ldc) = op(A)[m x k] * op(B)[k x n], all row-major; op transposes when
// asked (then A is stored k x m with row stride lda, B n x k with row stride ldb).
// Overwrites C. One thread.
void sgemm_block(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// The same on `threads` threads: C is cut into fixed tiles (sizes from m, n, k only), so every
// element is computed by the same code for any thread count.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int threads);

// Tile sizes of sgemm's partition (rows, cols) for a problem.
void sgemm_tiles(int64_t m, int64_t n, int64_t k, int64_t& tile_m, int64_t& tile_n);

}  // namespace ptq::runtime::cpu
