// MeanVarianceNormalization (opsets 9 and 13): (x - mean) / (standard deviation + 1e-9) over
// `axes` (default 0, 2, 3), in double. The deviation is of the centred values (ONNX's function
// body computes E[x^2] - E[x]^2, the same up to rounding, and negative by rounding at times).
#include <cmath>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// The element offsets of every index over the dims where `over` is set (the others at 0).
std::vector<int64_t> offsets_over(const ir::Shape& shape, const std::vector<bool>& over) {
  const std::vector<int64_t> strides = strides_of(shape);
  std::vector<int64_t> offsets{0};
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!over[d]) continue;
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(shape[d]));
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < shape[d]; ++i) next.push_back(base + i * strides[d]);
    }
    offsets = std::move(next);
  }
  return offsets;
}

template <typename T>
void mvn(const std::vector<int64_t>& groups, const std::vector<int64_t>& members, const T* x,
         T* y, int threads) {
  const double count = static_cast<double>(std::max<size_t>(members.size(), 1));
  parallel_for(threads, static_cast<int64_t>(groups.size()), [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t base = groups[static_cast<size_t>(g)];
      double sum = 0.0, sq = 0.0;
      for (int64_t m : members) sum += static_cast<double>(x[base + m]);
      const double mean = sum / count;
      for (int64_t m : members) {
        const double c = static_cast<double>(x[base + m]) - mean;
        sq += c * c;
      }
      const double inv = 1.0 / (std::sqrt(sq / count) + 1e-9);
      for (int64_t m : members) {
        y[base + m] = static_cast<T>((static_cast<double>(x[base + m]) - mean) * inv);
      }
    }
  });
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_mean_variance_normalization(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const std::vector<int64_t> axes = node.attr_ints("axes", {0, 2, 3});
  const int threads = ctx.threads;
  return make_kernel([&node, axes, threads](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    std::vector<bool> over(x.shape().size(), false);
    for (int64_t a : axes) {
      PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, a, x.rank()));
      over[static_cast<size_t>(axis)] = true;
    }
    std::vector<bool> kept(over.size());
    for (size_t d = 0; d < over.size(); ++d) kept[d] = !over[d];
    out[0] = alloc.allocate(x.dtype(), x.shape());
    if (x.size() == 0) return Status::ok();
    const std::vector<int64_t> groups = offsets_over(x.shape(), kept);
    const std::vector<int64_t> members = offsets_over(x.shape(), over);
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      mvn<T>(groups, members, x.data<T>(), out[0].data<T>(), threads);
    });
    return done ? Status::ok() : unsupported_dtype(node, x.dtype());
  });
}

}  // namespace ptq::runtime::cpu
