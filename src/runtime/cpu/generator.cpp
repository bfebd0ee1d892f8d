// Ops that make tensors from attributes or shapes: Constant, ConstantOfShape, Range, EyeLike.
#include <cmath>
#include <cstring>

#include "elementwise_util.h"
#include "ptq/ir/constant_attr.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

Expected<ir::Tensor> constant_value(const ir::Node& node) {
  if (std::optional<ir::Tensor> t = ir::constant_node_value(node)) return std::move(*t);
  if (node.has_attr("sparse_value")) return node_error(node, "sparse_value is not supported");
  return node_error(node, "has no value attribute");
}

void copy_tensor(const ir::Tensor& from, ir::Tensor& to) {
  if (from.dtype() == ir::DType::kString) {
    to.strings() = from.strings();
  } else if (from.nbytes() > 0) {
    std::memcpy(to.raw(), from.raw(), from.nbytes());
  }
}

}  // namespace

// The value is copied into a fresh tensor on each run: consumers own their inputs' lifetimes
// through the executor, never the kernel's.
Expected<std::unique_ptr<Kernel>> make_constant(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(ir::Tensor value, constant_value(ctx.node));
  return make_kernel([value](Inputs, Outputs out, Allocator& alloc) -> Status {
    out[0] = alloc.allocate(value.dtype(), value.shape());
    copy_tensor(value, out[0]);
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_constant_of_shape(const KernelContext& ctx) {
  ir::Tensor value = ir::make_tensor<float>({1}, {0.0f});
  if (const ir::Attribute* a = ctx.node.attr("value");
      a != nullptr && a->type == ir::AttrType::kTensor) {
    if (a->t.size() != 1 || ir::dtype_size(a->t.dtype()) == 0) {
      return node_error(ctx.node, "value must be a one-element numeric tensor");
    }
    value = a->t;
  }
  return make_kernel([node = ctx.node, value](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Shape shape = to_int64s(*in[0]);
    for (int64_t d : shape) {
      if (d < 0) return node_error(node, "shape {} has a negative dim", ir::shape_str(shape));
    }
    out[0] = alloc.allocate(value.dtype(), shape);
    const size_t es = ir::dtype_size(value.dtype());
    auto* dst = static_cast<std::byte*>(out[0].raw());
    for (int64_t i = 0; i < out[0].size(); ++i)
      std::memcpy(dst + i * static_cast<int64_t>(es), value.raw(), es);
    return Status::ok();
  });
}

// Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements start + i * delta.
Expected<std::unique_ptr<Kernel>> make_range(const KernelContext& ctx) {
  return make_kernel([node = ctx.node](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::DType t = in[0]->dtype();
    for (size_t i = 0; i < 3; ++i) {
      if (in[i]->size() != 1 || in[i]->dtype() != t) {
        return node_error(node, "start, limit and delta must be scalars of one type");
      }
    }
    Status status;
    const bool ok = dispatch<float, double, int16_t, int32_t, int64_t>(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T start = in[0]->data<T>()[0];
      const T limit = in[1]->data<T>()[0];
      const T delta = in[2]->data<T>()[0];
      if (delta == T(0)) {
        status = node_error(node, "delta is 0");
        return;
      }
      const double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                     static_cast<double>(delta));
      const auto n = static_cast<int64_t>(std::max(count, 0.0));
      out[0] = alloc.allocate(t, {n});
      T* dst = out[0].data<T>();
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    });
    PTQ_RETURN_IF_ERROR(status);
    return ok ? Status::ok() : unsupported_dtype(node, t);
  });
}

// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped as the input.
Expected<std::unique_ptr<Kernel>> make_eye_like(const KernelContext& ctx) {
  const int64_t k = ctx.node.attr_int("k", 0);
  const int64_t dtype_attr = ctx.node.attr_int("dtype", 0);
  return make_kernel([node = ctx.node, k, dtype_attr](Inputs in, Outputs out,
                                                      Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    if (in[0]->rank() != 2) return node_error(node, "input must be 2-D");
    const ir::DType t = dtype_attr != 0 ? static_cast<ir::DType>(dtype_attr) : in[0]->dtype();
    if (ir::dtype_size(t) == 0) return unsupported_dtype(node, t);
    const int64_t rows = in[0]->dim(0);
    const int64_t cols = in[0]->dim(1);
    ir::Tensor d(ir::DType::kFloat64, in[0]->shape());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) d.data<double>()[r * cols + c] = c - r == k ? 1.0 : 0.0;
    }
    out[0] = alloc.allocate(t, in[0]->shape());
    convert_into(d, out[0], 1);
    return Status::ok();
  });
}

}  // namespace ptq::runtime::cpu
