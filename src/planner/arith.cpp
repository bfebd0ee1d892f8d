// Symmetric INT8 arithmetic for weights and biases, and BatchNormalization folding.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ptq/planner.h"

namespace ptq::planner {

namespace {

// Splits a tensor along `axis` into (outer, channels, inner) so element (o, c, i) lies at
// (o * channels + c) * inner + i. axis -1 means one channel.
struct Slicing {
  int64_t outer = 1, channels = 1, inner = 1;
};

Slicing slicing(const ir::Shape& shape, int64_t axis) {
  Slicing s;
  if (axis < 0) {
    s.inner = ir::num_elements(shape);
    return s;
  }
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t v = shape[static_cast<size_t>(d)];
    if (d < axis) s.outer *= v;
    if (d == axis) s.channels = v;
    if (d > axis) s.inner *= v;
  }
  return s;
}

// Round half to even regardless of the caller's rounding mode.
double round_even(double x) {
  if (std::fabs(x - std::trunc(x)) == 0.5) return 2.0 * std::round(x / 2.0);
  return std::round(x);
}

constexpr double kInt32Max = 2147483647.0;

}  // namespace

std::vector<float> weight_scales(const ir::Tensor& w, int64_t axis) {
  const Slicing s = slicing(w.shape(), axis);
  std::vector<double> amax(static_cast<size_t>(s.channels), 0.0);
  const float* data = w.data<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float* p = data + (o * s.channels + c) * s.inner;
      double& m = amax[static_cast<size_t>(c)];
      for (int64_t i = 0; i < s.inner; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
    }
  }
  std::vector<float> scales(amax.size());
  for (size_t c = 0; c < amax.size(); ++c) {
    scales[c] = amax[c] > 0.0 ? static_cast<float>(amax[c] / 127.0) : 1.0f;
  }
  return scales;
}

ir::Tensor quantize_weights(const ir::Tensor& w, int64_t axis, std::span<const float> scales) {
  const Slicing s = slicing(w.shape(), axis);
  ir::Tensor q(ir::DType::kInt8, w.shape());
  const float* src = w.data<float>();
  int8_t* dst = q.data<int8_t>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const double scale = scales[static_cast<size_t>(c)];
      const int64_t base = (o * s.channels + c) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) {
        const double v = round_even(static_cast<double>(src[base + i]) / scale);
        dst[base + i] = static_cast<int8_t>(std::clamp(v, -127.0, 127.0));
      }
    }
  }
  return q;
}

ir::Tensor fake_quantize_weights(const ir::Tensor& w, int64_t axis) {
  const std::vector<float> scales = weight_scales(w, axis);
  const ir::Tensor q = quantize_weights(w, axis, scales);
  const Slicing s = slicing(w.shape(), axis);
  ir::Tensor out(ir::DType::kFloat32, w.shape());
  const int8_t* src = q.data<int8_t>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const float scale = scales[static_cast<size_t>(c)];
      const int64_t base = (o * s.channels + c) * s.inner;
      // As DequantizeLinear computes it: (q - 0) * scale in float32.
      for (int64_t i = 0; i < s.inner; ++i) {
        dst[base + i] = static_cast<float>(src[base + i]) * scale;
      }
    }
  }
  return out;
}

int64_t widen_scales_for_bias(std::span<const float> bias, float input_scale,
                              std::vector<float>& weight_scales) {
  int64_t widened = 0;
  for (size_t c = 0; c < bias.size(); ++c) {
    float& ws = weight_scales[weight_scales.size() == 1 ? 0 : c % weight_scales.size()];
    // Keep |bias| / (s_in * s_w) within int32, with room for rounding.
    const double needed = std::fabs(static_cast<double>(bias[c])) / (kInt32Max - 1.0);
    // The bias scale is stored as the float32 product, so test that product.
    if (static_cast<double>(input_scale * ws) >= needed) continue;
    float wider = static_cast<float>(needed / static_cast<double>(input_scale));
    while (static_cast<double>(input_scale * wider) < needed) {
      wider = std::nextafter(wider, std::numeric_limits<float>::infinity());
    }
    ws = wider;
    ++widened;
  }
  return widened;
}

ir::Tensor quantize_bias(const ir::Tensor& bias, float input_scale,
                         std::span<const float> weight_scales, std::vector<float>& bias_scales) {
  const int64_t n = bias.size();
  ir::Tensor q(ir::DType::kInt32, {n});
  bias_scales.resize(static_cast<size_t>(n));
  const float* b = bias.data<float>();
  for (int64_t c = 0; c < n; ++c) {
    const float ws = weight_scales[static_cast<size_t>(c) % weight_scales.size()];
    const float s = input_scale * ws;
    bias_scales[static_cast<size_t>(c)] = s;
    const double v = round_even(static_cast<double>(b[c]) / static_cast<double>(s));
    q.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(v, -kInt32Max - 1.0, kInt32Max));
  }
  return q;
}

Status fold_batchnorm_into(ir::Tensor& weight, ir::Tensor& bias, const ir::Tensor& gamma,
                           const ir::Tensor& beta, const ir::Tensor& mean, const ir::Tensor& var,
                           float epsilon, bool transposed, int64_t group) {
  if (weight.dtype() != ir::DType::kFloat32 || weight.rank() < 3) {
    return invalid_input("cannot fold BatchNormalization: weight is not float32 of rank >= 3");
  }
  const int64_t per_group = transposed ? weight.dim(1) : 0;
  const int64_t out_channels = transposed ? per_group * group : weight.dim(0);
  for (const ir::Tensor* t : {&gamma, &beta, &mean, &var}) {
    if (t->dtype() != ir::DType::kFloat32 || t->size() != out_channels) {
      return invalid_input("cannot fold BatchNormalization: parameter of {} values for {} channels",
                           t->size(), out_channels);
    }
  }
  if (!bias.empty() && (bias.dtype() != ir::DType::kFloat32 || bias.size() != out_channels)) {
    return invalid_input("cannot fold BatchNormalization: conv bias has {} values for {} channels",
                         bias.size(), out_channels);
  }
  std::vector<double> factor(static_cast<size_t>(out_channels));
  for (int64_t c = 0; c < out_channels; ++c) {
    factor[static_cast<size_t>(c)] =
        static_cast<double>(gamma.data<float>()[c]) /
        std::sqrt(static_cast<double>(var.data<float>()[c]) + static_cast<double>(epsilon));
  }
  float* w = weight.data<float>();
  if (!transposed) {
    const int64_t inner = weight.size() / out_channels;
    for (int64_t c = 0; c < out_channels; ++c) {
      for (int64_t i = 0; i < inner; ++i) {
        float& v = w[c * inner + i];
        v = static_cast<float>(static_cast<double>(v) * factor[static_cast<size_t>(c)]);
      }
    }
  } else {
    // [Cin, Cout/group, k…]: input row r belongs to group r / (Cin / group).
    const int64_t cin = weight.dim(0);
    const int64_t inner = weight.size() / (cin * per_group);
    for (int64_t r = 0; r < cin; ++r) {
      const int64_t g = r / (cin / group);
      for (int64_t j = 0; j < per_group; ++j) {
        const double f = factor[static_cast<size_t>(g * per_group + j)];
        for (int64_t i = 0; i < inner; ++i) {
          float& v = w[(r * per_group + j) * inner + i];
          v = static_cast<float>(static_cast<double>(v) * f);
        }
      }
    }
  }
  ir::Tensor folded(ir::DType::kFloat32, {out_channels});
  for (int64_t c = 0; c < out_channels; ++c) {
    const double b0 = bias.empty() ? 0.0 : static_cast<double>(bias.data<float>()[c]);
    folded.data<float>()[c] = static_cast<float>(
        (b0 - static_cast<double>(mean.data<float>()[c])) * factor[static_cast<size_t>(c)] +
        static_cast<double>(beta.data<float>()[c]));
  }
  bias = std::move(folded);
  return Status::ok();
}

}  // namespace ptq::planner
