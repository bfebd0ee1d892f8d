// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual → bool), logic on bool tensors
// (Not, And, Or, Xor) and Where. All broadcast as numpy.
#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

template <typename F>
Expected<std::unique_ptr<Kernel>> make_compare(const KernelContext& ctx, F cmp) {
  auto run = [node = ctx.node, threads = ctx.threads, cmp](Inputs in, Outputs out,
                                                           Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& a = *in[0];
    const ir::Tensor& b = *in[1];
    if (a.dtype() != b.dtype()) {
      return node_error(node, "inputs differ in element type ({} and {})",
                        ir::dtype_name(a.dtype()), ir::dtype_name(b.dtype()));
    }
    const ir::Shape shapes[] = {a.shape(), b.shape()};
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape, broadcast_all(node, shapes));
    out[0] = alloc.allocate(ir::DType::kBool, shape);
    const bool ok = dispatch_all(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_broadcast<T, T, bool>(a, b, out[0], threads, [&cmp](T x, T y) { return cmp(x, y); });
    });
    return ok ? Status::ok() : unsupported_dtype(node, a.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

template <typename F>
Expected<std::unique_ptr<Kernel>> make_logic(const KernelContext& ctx, F op) {
  return make_kernel([node = ctx.node, threads = ctx.threads, op](Inputs in, Outputs out,
                                                                  Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& a = *in[0];
    const ir::Tensor& b = *in[1];
    if (a.dtype() != ir::DType::kBool || b.dtype() != ir::DType::kBool) {
      return node_error(node, "inputs must be bool, got {} and {}", ir::dtype_name(a.dtype()),
                        ir::dtype_name(b.dtype()));
    }
    const ir::Shape shapes[] = {a.shape(), b.shape()};
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape, broadcast_all(node, shapes));
    out[0] = alloc.allocate(ir::DType::kBool, shape);
    binary_broadcast<bool, bool, bool>(a, b, out[0], threads, op);
    return Status::ok();
  });
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_equal(const KernelContext& ctx) {
  return make_compare(ctx, [](auto x, auto y) { return x == y; });
}
Expected<std::unique_ptr<Kernel>> make_less(const KernelContext& ctx) {
  return make_compare(ctx, [](auto x, auto y) { return x < y; });
}
Expected<std::unique_ptr<Kernel>> make_greater(const KernelContext& ctx) {
  return make_compare(ctx, [](auto x, auto y) { return x > y; });
}
Expected<std::unique_ptr<Kernel>> make_less_or_equal(const KernelContext& ctx) {
  return make_compare(ctx, [](auto x, auto y) { return x <= y; });
}
Expected<std::unique_ptr<Kernel>> make_greater_or_equal(const KernelContext& ctx) {
  return make_compare(ctx, [](auto x, auto y) { return x >= y; });
}

Expected<std::unique_ptr<Kernel>> make_and(const KernelContext& ctx) {
  return make_logic(ctx, [](bool x, bool y) { return x && y; });
}
Expected<std::unique_ptr<Kernel>> make_or(const KernelContext& ctx) {
  return make_logic(ctx, [](bool x, bool y) { return x || y; });
}
Expected<std::unique_ptr<Kernel>> make_xor(const KernelContext& ctx) {
  return make_logic(ctx, [](bool x, bool y) { return x != y; });
}

Expected<std::unique_ptr<Kernel>> make_not(const KernelContext& ctx) {
  return make_kernel([node = ctx.node, threads = ctx.threads](Inputs in, Outputs out,
                                                              Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    if (in[0]->dtype() != ir::DType::kBool) return unsupported_dtype(node, in[0]->dtype());
    out[0] = alloc.allocate(ir::DType::kBool, in[0]->shape());
    map_unary<bool, bool>(*in[0], out[0], threads, [](bool x) { return !x; });
    return Status::ok();
  });
}

// Where(cond, X, Y): any element type for X and Y (moved as bytes).
Expected<std::unique_ptr<Kernel>> make_where(const KernelContext& ctx) {
  return make_kernel([node = ctx.node, threads = ctx.threads](Inputs in, Outputs out,
                                                              Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::Tensor& c = *in[0];
    const ir::Tensor& x = *in[1];
    const ir::Tensor& y = *in[2];
    if (c.dtype() != ir::DType::kBool) return node_error(node, "condition must be bool");
    if (x.dtype() != y.dtype()) {
      return node_error(node, "X is {} but Y is {}", ir::dtype_name(x.dtype()),
                        ir::dtype_name(y.dtype()));
    }
    const ir::Shape shapes[] = {c.shape(), x.shape(), y.shape()};
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape, broadcast_all(node, shapes));
    out[0] = alloc.allocate(x.dtype(), shape);
    auto select = [&](auto tag) {
      using T = typename decltype(tag)::type;
      ternary_broadcast<bool, T, T, T>(c, x, y, out[0], threads,
                                       [](bool k, T a, T b) { return k ? a : b; });
    };
    switch (ir::dtype_size(x.dtype())) {
      case 1: select(TypeTag<uint8_t>{}); break;
      case 2: select(TypeTag<uint16_t>{}); break;
      case 4: select(TypeTag<uint32_t>{}); break;
      case 8: select(TypeTag<uint64_t>{}); break;
      default: return unsupported_dtype(node, x.dtype());
    }
    return Status::ok();
  });
}

}  // namespace ptq::runtime::cpu
