// Activation functions: Relu, LeakyRelu, PRelu, Clip, Sigmoid, Swish, Tanh, HardSigmoid,
// HardSwish, Elu, Selu, Celu, Gelu, Softplus, Softsign, Mish, ThresholdedRelu, Shrink. Each is
// a plain elementwise map; formulas follow the ONNX operator docs.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <cmath>
#include <limits>
#include <type_traits>

#include "elementwise_util.h"
#include "erf.h"
#include "exp.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// exp(x) / (1 + exp(x)) without overflow for large |x|, by libm (the reference kernels).
template <typename T>
T sigmoid_libm(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

// The same for the fast kernels: for float, 1 / (1 + exp(-x)) with exp_float(), branch-free so
// that the elementwise loop vectorises; exp(-x) overflowing to +inf gives 0 and underflowing to
// 0 gives 1, both within a float ulp of the true value. A NaN comes back as x itself (not as
// -x's NaN, whose sign differs), so Sigmoid then Mul(s, x) gives Swish's bits.
template <typename T>
T sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const float y = 1.0f / (1.0f + exp_float(-x));
    return x == x ? y : x;
  } else {
    return sigmoid_libm(x);
  }
}

// log(1 + exp(x)) without overflow.
template <typename T>
T softplus(T x) {
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_relu(const KernelContext& ctx) {
  return make_unary(ctx, SignedTypes{}, true, [](auto x) { return x > 0 ? x : decltype(x)(0); });
}

Expected<std::unique_ptr<Kernel>> make_leaky_relu(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 0.01f);
  return make_float_unary(ctx, [alpha](auto x) {
    using T = decltype(x);
    return x >= T(0) ? x : static_cast<T>(alpha) * x;
  });
}

Expected<std::unique_ptr<Kernel>> make_thresholded_relu(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 1.0f);
  return make_float_unary(ctx, [alpha](auto x) {
    using T = decltype(x);
    return x > static_cast<T>(alpha) ? x : T(0);
  });
}

Expected<std::unique_ptr<Kernel>> make_sigmoid(const KernelContext& ctx) {
  if (ctx.reference) return make_float_unary(ctx, [](auto x) { return sigmoid_libm(x); });
  return make_float_unary(ctx, [](auto x) { return sigmoid(x); });
}

// Swish (opset 24): x * sigmoid(alpha * x); also what the executor's optimizer runs for a
// spelled-out SiLU, x * Sigmoid(x).
Expected<std::unique_ptr<Kernel>> make_swish(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 1.0f);
  if (ctx.reference) {
    return make_float_unary(ctx, [alpha](auto x) {
      using T = decltype(x);
      return x * sigmoid_libm(static_cast<T>(alpha) * x);
    });
  }
  return make_float_unary(ctx, [alpha](auto x) {
    using T = decltype(x);
    return x * sigmoid(static_cast<T>(alpha) * x);
  });
}

Expected<std::unique_ptr<Kernel>> make_tanh(const KernelContext& ctx) {
  return make_float_unary(ctx, [](auto x) { return std::tanh(x); });
}

Expected<std::unique_ptr<Kernel>> make_hard_sigmoid(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 0.2f);
  const double beta = ctx.node.attr_float("beta", 0.5f);
  return make_float_unary(ctx, [alpha, beta](auto x) {
    using T = decltype(x);
    return std::clamp(static_cast<T>(alpha) * x + static_cast<T>(beta), T(0), T(1));
  });
}

Expected<std::unique_ptr<Kernel>> make_hard_swish(const KernelContext& ctx) {
  return make_float_unary(ctx, [](auto x) {
    using T = decltype(x);
    return x * std::clamp(x / T(6) + T(0.5), T(0), T(1));
  });
}

Expected<std::unique_ptr<Kernel>> make_elu(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 1.0f);
  return make_float_unary(ctx, [alpha](auto x) {
    using T = decltype(x);
    return x >= T(0) ? x : static_cast<T>(alpha) * std::expm1(x);
  });
}

Expected<std::unique_ptr<Kernel>> make_celu(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 1.0f);
  return make_float_unary(ctx, [alpha](auto x) {
    using T = decltype(x);
    const T a = static_cast<T>(alpha);
    return std::max(T(0), x) + std::min(T(0), a * std::expm1(x / a));
  });
}

Expected<std::unique_ptr<Kernel>> make_selu(const KernelContext& ctx) {
  const double alpha = ctx.node.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = ctx.node.attr_float("gamma", 1.05070102214813232421875f);
  return make_float_unary(ctx, [alpha, gamma](auto x) {
    using T = decltype(x);
    const T y = x > T(0) ? x : static_cast<T>(alpha) * std::expm1(x);
    return static_cast<T>(gamma) * y;
  });
}

// Gelu (opset 20): approximate "none" is x * Phi(x), "tanh" the tanh approximation.
Expected<std::unique_ptr<Kernel>> make_gelu(const KernelContext& ctx) {
  const std::string approximate = ctx.node.attr_string("approximate", "none");
  if (approximate == "tanh" && ctx.reference) {
    return make_float_unary(ctx, [](auto x) {
      using T = decltype(x);
      const T k = static_cast<T>(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    });
  }
  if (approximate == "tanh") {  // 0.5 (1 + tanh(u)) = sigmoid(2u): the vectorised sigmoid
    return make_float_unary(ctx, [](auto x) {
      using T = decltype(x);
      const T k = static_cast<T>(2 * 0.7978845608028654);  // 2 sqrt(2 / pi)
      return x * sigmoid(k * (x + T(0.044715) * x * x * x));
    });
  }
  if (approximate != "none") {
    return node_error(ctx.node, "approximate '{}' is not one of none, tanh", approximate);
  }
  if (ctx.reference) {
    return make_float_unary(ctx, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(0.7071067811865476)));
    });
  }
  return make_float_unary(ctx, [](auto x) {  // erf as the Erf kernel computes it (erf.h)
    using T = decltype(x);
    return T(0.5) * x * (T(1) + erf_of(x * static_cast<T>(0.7071067811865476)));
  });
}

Expected<std::unique_ptr<Kernel>> make_softplus(const KernelContext& ctx) {
  return make_float_unary(ctx, [](auto x) { return softplus(x); });
}

Expected<std::unique_ptr<Kernel>> make_softsign(const KernelContext& ctx) {
  return make_float_unary(ctx, [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
}

Expected<std::unique_ptr<Kernel>> make_mish(const KernelContext& ctx) {
  return make_float_unary(ctx, [](auto x) { return x * std::tanh(softplus(x)); });
}

Expected<std::unique_ptr<Kernel>> make_shrink(const KernelContext& ctx) {
  const double lambd = ctx.node.attr_float("lambd", 0.5f);
  const double bias = ctx.node.attr_float("bias", 0.0f);
  return make_unary(ctx, SignedTypes{}, true, [lambd, bias](auto x) {
    using T = decltype(x);
    const auto v = static_cast<double>(x);
    return static_cast<T>(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
  });
}

// PRelu: slope broadcast onto X (unidirectional).
Expected<std::unique_ptr<Kernel>> make_prelu(const KernelContext& ctx) {
  auto run = [node = ctx.node, threads = ctx.threads](Inputs in, Outputs out,
                                                      Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& slope = *in[1];
    auto shape = broadcast_shapes(x.shape(), slope.shape());
    if (!shape || *shape != x.shape() || slope.dtype() != x.dtype()) {
      return node_error(node, "slope {} does not broadcast to X {}", ir::shape_str(slope.shape()),
                        ir::shape_str(x.shape()));
    }
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const bool ok = SignedTypes{}(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_broadcast<T, T, T>(x, slope, out[0], threads,
                                [](T v, T s) { return v < T(0) ? static_cast<T>(s * v) : v; });
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

// Clip: bounds are attributes before opset 11, optional scalar inputs from 11 on.
Expected<std::unique_ptr<Kernel>> make_clip(const KernelContext& ctx) {
  const bool bounds_as_inputs = ctx.opset >= 11;
  const double attr_min = ctx.node.attr_float("min", -std::numeric_limits<float>::max());
  const double attr_max = ctx.node.attr_float("max", std::numeric_limits<float>::max());
  auto run = [node = ctx.node, threads = ctx.threads, bounds_as_inputs, attr_min, attr_max](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    for (size_t i = 1; i < 3 && bounds_as_inputs; ++i) {
      const ir::Tensor* b = input_or_null(in, i);
      if (b != nullptr && b->size() != 1) {
        return node_error(node, "bound input {} must be a scalar, got {}", i,
                          ir::shape_str(b->shape()));
      }
    }
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T lo = std::numeric_limits<T>::lowest();
      T hi = std::numeric_limits<T>::max();
      if (bounds_as_inputs) {
        if (const ir::Tensor* b = input_or_null(in, 1)) lo = b->data<T>()[0];
        if (const ir::Tensor* b = input_or_null(in, 2)) hi = b->data<T>()[0];
      } else {
        lo = static_cast<T>(attr_min);
        hi = static_cast<T>(attr_max);
      }
      map_unary<T, T>(x, out[0], threads, [lo, hi](T v) { return std::min(std::max(v, lo), hi); });
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
