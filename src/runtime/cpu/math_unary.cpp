// Unary math: Exp, Log, Sqrt, Reciprocal, Neg, Abs, Sign, Erf, Floor, Ceil, Round and the
// trigonometric / hyperbolic functions; IsNaN and IsInf (bool results).
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <cmath>
#include <type_traits>

#include "elementwise_util.h"
#include "erf.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

#define PTQ_FLOAT_UNARY(factory, expr)                                    \
  Expected<std::unique_ptr<Kernel>> factory(const KernelContext& ctx) {   \
    return make_float_unary(ctx, [](auto x) { return expr; });            \
  }

PTQ_FLOAT_UNARY(make_exp, std::exp(x))
PTQ_FLOAT_UNARY(make_log, std::log(x))
PTQ_FLOAT_UNARY(make_sqrt, std::sqrt(x))
PTQ_FLOAT_UNARY(make_reciprocal, decltype(x)(1) / x)
PTQ_FLOAT_UNARY(make_floor, std::floor(x))
PTQ_FLOAT_UNARY(make_ceil, std::ceil(x))
// Round half to even, as numpy.round: nearbyint in the default rounding mode.
PTQ_FLOAT_UNARY(make_round, std::nearbyint(x))
PTQ_FLOAT_UNARY(make_sin, std::sin(x))
PTQ_FLOAT_UNARY(make_cos, std::cos(x))
PTQ_FLOAT_UNARY(make_tan, std::tan(x))
PTQ_FLOAT_UNARY(make_asin, std::asin(x))
PTQ_FLOAT_UNARY(make_acos, std::acos(x))
PTQ_FLOAT_UNARY(make_atan, std::atan(x))
PTQ_FLOAT_UNARY(make_sinh, std::sinh(x))
PTQ_FLOAT_UNARY(make_cosh, std::cosh(x))
PTQ_FLOAT_UNARY(make_asinh, std::asinh(x))
PTQ_FLOAT_UNARY(make_acosh, std::acosh(x))
PTQ_FLOAT_UNARY(make_atanh, std::atanh(x))

#undef PTQ_FLOAT_UNARY

// Erf: float32 by a rational approximation that vectorises (erf.h); the reference kernel, and
// double, by libm.
Expected<std::unique_ptr<Kernel>> make_erf(const KernelContext& ctx) {
  if (ctx.reference) return make_float_unary(ctx, [](auto x) { return std::erf(x); });
  return make_float_unary(ctx, [](auto x) { return erf_of(x); });
}

Expected<std::unique_ptr<Kernel>> make_neg(const KernelContext& ctx) {
  return make_unary(ctx, SignedTypes{}, true, [](auto x) { return -x; });
}

Expected<std::unique_ptr<Kernel>> make_abs(const KernelContext& ctx) {
  return make_unary(ctx, NumericTypes{}, true, [](auto x) {
    if constexpr (std::is_unsigned_v<decltype(x)>) {
      return x;
    } else {
      return x < 0 ? -x : x;
    }
  });
}

Expected<std::unique_ptr<Kernel>> make_sign(const KernelContext& ctx) {
  return make_unary(ctx, NumericTypes{}, true, [](auto x) {
    using T = decltype(x);
    return static_cast<T>((T(0) < x) - (x < T(0)));
  });
}

namespace {

// A float -> bool predicate kernel.
template <typename F>
Expected<std::unique_ptr<Kernel>> make_float_predicate(const KernelContext& ctx, F pred) {
  auto run = [node = ctx.node, threads = ctx.threads, pred](Inputs in, Outputs out,
                                                            Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    out[0] = alloc.allocate(ir::DType::kBool, x.shape());
    const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_unary<T, bool>(x, out[0], threads, pred);
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_is_nan(const KernelContext& ctx) {
  return make_float_predicate(ctx, [](auto x) { return std::isnan(x); });
}

Expected<std::unique_ptr<Kernel>> make_is_inf(const KernelContext& ctx) {
  const bool negative = ctx.node.attr_int("detect_negative", 1) != 0;
  const bool positive = ctx.node.attr_int("detect_positive", 1) != 0;
  return make_float_predicate(ctx, [negative, positive](auto x) {
    return std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative));
  });
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
