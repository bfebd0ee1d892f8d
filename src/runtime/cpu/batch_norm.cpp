// BatchNormalization in inference mode (opsets 7–15): y = scale * (x - mean) / sqrt(var + eps) + B.
#include <cmath>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace reference {

// Per channel c of X viewed as [N, C, S], in double.
template <typename T>
void batch_norm(int64_t n, int64_t c, int64_t s, const T* x, const T* scale, const T* bias,
                const T* mean, const T* var, double eps, T* y) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + eps);
      for (int64_t j = 0; j < s; ++j) {
        const int64_t at = (i * c + ch) * s + j;
        y[at] =
            static_cast<T>(static_cast<double>(scale[ch]) *
                               (static_cast<double>(x[at]) - static_cast<double>(mean[ch])) * inv +
                           static_cast<double>(bias[ch]));
      }
    }
  }
}

}  // namespace reference

namespace {

class BatchNormKernel final : public Kernel {
 public:
  explicit BatchNormKernel(const KernelContext& ctx)
      : node_(ctx.node),
        eps_(ctx.node.attr_float("epsilon", 1e-5f)),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 5));
    const ir::Tensor& x = *in[0];
    if (x.rank() < 2)
      return node_error(node_, "X {} must have rank >= 2", ir::shape_str(x.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), s = dims_product(x.shape(), 2, x.shape().size());
    for (size_t i = 1; i < 5; ++i) {
      if (in[i]->size() != c || in[i]->rank() != 1 || in[i]->dtype() != x.dtype()) {
        return node_error(node_, "input {} {} must be a [{}] {} tensor", i,
                          ir::shape_str(in[i]->shape()), c, ir::dtype_name(x.dtype()));
      }
    }
    out[0] = alloc.allocate(x.dtype(), x.shape());
    if (x.dtype() == ir::DType::kFloat32 && !reference_) {
      fast(n, c, s, x.data<float>(), in[1]->data<float>(), in[2]->data<float>(),
           in[3]->data<float>(), in[4]->data<float>(), out[0].data<float>());
      return Status::ok();
    }
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::batch_norm<T>(n, c, s, x.data<T>(), in[1]->data<T>(), in[2]->data<T>(),
                               in[3]->data<T>(), in[4]->data<T>(), eps_, out[0].data<T>());
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  // Folded into y = a * x + b per channel.
  void fast(int64_t n, int64_t c, int64_t s, const float* x, const float* scale, const float* bias,
            const float* mean, const float* var, float* y) const {
    std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
    for (int64_t ch = 0; ch < c; ++ch) {
      const double ad =
          static_cast<double>(scale[ch]) / std::sqrt(static_cast<double>(var[ch]) + eps_);
      a[ch] = static_cast<float>(ad);
      b[ch] =
          static_cast<float>(static_cast<double>(bias[ch]) - ad * static_cast<double>(mean[ch]));
    }
    parallel_for(threads_, n * c, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const float av = a[p % c], bv = b[p % c];
        const float* xp = x + p * s;
        float* yp = y + p * s;
        for (int64_t j = 0; j < s; ++j) yp[j] = av * xp[j] + bv;
      }
    });
  }

  const ir::Node& node_;
  double eps_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_batch_normalization(const KernelContext& ctx) {
  if (ctx.node.attr_int("training_mode", 0) != 0) {
    return node_error(ctx.node, "training_mode=1 is not supported (inference only)");
  }
  bool extra = false;
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
    extra = extra || !ctx.node.outputs[i].empty();
  if (extra) {
    return node_error(ctx.node, "the training-mode outputs (running mean/var) are not supported");
  }
  return std::unique_ptr<Kernel>(std::make_unique<BatchNormKernel>(ctx));
}

}  // namespace ptq::runtime::cpu
