// LRN (opsets 1 and 13): each element divided by (bias + alpha / size * the sum of squares over
// `size` neighbouring channels)^beta, over N x C x D1 … Dk in double.
#include <cmath>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct LrnAttrs {
  double alpha, beta, bias;
  int64_t size;
};

template <typename T>
void lrn(const LrnAttrs& a, const T* x, T* y, int64_t n, int64_t c, int64_t inner,
         int threads) {
  // ONNX's window: floor((size - 1) / 2) channels before, ceil((size - 1) / 2) after.
  const int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
  const double scale = a.alpha / static_cast<double>(a.size);
  parallel_for(threads, n * c, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t b = nc / c, ch = nc % c;
      const int64_t lo = std::max<int64_t>(ch - before, 0), hi = std::min(ch + after, c - 1);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0.0;
        for (int64_t q = lo; q <= hi; ++q) {
          const double v = static_cast<double>(x[(b * c + q) * inner + i]);
          sq += v * v;
        }
        const int64_t at = nc * inner + i;
        y[at] = static_cast<T>(static_cast<double>(x[at]) / std::pow(a.bias + scale * sq, a.beta));
      }
    }
  });
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_lrn(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const LrnAttrs a{node.attr_float("alpha", 1e-4f), node.attr_float("beta", 0.75f),
                   node.attr_float("bias", 1.0f), node.attr_int("size", 0)};
  if (a.size < 1) return node_error(node, "size {} must be at least 1", a.size);
  const int threads = ctx.threads;
  return make_kernel([&node, a, threads](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    if (x.rank() < 3) {
      return node_error(node, "input {} must be N x C x D1 …", ir::shape_str(x.shape()));
    }
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      lrn<T>(a, x.data<T>(), out[0].data<T>(), x.dim(0), x.dim(1), dims_product(x.shape(), 2,
             x.shape().size()), threads);
    });
    return done ? Status::ok() : unsupported_dtype(node, x.dtype());
  });
}

}  // namespace ptq::runtime::cpu
