// Arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Pow, Mod and the variadic Max, Min,
// Sum, Mean, and BitShift. Integer arithmetic wraps (two's complement), integer division truncates
// toward zero as in C and ONNX Runtime; a division by zero gives 0 instead of a trap.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <cmath>
#include <type_traits>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// Integer ops go through uint64 so that overflow wraps instead of being undefined.
template <typename T, typename F>
T int_op(T a, T b, F f) {
  return static_cast<T>(f(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return int_op(a, b, std::plus<>());
  else return a + b;
}
template <typename T>
T sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return int_op(a, b, std::minus<>());
  else return a - b;
}
template <typename T>
T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return int_op(a, b, std::multiplies<>());
  else return a * b;
}
template <typename T>
T div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return sub(T(0), a);  // avoids INT_MIN / -1
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}
// numpy.maximum / minimum: NaN wins.
template <typename T>
T max_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
  }
  return a < b ? b : a;
}
template <typename T>
T min_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
  }
  return b < a ? b : a;
}

// Checks that all present inputs share input 0's dtype; returns the broadcast output shape.
Expected<ir::Shape> same_dtype_broadcast(const ir::Node& node, Inputs in) {
  std::vector<ir::Shape> shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == nullptr) return node_error(node, "input {} is missing", i);
    if (in[i]->dtype() != in[0]->dtype()) {
      return node_error(node, "input {} is {} but input 0 is {}", i,
                        ir::dtype_name(in[i]->dtype()), ir::dtype_name(in[0]->dtype()));
    }
    shapes.push_back(in[i]->shape());
  }
  if (shapes.empty()) return node_error(node, "needs at least one input");
  return broadcast_all(node, shapes);
}

// A variadic (or binary) op folding inputs left to right with `fn` (generic over T).
template <typename Dispatch, typename F>
Expected<std::unique_ptr<Kernel>> make_fold(const KernelContext& ctx, Dispatch dispatch_fn, F fn,
                                            bool mean = false) {
  auto run = [node = ctx.node, threads = ctx.threads, dispatch_fn, fn, mean](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape, same_dtype_broadcast(node, in));
    const ir::DType dtype = in[0]->dtype();
    out[0] = alloc.allocate(dtype, shape);
    ir::Tensor& y = out[0];
    const bool ok = dispatch_fn(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto op = [&fn](T a, T b) { return static_cast<T>(fn(a, b)); };
      if (in.size() == 1) {
        broadcast_copy<T>(*in[0], y, threads);
      } else {
        binary_broadcast<T, T, T>(*in[0], *in[1], y, threads, op);
      }
      for (size_t k = 2; k < in.size(); ++k) binary_broadcast<T, T, T>(y, *in[k], y, threads, op);
      if constexpr (std::is_floating_point_v<T>) {
        if (mean) {
          const T inv = T(1) / static_cast<T>(in.size());
          map_unary<T, T>(y, y, threads, [inv](T v) { return v * inv; });
        }
      }
    });
    return ok ? Status::ok() : unsupported_dtype(node, dtype);
  };
  return make_widening_kernel(run, ctx.threads);
}

struct UnsignedTypes {
  template <typename F>
  bool operator()(ir::DType t, F&& fn) const {
    return dispatch<uint8_t, uint16_t, uint32_t, uint64_t>(t, std::forward<F>(fn));
  }
};

// Pow(X, Y): Y may have another numeric dtype; the result has X's.
Status pow_run(const ir::Node& node, Inputs in, Outputs out, Allocator& alloc, int threads) {
  PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ir::Tensor& x = *in[0];
  const ir::Tensor& e = *in[1];
  auto shape = broadcast_shapes(x.shape(), e.shape());
  if (!shape) {
    return node_error(node, "shapes {} and {} do not broadcast", ir::shape_str(x.shape()),
                      ir::shape_str(e.shape()));
  }
  out[0] = alloc.allocate(x.dtype(), *shape);
  bool ok = false;
  if (x.dtype() == e.dtype() && is_float(x.dtype())) {
    ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_broadcast<T, T, T>(x, e, out[0], threads, [](T a, T b) { return std::pow(a, b); });
    });
  } else if (ir::dtype_size(x.dtype()) > 0 && ir::dtype_size(e.dtype()) > 0) {
    const ir::Tensor xd = convert(x, ir::DType::kFloat64, threads);
    const ir::Tensor ed = convert(e, ir::DType::kFloat64, threads);
    ir::Tensor yd(ir::DType::kFloat64, *shape);
    binary_broadcast<double, double, double>(xd, ed, yd, threads,
                                             [](double a, double b) { return std::pow(a, b); });
    convert_into(yd, out[0], threads);
    ok = true;
  }
  return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_add(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return add(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_sub(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return sub(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_mul(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return mul(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_div(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return div(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_max(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return max_of(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_min(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return min_of(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_sum(const KernelContext& ctx) {
  return make_fold(ctx, NumericTypes{}, [](auto a, auto b) { return add(a, b); });
}
Expected<std::unique_ptr<Kernel>> make_mean(const KernelContext& ctx) {
  return make_fold(ctx, FloatTypes{}, [](auto a, auto b) { return a + b; }, true);
}

// Mod: fmod=1 is C fmod (sign of the dividend); fmod=0 (integers only) takes the divisor's sign
// as Python's %.
Expected<std::unique_ptr<Kernel>> make_mod(const KernelContext& ctx) {
  const bool c_fmod = ctx.node.attr_int("fmod", 0) != 0;
  return make_fold(ctx, NumericTypes{}, [c_fmod](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) {
      const T r = std::fmod(a, b);
      if (c_fmod || r == T(0) || ((r < 0) == (b < 0))) return r;
      return r + b;
    } else {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        const T r = static_cast<T>(a % b);
        if (c_fmod || r == 0 || ((r < 0) == (b < 0))) return r;
        return static_cast<T>(r + b);
      } else {
        return static_cast<T>(a % b);
      }
    }
  });
}

// BitShift on unsigned integers; shifting by the bit width or more gives 0.
Expected<std::unique_ptr<Kernel>> make_bit_shift(const KernelContext& ctx) {
  const std::string direction = ctx.node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return node_error(ctx.node, "direction '{}' is not LEFT or RIGHT", direction);
  }
  const bool left = direction == "LEFT";
  return make_fold(ctx, UnsignedTypes{}, [left](auto a, auto b) {
    using T = decltype(a);
    if (b >= sizeof(T) * 8) return T(0);
    return static_cast<T>(left ? a << b : a >> b);
  });
}

Expected<std::unique_ptr<Kernel>> make_pow(const KernelContext& ctx) {
  return make_widening_kernel(
      [node = ctx.node, threads = ctx.threads](Inputs in, Outputs out, Allocator& alloc) {
        return pow_run(node, in, out, alloc, threads);
      },
      ctx.threads);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
