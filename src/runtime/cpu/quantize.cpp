// QuantizeLinear and DequantizeLinear (opsets 10–21): per-tensor, per-axis and blocked scales;
// int8/uint8, int16/uint16 (opset 21); round half to even and saturate. Arithmetic is float32
// in the order ONNX Runtime uses (x / scale, round, + zero point, clamp), so results match it
// bit for bit. The per-element loops are the reference; outside reference mode, per-tensor and
// per-axis float32 scales run as contiguous runs of one scale (the same arithmetic, in loops
// that vectorise: a fake-quantized model spends much of its time here).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// How the scale (and zero point) indexes X viewed as [outer, a, inner] around `axis`.
struct ScaleMap {
  int64_t outer = 1, a = 1, inner = 1;
  int64_t block = 0;    // > 0: blocked along axis
  bool per_tensor = true;
  int64_t at(int64_t o, int64_t ai, int64_t i) const {
    if (per_tensor) return 0;
    if (block == 0) return ai;
    return (o * ((a + block - 1) / block) + ai / block) * inner + i;
  }
};

Expected<ScaleMap> scale_map(const ir::Node& node, const ir::Tensor& x, const ir::Tensor& scale,
                             const ir::Tensor* zp, int64_t axis_attr, int64_t block) {
  if (zp != nullptr && zp->shape() != scale.shape()) {
    return node_error(node, "zero point {} and scale {} must have one shape",
                      ir::shape_str(zp->shape()), ir::shape_str(scale.shape()));
  }
  ScaleMap m;
  if (block == 0 && scale.size() == 1 && scale.rank() <= 1) return m;
  PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
  m.per_tensor = false;
  m.block = block;
  m.outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
  m.a = x.dim(axis);
  m.inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  if (block == 0) {
    if (scale.rank() != 1 || scale.dim(0) != m.a) {
      return node_error(node, "per-axis scale {} must be [{}] (axis {} of {})",
                        ir::shape_str(scale.shape()), m.a, axis, ir::shape_str(x.shape()));
    }
    return m;
  }
  ir::Shape want = x.shape();
  want[static_cast<size_t>(axis)] = (m.a + block - 1) / block;
  if (scale.shape() != want) {
    return node_error(node, "blocked scale {} must be {} (block_size {} on axis {})",
                      ir::shape_str(scale.shape()), ir::shape_str(want), block, axis);
  }
  return m;
}

// Values as float32 (scales; float16 / bfloat16 / int32 inputs) ; half types widen exactly.
std::vector<float> scale_values(const ir::Tensor& s) {
  std::vector<float> v(static_cast<size_t>(s.size()));
  for (int64_t i = 0; i < s.size(); ++i) v[i] = static_cast<float>(s.as_double(i));
  return v;
}

std::vector<int32_t> zero_points(const ir::Tensor* zp, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n), 0);
  for (int64_t i = 0; zp != nullptr && i < n; ++i) v[i] = static_cast<int32_t>(zp->as_int64(i));
  return v;
}

// One element, in ONNX Runtime's float32 order: x / scale, round half to even, + zero point,
// clamp to Q's range [lo, hi]; and back: (q - zero point) * scale.
template <typename Q>
inline Q quantize_value(float x, float scale, float zero, float lo, float hi) {
  return static_cast<Q>(std::min(std::max(std::nearbyint(x / scale) + zero, lo), hi));
}

template <typename Q>
inline float dequantize_value(Q q, float scale, int32_t zero) {
  return static_cast<float>(static_cast<int32_t>(q) - zero) * scale;
}

// One run of n elements sharing a scale. Out of line with restrict pointers: stores through an
// int8 pointer may alias anything, so inside the lambdas GCC reloaded the scale and bounds per
// element and kept the loop scalar; here it vectorises.
template <typename Q>
void quantize_run(const float* __restrict x, Q* __restrict y, int64_t n, float scale, float zero,
                  float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_value<Q>(x[i], scale, zero, lo, hi);
}

template <typename Q>
void dequantize_run(const Q* __restrict x, float* __restrict y, int64_t n, float scale,
                    int32_t zero) {
  for (int64_t i = 0; i < n; ++i) y[i] = dequantize_value(x[i], scale, zero);
}

// Calls run(o, ai, flat, n) for runs of n consecutive elements of X from element `flat`: row
// (o, ai) of X viewed as [outer, a, inner] (per-tensor: chunks of the whole tensor, o = ai =
// 0), split across threads. Outside blocked scales a run shares one scale, m.at(o, ai, 0).
template <typename F>
void for_each_run(const ScaleMap& m, int64_t size, int threads, F&& run) {
  if (m.per_tensor) {
    parallel_for(threads, size, [&](int64_t begin, int64_t end) { run(0, 0, begin, end - begin); },
                 16384);
    return;
  }
  parallel_for(threads, m.outer * m.a, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) run(r / m.a, r % m.a, r * m.inner, m.inner);
  }, std::max<int64_t>(1, 16384 / std::max<int64_t>(m.inner, 1)));
}

// Calls fn(o, ai, i, flat) for every element of X (i: its index within the row).
template <typename F>
void for_each_element(const ScaleMap& m, int64_t size, int threads, F&& fn) {
  for_each_run(m, size, threads, [&](int64_t o, int64_t ai, int64_t flat, int64_t n) {
    const int64_t i0 = m.per_tensor ? flat : 0;
    for (int64_t i = 0; i < n; ++i) fn(o, ai, i0 + i, flat + i);
  });
}

class QuantizeKernel final : public Kernel {
 public:
  explicit QuantizeKernel(const KernelContext& ctx)
      : node_(ctx.node),
        axis_(ctx.node.attr_int("axis", 1)),
        block_(ctx.node.attr_int("block_size", 0)),
        output_dtype_(ctx.node.attr_int("output_dtype", 0)),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& scale = *in[1];
    const ir::Tensor* zp = input_or_null(in, 2);
    ir::DType to = ir::DType::kUInt8;
    if (zp != nullptr) {
      to = zp->dtype();
    } else if (output_dtype_ != 0) {
      to = static_cast<ir::DType>(output_dtype_);
    }
    if (zp != nullptr && output_dtype_ != 0 && static_cast<int64_t>(to) != output_dtype_) {
      return node_error(node_, "output_dtype {} differs from the zero point's {}", output_dtype_,
                        ir::dtype_name(to));
    }
    PTQ_ASSIGN_OR_RETURN(ScaleMap m, scale_map(node_, x, scale, zp, axis_, block_));
    const std::vector<float> s = scale_values(scale);
    const std::vector<int32_t> z = zero_points(zp, scale.size());
    out[0] = alloc.allocate(to, x.shape());
    std::vector<float> widened;  // float16 / bfloat16 / int32 inputs
    if (x.dtype() != ir::DType::kFloat32) {
      if (!ir::is_float(x.dtype()) && x.dtype() != ir::DType::kInt32)
        return unsupported_dtype(node_, x.dtype());
      widened = scale_values(x);
    }
    const float* xf = widened.empty() ? x.data<float>() : widened.data();
    const bool done = dispatch<int8_t, uint8_t, int16_t, uint16_t>(to, [&](auto tag) {
      using Q = typename decltype(tag)::type;
      const float lo = static_cast<float>(std::numeric_limits<Q>::min());
      const float hi = static_cast<float>(std::numeric_limits<Q>::max());
      Q* y = out[0].data<Q>();
      if (!reference_ && m.block == 0) {
        for_each_run(m, x.size(), threads_, [&](int64_t o, int64_t ai, int64_t flat, int64_t n) {
          const int64_t k = m.at(o, ai, 0);
          quantize_run<Q>(xf + flat, y + flat, n, s[k], static_cast<float>(z[k]), lo, hi);
        });
        return;
      }
      for_each_element(m, x.size(), threads_, [&](int64_t o, int64_t a, int64_t i, int64_t flat) {
        const int64_t k = m.at(o, a, i);
        y[flat] = quantize_value<Q>(xf[flat], s[k], static_cast<float>(z[k]), lo, hi);
      });
    });
    if (!done) {
      return node_error(node_, "quantizing to {} is not supported (int8, uint8, int16, uint16)",
                        ir::dtype_name(to));
    }
    return Status::ok();
  }

 private:
  const ir::Node& node_;
  int64_t axis_, block_, output_dtype_;
  int threads_;
  bool reference_;
};

class DequantizeKernel final : public Kernel {
 public:
  explicit DequantizeKernel(const KernelContext& ctx)
      : node_(ctx.node),
        axis_(ctx.node.attr_int("axis", 1)),
        block_(ctx.node.attr_int("block_size", 0)),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& scale = *in[1];
    const ir::Tensor* zp = input_or_null(in, 2);
    if (zp != nullptr && zp->dtype() != x.dtype()) {
      return node_error(node_, "zero point type {} differs from x type {}",
                        ir::dtype_name(zp->dtype()), ir::dtype_name(x.dtype()));
    }
    if (scale.dtype() != ir::DType::kFloat32 && scale.dtype() != ir::DType::kFloat16 &&
        scale.dtype() != ir::DType::kBFloat16) {
      return node_error(node_, "scale type {} is not supported", ir::dtype_name(scale.dtype()));
    }
    PTQ_ASSIGN_OR_RETURN(ScaleMap m, scale_map(node_, x, scale, zp, axis_, block_));
    const std::vector<float> s = scale_values(scale);
    const std::vector<int32_t> z = zero_points(zp, scale.size());
    out[0] = alloc.allocate(scale.dtype(), x.shape());
    const ir::DType to = scale.dtype();
    void* yraw = out[0].raw();
    float* yf = to == ir::DType::kFloat32 ? out[0].data<float>() : nullptr;
    const bool done = dispatch<int8_t, uint8_t, int16_t, uint16_t,
                               int32_t>(x.dtype(), [&](auto tag) {
      using Q = typename decltype(tag)::type;
      const Q* xp = x.data<Q>();
      if (!reference_ && m.block == 0 && yf != nullptr) {
        for_each_run(m, x.size(), threads_, [&](int64_t o, int64_t ai, int64_t flat, int64_t n) {
          const int64_t k = m.at(o, ai, 0);
          dequantize_run<Q>(xp + flat, yf + flat, n, s[k], z[k]);
        });
        return;
      }
      for_each_element(m, x.size(), threads_, [&](int64_t o, int64_t a, int64_t i, int64_t flat) {
        const int64_t k = m.at(o, a, i);
        const float v = dequantize_value(xp[flat], s[k], z[k]);
        if (yf != nullptr) {  // float32
          yf[flat] = v;
        } else if (to == ir::DType::kFloat16) {
          static_cast<uint16_t*>(yraw)[flat] = ir::float_to_half(v);
        } else {
          static_cast<uint16_t*>(yraw)[flat] = ir::float_to_bfloat16(v);
        }
      });
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  int64_t axis_, block_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_quantize_linear(const KernelContext& ctx) {
  if (ctx.node.attr_int("block_size", 0) < 0)
    return node_error(ctx.node, "block_size must be >= 0");
  return std::unique_ptr<Kernel>(std::make_unique<QuantizeKernel>(ctx));
}
Expected<std::unique_ptr<Kernel>> make_dequantize_linear(const KernelContext& ctx) {
  if (ctx.node.attr_int("block_size", 0) < 0)
    return node_error(ctx.node, "block_size must be >= 0");
  return std::unique_ptr<Kernel>(std::make_unique<DequantizeKernel>(ctx));
}

}  // namespace ptq::runtime::cpu
