// ConvTranspose (opsets 1–22): N-D reference (scatter, double sums) and a float32 1-D/2-D
// kernel (GEMM into columns, then col2im per output channel).
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>

#include "gemm_kernel.h"
#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// Layout: X [N, C, in...], W [C, M/G, kernel...], Y [N, M, out...].
struct TransposeParams {
  int64_t N = 0, C = 0, M = 0, G = 1;
  std::vector<int64_t> in, out;
  Window w;
};

Expected<TransposeParams> transpose_params(const ir::Node& node, const ir::Tensor& x,
                                           const ir::Tensor& wt, const ir::Tensor* b) {
  if (x.rank() < 3 || wt.rank() != x.rank()) {
    return node_error(node, "X {} and W {} must have the same rank >= 3", ir::shape_str(x.shape()),
                      ir::shape_str(wt.shape()));
  }
  TransposeParams p;
  p.G = node.attr_int("group", 1);
  p.N = x.dim(0), p.C = x.dim(1), p.M = wt.dim(1) * p.G;
  if (p.G <= 0 || wt.dim(0) != p.C || p.C % p.G != 0) {
    return node_error(node, "X {} with group {} does not fit W {}", ir::shape_str(x.shape()), p.G,
                      ir::shape_str(wt.shape()));
  }
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != p.M)) {
    return node_error(node, "bias {} must be [{}]", ir::shape_str(b->shape()), p.M);
  }
  std::vector<int64_t> kernel(wt.shape().begin() + 2, wt.shape().end());
  if (node.attr_ints("kernel_shape", kernel) != kernel) {
    return node_error(node, "kernel_shape does not match W {}", ir::shape_str(wt.shape()));
  }
  PTQ_ASSIGN_OR_RETURN(p.w, read_window(node, kernel));
  p.in.assign(x.shape().begin() + 2, x.shape().end());
  PTQ_ASSIGN_OR_RETURN(p.out, transpose_output_dims(node, p.w, p.in));
  return p;
}

}  // namespace

namespace reference {

template <typename T>
void conv_transpose(const TransposeParams& p, const T* x, const T* w, const T* b, T* y) {
  const size_t r = p.in.size();
  const int64_t cg = p.C / p.G, mg = p.M / p.G;
  const int64_t in_size = dims_product(p.in, 0, r), out_size = dims_product(p.out, 0, r);
  const int64_t k_size = dims_product(p.w.kernel, 0, r);
  std::vector<double> acc(static_cast<size_t>(out_size));
  std::vector<int64_t> i_idx(r), k_idx(r);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t g = m / mg, mm = m % mg;
      std::fill(acc.begin(), acc.end(), b != nullptr ? static_cast<double>(b[m]) : 0.0);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
        for (int64_t ii = 0; ii < in_size; ++ii) {
          for (int64_t rem = ii, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
            i_idx[d] = rem % p.in[d];
            rem /= p.in[d];
          }
          const double xv = static_cast<double>(x[(n * p.C + c) * in_size + ii]);
          for (int64_t ki = 0; ki < k_size; ++ki) {
            for (int64_t rem = ki, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
              k_idx[d] = rem % p.w.kernel[d];
              rem /= p.w.kernel[d];
            }
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < r && inside; ++d) {
              const int64_t o =
                  i_idx[d] * p.w.strides[d] - p.w.pad_begin(d) + k_idx[d] * p.w.dilations[d];
              inside = o >= 0 && o < p.out[d];
              off = off * p.out[d] + o;
            }
            if (inside) acc[off] += xv * static_cast<double>(w[(c * mg + mm) * k_size + ki]);
          }
        }
      }
      for (int64_t o = 0; o < out_size; ++o)
        y[(n * p.M + m) * out_size + o] = static_cast<T>(acc[o]);
    }
  }
}

}  // namespace reference

namespace {

void conv_transpose_fast(const TransposeParams& p, const float* x, const float* w, const float* b,
                         float* y, int threads) {
  const bool one = p.in.size() == 1;
  const int64_t H = one ? 1 : p.in[0], W = p.in.back(), OH = one ? 1 : p.out[0], OW = p.out.back();
  const int64_t KH = one ? 1 : p.w.kernel[0], KW = p.w.kernel.back();
  const int64_t SH = one ? 1 : p.w.strides[0], SW = p.w.strides.back();
  const int64_t DH = one ? 1 : p.w.dilations[0], DW = p.w.dilations.back();
  const int64_t PT = one ? 0 : p.w.pad_begin(0), PL = p.w.pad_begin(p.in.size() - 1);
  const int64_t cg = p.C / p.G, mg = p.M / p.G, kk = KH * KW, hw = H * W;
  std::vector<float> col(static_cast<size_t>(mg * kk * hw));
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t g = 0; g < p.G; ++g) {
      // col[mg * kk, hw] = W_g^T (W_g is [cg, mg * kk]) * X_g [cg, hw]
      sgemm(true, false, mg * kk, hw, cg, w + g * cg * mg * kk, mg * kk,
            x + (n * p.C + g * cg) * hw, hw, col.data(), hw, threads);
      parallel_for(threads, mg, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          float* yp = y + (n * p.M + g * mg + m) * OH * OW;
          std::fill(yp, yp + OH * OW, b != nullptr ? b[g * mg + m] : 0.0f);
          for (int64_t kh = 0; kh < KH; ++kh) {
            for (int64_t kw = 0; kw < KW; ++kw) {
              const float* row = col.data() + (m * kk + kh * KW + kw) * hw;
              for (int64_t ih = 0; ih < H; ++ih) {
                const int64_t oh = ih * SH - PT + kh * DH;
                if (oh < 0 || oh >= OH) continue;
                for (int64_t iw = 0; iw < W; ++iw) {
                  const int64_t ow = iw * SW - PL + kw * DW;
                  if (ow >= 0 && ow < OW) yp[oh * OW + ow] += row[ih * W + iw];
                }
              }
            }
          }
        }
      });
    }
  }
}

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelContext& ctx)
      : node_(ctx.node), threads_(ctx.threads), reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& w = *in[1];
    const ir::Tensor* b = input_or_null(in, 2);
    if (w.dtype() != x.dtype() || (b != nullptr && b->dtype() != x.dtype())) {
      return node_error(node_, "X, W and B must share one element type");
    }
    PTQ_ASSIGN_OR_RETURN(TransposeParams p, transpose_params(node_, x, w, b));
    ir::Shape shape{p.N, p.M};
    shape.insert(shape.end(), p.out.begin(), p.out.end());
    out[0] = alloc.allocate(x.dtype(), shape);
    if (x.dtype() == ir::DType::kFloat32 && !reference_ && p.in.size() <= 2) {
      conv_transpose_fast(p, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr,
                          out[0].data<float>(), threads_);
      return Status::ok();
    }
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::conv_transpose<T>(p, x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr,
                                   out[0].data<T>());
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv_transpose(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<ConvTransposeKernel>(ctx));
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
