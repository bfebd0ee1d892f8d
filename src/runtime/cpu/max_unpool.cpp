// MaxUnpool (opsets 9, 11): scatters X into a zero tensor at the flat indices I that MaxPool
// returned (indices into the whole unpooled tensor, batch and channel included), whose spatial
// dims are (in - 1) * stride + kernel - pads. A larger output_shape input pads that tensor.
#include <algorithm>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// The shape MaxPool's input had: (in - 1) * stride + kernel - pads per spatial dim.
ir::Shape pooled_from_shape(const Window& w, const ir::Tensor& x) {
  ir::Shape s = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < w.rank(); ++i) {
    s.push_back((x.dim(static_cast<int64_t>(i) + 2) - 1) * w.strides[i] + w.kernel[i] -
                w.pad_begin(i) - w.pad_end(i));
  }
  return s;
}

Expected<ir::Shape> output_shape_of(const ir::Node& node, const ir::Shape& pooled,
                                    const ir::Tensor* output_shape) {
  if (output_shape == nullptr) return pooled;
  ir::Shape s = to_int64s(*output_shape);
  bool fits = s.size() == pooled.size() && s[0] == pooled[0] && s[1] == pooled[1];
  for (size_t d = 2; fits && d < s.size(); ++d) fits = s[d] >= pooled[d];
  if (!fits) {
    return node_error(node, "output_shape {} is smaller than the unpooled shape {}",
                      ir::shape_str(s), ir::shape_str(pooled));
  }
  return s;
}

// Indices address the unpooled shape; a larger output_shape pads it, half the extra before
// (ONNX's reference; ONNX Runtime's flat placement differs from the backend data).
template <typename T>
Status scatter(const ir::Node& node, const ir::Tensor& x, const ir::Tensor& indices,
               const ir::Shape& pooled, ir::Tensor& y) {
  T* dst = y.data<T>();
  std::fill(dst, dst + y.size(), T{});
  const T* src = x.data<T>();
  const int64_t pooled_size = dims_product(pooled, 0, pooled.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t rem = indices.as_int64(i);
    if (rem < 0 || rem >= pooled_size) {
      return node_error(node, "index {} is outside the output {}", rem, ir::shape_str(pooled));
    }
    int64_t at = 0, stride = 1;
    for (size_t d = pooled.size(); d-- > 0;) {
      const int64_t offset = d < 2 ? 0 : (y.dim(static_cast<int64_t>(d)) - pooled[d]) / 2;
      at += (rem % pooled[d] + offset) * stride;
      rem /= pooled[d];
      stride *= y.dim(static_cast<int64_t>(d));
    }
    dst[at] = src[i];
  }
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_max_unpool(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(Window window,
                       read_window(ctx.node, ctx.node.attr_ints("kernel_shape", {})));
  if (window.rank() == 0) return node_error(ctx.node, "kernel_shape is missing");
  auto run = [node = ctx.node, window](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    if (x.rank() != static_cast<int64_t>(window.rank()) + 2 || in[1]->shape() != x.shape()) {
      return node_error(node, "input {} and indices {} do not fit a {}-D kernel",
                        ir::shape_str(x.shape()), ir::shape_str(in[1]->shape()), window.rank());
    }
    const ir::Shape pooled = pooled_from_shape(window, x);
    PTQ_ASSIGN_OR_RETURN(const ir::Shape shape,
                         output_shape_of(node, pooled, input_or_null(in, 2)));
    out[0] = alloc.allocate(x.dtype(), shape);
    Status st = Status::ok();
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      st = scatter<typename decltype(tag)::type>(node, x, *in[1], pooled, out[0]);
    });
    return ok ? st : unsupported_dtype(node, x.dtype());
  };
  return make_kernel(run);
}

}  // namespace ptq::runtime::cpu
