// sgemm on Eigen, compiled once per instruction-set level with Eigen's packets of that level
// (docs/DESIGN.md, "Instruction sets": why Eigen is renamed per level).
// The standard headers Eigen/Core includes, first, so that they are compiled for the baseline.
#include <cassert>
#include <cerrno>
#include <climits>
#include <complex>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>

#include "isa_begin.h"  // this file is compiled once per instruction-set level
#include "eigen_level.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

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

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
