#include "gemm_kernel.h"

#include <algorithm>

#include <Eigen/Core>

#include "kernel_util.h"

namespace ptq::runtime::cpu {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Stride = Eigen::OuterStride<>;
template <typename M>
using ConstMap = Eigen::Map<const M, Eigen::Unaligned, Stride>;

}  // namespace

void sgemm_block(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  Eigen::Map<RowMat, Eigen::Unaligned, Stride> C(c, m, n, Stride(ldc));
  if (k == 0) {
    C.setZero();
    return;
  }
  // A transposed row-major matrix is the same bytes as a column-major one.
  if (!trans_a && !trans_b) {
    C.noalias() = ConstMap<RowMat>(a, m, k, Stride(lda)) * ConstMap<RowMat>(b, k, n, Stride(ldb));
  } else if (!trans_a && trans_b) {
    C.noalias() = ConstMap<RowMat>(a, m, k, Stride(lda)) * ConstMap<ColMat>(b, k, n, Stride(ldb));
  } else if (trans_a && !trans_b) {
    C.noalias() = ConstMap<ColMat>(a, m, k, Stride(lda)) * ConstMap<RowMat>(b, k, n, Stride(ldb));
  } else {
    C.noalias() = ConstMap<ColMat>(a, m, k, Stride(lda)) * ConstMap<ColMat>(b, k, n, Stride(ldb));
  }
}

void sgemm_tiles(int64_t m, int64_t n, int64_t k, int64_t& tile_m, int64_t& tile_n) {
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

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int threads) {
  int64_t tm = 0, tn = 0;
  sgemm_tiles(m, n, k, tm, tn);
  const int64_t rows = (m + tm - 1) / tm, cols = (n + tn - 1) / tn;
  parallel_for(threads, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i0 = (t / cols) * tm, j0 = (t % cols) * tn;
      const int64_t mi = std::min(tm, m - i0), nj = std::min(tn, n - j0);
      const float* ai = trans_a ? a + i0 : a + i0 * lda;
      const float* bj = trans_b ? b + j0 * ldb : b + j0;
      sgemm_block(trans_a, trans_b, mi, nj, k, ai, lda, bj, ldb, c + i0 * ldc + j0, ldc);
    }
  });
}

}  // namespace ptq::runtime::cpu
