// Einsum's matrix products (einsum_plan.cpp's GemmPlan) on the instruction-set level's own
// sgemm_block, in fixed tiles: bit-identical for any thread count. Compiled once per level; the
// equation, the plan and the reference loop are shared (einsum_equation.cpp, einsum_plan.cpp,
// einsum.cpp). The shared headers are included before isa_begin.h's target pragma, so their
// inline and template functions are compiled for the baseline in every copy.
#include "data_movement.h"
#include "einsum.h"

#include "isa_begin.h"  // this file is compiled once per instruction-set level

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

const float* permuted(const std::optional<std::vector<int64_t>>& strides, const ir::Shape& shape,
                      const float* x, std::vector<float>& buffer, int threads) {
  if (!strides) return x;
  float* dst = grown(buffer, static_cast<size_t>(ir::num_elements(shape)));
  strided_copy(sizeof(float), shape, reinterpret_cast<const std::byte*>(x), 0, *strides,
               reinterpret_cast<std::byte*>(dst), threads);
  return dst;
}

void run_gemm(const einsum::GemmPlan& p, const float* a, const float* b, float* y,
              const ir::Shape& y_shape, int threads) {
  if (p.batch * p.m * p.n == 0) return;  // no output elements
  thread_local std::vector<float> a_buffer, b_buffer, c_buffer;
  a = permuted(p.permute_a, p.permuted_a, a, a_buffer, threads);
  b = permuted(p.permute_b, p.permuted_b, b, b_buffer, threads);
  const int64_t mn = p.m * p.n;
  float* c = p.scatter_c ? grown(c_buffer, static_cast<size_t>(p.batch * mn)) : y;
  if (p.k == 0) {
    std::fill(c, c + p.batch * mn, 0.0f);
  } else {
    int64_t tm = 0, tn = 0;
    sgemm_tiles(p.m, p.n, p.k, tm, tn);
    const int64_t rows = (p.m + tm - 1) / tm, cols = (p.n + tn - 1) / tn;
    const int64_t lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
    parallel_for(threads, p.batch * rows * cols, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t i = t / (rows * cols), i0 = ((t / cols) % rows) * tm, j0 = (t % cols) * tn;
        const float* ai = a + i * p.m * p.k + (p.trans_a ? i0 : i0 * lda);
        const float* bi = b + i * p.k * p.n + (p.trans_b ? j0 * ldb : j0);
        sgemm_block(p.trans_a, p.trans_b, std::min(tm, p.m - i0), std::min(tn, p.n - j0), p.k,
                    ai, lda, bi, ldb, c + i * mn + i0 * p.n + j0, p.n);
      }
    });
  }
  if (p.scatter_c) {
    strided_copy(sizeof(float), y_shape, reinterpret_cast<const std::byte*>(c), 0, *p.scatter_c,
                 reinterpret_cast<std::byte*>(y), threads);
  }
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_einsum(const KernelContext& ctx) {
  return einsum::make_kernel(ctx, &run_gemm);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
