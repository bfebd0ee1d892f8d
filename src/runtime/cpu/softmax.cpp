// Softmax and LogSoftmax. Opset < 13 flattens to 2-D at `axis` (default 1) and normalises each
// row; opset >= 13 normalises along the single `axis` (default -1).
#include <cmath>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// X viewed as [outer, d, inner]; rows run along d with stride inner.
struct Rows {
  int64_t outer = 1, d = 1, inner = 1;
};

}  // namespace

namespace reference {

template <typename T>
void softmax(const Rows& r, bool log, const T* x, T* y) {
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.d * r.inner + i;
      double mx = -INFINITY;
      for (int64_t j = 0; j < r.d; ++j) mx = std::max(mx, static_cast<double>(x[base + j * r.inner]));
      double sum = 0.0;
      for (int64_t j = 0; j < r.d; ++j) sum += std::exp(static_cast<double>(x[base + j * r.inner]) - mx);
      for (int64_t j = 0; j < r.d; ++j) {
        const double v = static_cast<double>(x[base + j * r.inner]) - mx;
        y[base + j * r.inner] = static_cast<T>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  }
}

}  // namespace reference

namespace {

void softmax_row(int64_t d, int64_t stride, bool log, const float* x, float* y) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < d; ++j) mx = std::max(mx, x[j * stride]);
  float sum = 0.0f;
  for (int64_t j = 0; j < d; ++j) {
    const float e = std::exp(x[j * stride] - mx);
    sum += e;
    if (!log) y[j * stride] = e;
  }
  if (log) {
    const float shift = mx + std::log(sum);
    for (int64_t j = 0; j < d; ++j) y[j * stride] = x[j * stride] - shift;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < d; ++j) y[j * stride] *= inv;
  }
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const KernelContext& ctx, bool log)
      : node_(ctx.node),
        log_(log),
        legacy_(ctx.opset < 13),
        axis_(ctx.node.attr_int("axis", ctx.opset < 13 ? 1 : -1)),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 1));
    const ir::Tensor& x = *in[0];
    const int64_t rank = std::max<int64_t>(x.rank(), 1);
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node_, axis_, rank));
    const size_t a = static_cast<size_t>(axis), n = x.shape().size();
    Rows r;
    r.outer = dims_product(x.shape(), 0, a);
    r.d = legacy_ ? dims_product(x.shape(), a, n) : (n == 0 ? 1 : x.dim(axis));
    r.inner = legacy_ ? 1 : dims_product(x.shape(), a + 1, n);
    out[0] = alloc.allocate(x.dtype(), x.shape());
    if (x.dtype() == ir::DType::kFloat32 && !reference_) {
      const float* xp = x.data<float>();
      float* yp = out[0].data<float>();
      parallel_for(threads_, r.outer * r.inner, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t base = (t / r.inner) * r.d * r.inner + t % r.inner;
          softmax_row(r.d, r.inner, log_, xp + base, yp + base);
        }
      });
      return Status::ok();
    }
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::softmax<T>(r, log_, x.data<T>(), out[0].data<T>());
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  bool log_, legacy_;
  int64_t axis_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_softmax(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(ctx, false));
}
Expected<std::unique_ptr<Kernel>> make_log_softmax(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(ctx, true));
}

}  // namespace ptq::runtime::cpu
