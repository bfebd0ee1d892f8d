// Gemm and MatMul (opsets 1–21): reference loops and Eigen-backed float32 kernels.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "gemm_kernel.h"
#include "gemm_packed.h"
#include "kernel_util.h"
#include "registry.h"
#include "shared_packing.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace reference {

// Y[m, n] = alpha * sum_k A'[m, k] B'[k, n] + beta * C[broadcast], accumulated in double.
template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a,
          const T* b, double beta, const T* c, const std::vector<int64_t>& c_strides, T* y) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t q = 0; q < k; ++q) {
        const double av = static_cast<double>(ta ? a[q * m + i] : a[i * k + q]);
        const double bv = static_cast<double>(tb ? b[j * k + q] : b[q * n + j]);
        acc += av * bv;
      }
      double v = alpha * acc;
      if (c != nullptr) v += beta * static_cast<double>(c[i * c_strides[0] + j * c_strides[1]]);
      y[i * n + j] = static_cast<T>(v);
    }
  }
}

}  // namespace reference

namespace {

// ---- constant B, packed once -----------------------------------------------------------------

// B of a Gemm or MatMul when it is a float32 initializer (never for reference kernels): packed
// for the micro-kernel when the kernel is prepared.
struct PackedB {
  const ir::Tensor* source = nullptr;  // the initializer `data` was packed from
  int64_t k = 0, n = 0;
  PackedWeights data;  // shared with every kernel packing the same B

  void pack(const ir::Tensor* b, bool trans) {
    if (b == nullptr || b->dtype() != ir::DType::kFloat32 || b->rank() != 2) return;
    k = trans ? b->dim(1) : b->dim(0);
    n = trans ? b->dim(0) : b->dim(1);
    data = shared_packing(b->raw(), {1, k, n, trans ? 1 : 0},
                          static_cast<size_t>(packed_b_floats(k, n)),
                          [&](float* out) {
                            pack_b(trans, k, n, b->data<float>(), b->dim(1), out);
                          });
    source = b;
  }
  // True when `b` is the data of the packed initializer.
  bool matches(const float* b) const { return source != nullptr && b == source->data<float>(); }
};

// Y[m x n] = op(A) * B from a packed B on `threads` threads: A is packed for this call, then C
// is cut into tiles of whole micro-kernel panels whose sizes follow from m and n only.
void gemm_prepacked(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* pb, float* y, int threads) {
  thread_local std::vector<float> buffer;  // the calling thread's; shared with the workers
  buffer.resize(static_cast<size_t>(packed_a_floats(m, k)));
  float* pa = buffer.data();
  const int64_t panels = (m + kGemmMR - 1) / kGemmMR;
  parallel_for(threads, panels, [&](int64_t begin, int64_t end) {
    const int64_t i0 = begin * kGemmMR, rows = std::min(end * kGemmMR, m) - i0;
    pack_a(trans_a, rows, k, trans_a ? a + i0 : a + i0 * lda, lda, pa + i0 * k);
  });
  const bool small = m * n * k < (int64_t{1} << 18);
  const int64_t tm = small ? m : 4 * kGemmMR;
  int64_t tn = small ? n : 8 * kGemmNR;
  const int64_t rows = (m + tm - 1) / tm;
  // Few rows (a classifier's Gemm at batch 32: one row of tiles) would leave threads idle:
  // narrower tiles, down to one panel, until every thread has one.
  while (!small && rows * ((n + tn - 1) / tn) < threads && tn > kGemmNR) tn /= 2;
  const int64_t cols = (n + tn - 1) / tn;
  parallel_for(threads, rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i0 = (t / cols) * tm, j0 = (t % cols) * tn;
      gemm_packed(std::min(tm, m - i0), std::min(tn, n - j0), k, pa + i0 * k, pb + j0 * k,
                  y + i0 * n + j0, n);
    }
  });
}

// ---- Gemm -----------------------------------------------------------------------------------

// One Gemm call's operands, checked.
struct GemmCall {
  const ir::Tensor* a = nullptr;
  const ir::Tensor* b = nullptr;
  const ir::Tensor* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> cs{0, 0};  // C's strides over Y
};

class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const KernelContext& ctx)
      : node_(ctx.node),
        alpha_(ctx.node.attr_float("alpha", 1.0f)),
        beta_(ctx.node.attr_float("beta", 1.0f)),
        ta_(ctx.node.attr_int("transA", 0) != 0),
        tb_(ctx.node.attr_int("transB", 0) != 0),
        threads_(ctx.threads),
        reference_(ctx.reference) {
    const ir::Tensor* b = constant_input(ctx, 1);
    // Float32 B makes A float32 (else the node fails): the fast kernel runs.
    fusable_ = !reference_ && b != nullptr && b->dtype() == ir::DType::kFloat32;
    if (!reference_) packed_b_.pack(b, tb_);
  }

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_ASSIGN_OR_RETURN(GemmCall g, check(in));
    const ir::Tensor& a = *g.a;
    out[0] = alloc.allocate(a.dtype(), ir::Shape{g.m, g.n});
    const bool done = dispatch<float, double, int32_t, int64_t, uint32_t, uint64_t>(
        a.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* cp = g.c != nullptr ? g.c->data<T>() : nullptr;
          if constexpr (std::is_same_v<T, float>) {
            if (!reference_) return fast(g, Epilogue{}, out[0].data<float>());
          }
          reference::gemm<T>(ta_, tb_, g.m, g.n, g.k, alpha_, a.data<T>(), g.b->data<T>(), beta_,
                             cp, g.cs, out[0].data<T>());
        });
    if (!done) return unsupported_dtype(node_, a.dtype());
    return Status::ok();
  }

  bool fuses(bool /*residual*/, Activation /*activation*/) const override { return fusable_; }

  // The fast kernel with the epilogue in its alpha/beta pass, for float32 and a residual of
  // Y's shape; other calls are declined before anything is allocated.
  Expected<bool> run_fused(Inputs in, Outputs out, Allocator& alloc, const Epilogue& e) override {
    PTQ_ASSIGN_OR_RETURN(GemmCall g, check(in));
    const ir::Shape ys{g.m, g.n};
    const ir::Tensor* r = e.residual;
    if (reference_ || g.a->dtype() != ir::DType::kFloat32 ||
        (r != nullptr && (r->dtype() != ir::DType::kFloat32 || r->shape() != ys))) {
      return false;
    }
    out[0] = alloc.allocate(ir::DType::kFloat32, ys);
    fast(g, e, out[0].data<float>());
    return true;
  }

 private:
  Expected<GemmCall> check(Inputs in) const {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    GemmCall g;
    g.a = in[0], g.b = in[1], g.c = input_or_null(in, 2);
    const ir::Tensor& a = *g.a;
    const ir::Tensor& b = *g.b;
    if (a.rank() != 2 || b.rank() != 2) {
      return node_error(node_, "A {} and B {} must be 2-D", ir::shape_str(a.shape()),
                        ir::shape_str(b.shape()));
    }
    g.m = ta_ ? a.dim(1) : a.dim(0), g.k = ta_ ? a.dim(0) : a.dim(1);
    const int64_t kb = tb_ ? b.dim(1) : b.dim(0);
    g.n = tb_ ? b.dim(0) : b.dim(1);
    if (g.k != kb) {
      return node_error(node_, "A {} and B {} do not multiply (transA={}, transB={})",
                        ir::shape_str(a.shape()), ir::shape_str(b.shape()), ta_, tb_);
    }
    if (b.dtype() != a.dtype() || (g.c != nullptr && g.c->dtype() != a.dtype())) {
      return node_error(node_, "A, B and C must share one element type");
    }
    if (g.c != nullptr) {
      const ir::Shape ys{g.m, g.n};
      auto bs = broadcast_shapes(g.c->shape(), ys);
      if (g.c->rank() > 2 || !bs || *bs != ys) {
        return node_error(node_, "C {} does not broadcast to {}", ir::shape_str(g.c->shape()),
                          ir::shape_str(ys));
      }
      g.cs = broadcast_strides(g.c->shape(), ys);
    }
    return g;
  }

  // Y = alpha * op(A) op(B) + beta * C, then the epilogue (+ residual, activation) in one pass
  // over Y. The pass runs only when it changes something, as the unfused kernels would.
  void fast(const GemmCall& g, const Epilogue& e, float* y) const {
    const int64_t m = g.m, n = g.n, k = g.k;
    const float* a = g.a->data<float>();
    const float* b = g.b->data<float>();
    if (packed_b_.matches(b)) {
      gemm_prepacked(ta_, m, n, k, a, ta_ ? m : k, packed_b_.data.get(), y, threads_);
    } else {
      sgemm(ta_, tb_, m, n, k, a, ta_ ? m : k, b, tb_ ? k : n, y, n, threads_);
    }
    const float* c = g.c != nullptr ? g.c->data<float>() : nullptr;
    const float* r = e.residual != nullptr ? e.residual->data<float>() : nullptr;
    const bool scale = !(alpha_ == 1.0f && (c == nullptr || beta_ == 0.0f));
    if (!scale && r == nullptr && e.activation == Activation::kNone) return;
    const std::vector<int64_t>& cs = g.cs;
    parallel_for(threads_, m, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float* row = y + i * n;
        for (int64_t j = 0; j < n; ++j) {
          float v = row[j];
          if (scale) {
            v = alpha_ * v;
            if (c != nullptr) v += beta_ * c[i * cs[0] + j * cs[1]];
          }
          if (r != nullptr) v += r[i * n + j];
          row[j] = activate(v, e.activation, e.lo, e.hi);
        }
      }
    });
  }

  const ir::Node& node_;
  float alpha_, beta_;
  bool ta_, tb_;
  int threads_;
  bool reference_;
  bool fusable_ = false;
  PackedB packed_b_;
};

// ---- MatMul ---------------------------------------------------------------------------------

struct MatMulShape {
  ir::Shape out;                 // the result shape (1-D operands' dims removed)
  ir::Shape batch;               // broadcast batch dims
  std::vector<int64_t> a_strides, b_strides;  // per batch dim, in matrices
  int64_t m = 0, n = 0, k = 0;
};

Expected<MatMulShape> matmul_shape(const ir::Node& node, const ir::Shape& a0, const ir::Shape& b0) {
  if (a0.empty() || b0.empty()) return node_error(node, "MatMul operands must not be scalars");
  ir::Shape a = a0, b = b0;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulShape s;
  s.m = a[a.size() - 2], s.k = a.back(), s.n = b.back();
  if (b[b.size() - 2] != s.k) {
    return node_error(node, "A {} and B {} do not multiply", ir::shape_str(a0), ir::shape_str(b0));
  }
  const ir::Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(ab, bb);
  if (!batch) {
    return node_error(node, "batch dims of A {} and B {} do not broadcast", ir::shape_str(a0),
                      ir::shape_str(b0));
  }
  s.batch = *batch;
  s.a_strides = broadcast_strides(ab, s.batch);
  s.b_strides = broadcast_strides(bb, s.batch);
  s.out = s.batch;
  if (a0.size() > 1) s.out.push_back(s.m);
  if (b0.size() > 1) s.out.push_back(s.n);
  return s;
}

// Matrix offsets (in matrices) of A and B for every batch index.
void batch_offsets(const MatMulShape& s, std::vector<int64_t>& ao, std::vector<int64_t>& bo) {
  const int64_t count = ir::num_elements(s.batch);
  ao.resize(static_cast<size_t>(count));
  bo.resize(static_cast<size_t>(count));
  for_each_broadcast<2>(s.batch, {s.a_strides, s.b_strides}, 0, count,
                        [&](int64_t i, const std::array<int64_t, 2>& off) {
                          ao[static_cast<size_t>(i)] = off[0];
                          bo[static_cast<size_t>(i)] = off[1];
                        });
}

class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(const KernelContext& ctx)
      : node_(ctx.node), threads_(ctx.threads), reference_(ctx.reference) {
    if (!reference_) packed_b_.pack(constant_input(ctx, 1), false);
  }

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor& a = *in[0];
    const ir::Tensor& b = *in[1];
    if (a.dtype() != b.dtype()) return node_error(node_, "A and B must share one element type");
    PTQ_ASSIGN_OR_RETURN(MatMulShape s, matmul_shape(node_, a.shape(), b.shape()));
    out[0] = alloc.allocate(a.dtype(), s.out);
    std::vector<int64_t> ao, bo;
    batch_offsets(s, ao, bo);
    const bool done = dispatch<float, double, int32_t, int64_t, uint32_t, uint64_t>(
        a.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_same_v<T, float>) {
            if (!reference_) return fast(s, ao, bo, a.data<float>(), b.data<float>(),
                                         packed_b_.matches(b.data<float>()),
                                         out[0].data<float>());
          }
          for (size_t i = 0; i < ao.size(); ++i) {
            reference::gemm<T>(false, false, s.m, s.n, s.k, 1.0, a.data<T>() + ao[i] * s.m * s.k,
                               b.data<T>() + bo[i] * s.k * s.n, 0.0, nullptr, {0, 0},
                               out[0].data<T>() + static_cast<int64_t>(i) * s.m * s.n);
          }
        });
    if (!done) return unsupported_dtype(node_, a.dtype());
    return Status::ok();
  }

 private:
  void fast(const MatMulShape& s, const std::vector<int64_t>& ao, const std::vector<int64_t>& bo,
            const float* a, const float* b, bool packed, float* y) const {
    const int64_t count = static_cast<int64_t>(ao.size());
    // A stack of matrices times one shared B is one tall GEMM.
    bool shared_b = count > 0;
    for (int64_t i = 0; i < count && shared_b; ++i) shared_b = bo[i] == 0 && ao[i] == i;
    if (shared_b && packed) {
      gemm_prepacked(false, count * s.m, s.n, s.k, a, s.k, packed_b_.data.get(), y, threads_);
      return;
    }
    if (shared_b) {
      sgemm(false, false, count * s.m, s.n, s.k, a, s.k, b, s.n, y, s.n, threads_);
      return;
    }
    int64_t tm = 0, tn = 0;
    sgemm_tiles(s.m, s.n, s.k, tm, tn);
    const int64_t rows = (s.m + tm - 1) / tm, cols = (s.n + tn - 1) / tn;
    parallel_for(threads_, count * rows * cols, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t i = t / (rows * cols), r = (t / cols) % rows, c = t % cols;
        const int64_t i0 = r * tm, j0 = c * tn;
        const int64_t mi = std::min(tm, s.m - i0), nj = std::min(tn, s.n - j0);
        sgemm_block(false, false, mi, nj, s.k, a + ao[i] * s.m * s.k + i0 * s.k, s.k,
                    b + bo[i] * s.k * s.n + j0, s.n, y + i * s.m * s.n + i0 * s.n + j0, s.n);
      }
    });
  }

  const ir::Node& node_;
  int threads_;
  bool reference_;
  PackedB packed_b_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_gemm(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<GemmKernel>(ctx));
}
Expected<std::unique_ptr<Kernel>> make_matmul(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<MatMulKernel>(ctx));
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
