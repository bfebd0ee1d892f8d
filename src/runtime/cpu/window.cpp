// The window generators of opset 17: HannWindow, HammingWindow, BlackmanWindow, each
// w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N) for k < size, with N = size when
// periodic (the default) and size - 1 when symmetric, in double, cast to output_datatype.
#include <cmath>
#include <numbers>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct Cosines {
  double a0, a1, a2;
};

Expected<std::unique_ptr<Kernel>> make_window(const KernelContext& ctx, Cosines c) {
  const ir::Node& node = ctx.node;
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const auto dtype = static_cast<ir::DType>(node.attr_int("output_datatype", 1));
  if (!dispatch_numeric(dtype, [](auto) {})) return unsupported_dtype(node, dtype);
  return make_kernel([&node, c, periodic, dtype](Inputs in, Outputs out, Allocator& alloc) {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const std::vector<int64_t> size = to_int64s(*in[0]);
    if (size.size() != 1 || size[0] < 0) {
      return node_error(node, "size {} must be one integer of at least 0",
                        ir::shape_str(in[0]->shape()));
    }
    const int64_t n = size[0];
    out[0] = alloc.allocate(dtype, ir::Shape{n});
    const double period = static_cast<double>(periodic ? n : n - 1);
    dispatch_numeric(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t k = 0; k < n; ++k) {
        const double phase = 2.0 * std::numbers::pi * static_cast<double>(k) / period;
        out[0].data<T>()[k] = static_cast<T>(c.a0 - c.a1 * std::cos(phase) +
                                             c.a2 * std::cos(2.0 * phase));
      }
    });
    return Status::ok();
  });
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_hann_window(const KernelContext& ctx) {
  return make_window(ctx, {0.5, 0.5, 0.0});
}
Expected<std::unique_ptr<Kernel>> make_hamming_window(const KernelContext& ctx) {
  return make_window(ctx, {25.0 / 46.0, 21.0 / 46.0, 0.0});
}
Expected<std::unique_ptr<Kernel>> make_blackman_window(const KernelContext& ctx) {
  return make_window(ctx, {0.42, 0.5, 0.08});
}

}  // namespace ptq::runtime::cpu
