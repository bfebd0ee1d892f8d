// Elementwise ops on Vulkan: binary ops with broadcasting (binary.comp), activations and unary
// math (unary.comp), BatchNormalization as a per-channel affine map (channel_affine.comp).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "op.h"

namespace ptq::vulkan {

namespace {

constexpr uint32_t kLocal = 256;

bool all_float(const OpBuild& b) {
  for (const ValueDesc& v : b.inputs) {
    if (v.present && v.dtype != ir::DType::kFloat32) return false;
  }
  for (const ValueDesc& v : b.outputs) {
    if (v.present && v.dtype != ir::DType::kFloat32) return false;
  }
  return true;
}

struct BinaryPush {
  uint32_t n = 0, rank = 0, op = 0, contiguous = 0;
  std::array<uint32_t, 6> dims{};
  std::array<int32_t, 6> sa{};
  std::array<int32_t, 6> sb{};
  uint32_t act = 0;  // a folded Relu / Clip (Activation), applied by the last step
  float act_min = 0.0f, act_max = 0.0f;
};

// Row-major strides of `in` broadcast against `out` (0 on broadcast dims), aligned right.
std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t di = in.size() - 1 - k;
    const size_t dout = out.size() - 1 - k;
    s[dout] = in[di] == 1 ? 0 : stride;
    stride *= in[di];
  }
  return s;
}

// Collapses dims of size 1 and neighbours that every operand walks contiguously.
Expected<BinaryPush> binary_layout(const ir::Shape& a, const ir::Shape& b, const ir::Shape& out) {
  BinaryPush p;
  p.n = static_cast<uint32_t>(ir::num_elements(out));
  if (a == out && b == out) {
    p.contiguous = 1;
    return p;
  }
  std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  std::vector<int64_t> dims;
  std::vector<int64_t> ra, rb;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!dims.empty() && ra.back() == sa[d] * out[d] && rb.back() == sb[d] * out[d]) {
      dims.back() *= out[d];
      ra.back() = sa[d];
      rb.back() = sb[d];
      continue;
    }
    dims.push_back(out[d]);
    ra.push_back(sa[d]);
    rb.push_back(sb[d]);
  }
  if (dims.size() > 6) return unsupported("broadcast over {} dims (Vulkan handles 6)", dims.size());
  p.rank = static_cast<uint32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    p.dims[d] = static_cast<uint32_t>(dims[d]);
    p.sa[d] = static_cast<int32_t>(ra[d]);
    p.sb[d] = static_cast<int32_t>(rb[d]);
  }
  return p;
}

int binary_code(std::string_view op) {
  if (op == "Add" || op == "Sum" || op == "Mean") return 0;
  if (op == "Sub") return 1;
  if (op == "Mul") return 2;
  if (op == "Div") return 3;
  if (op == "Pow") return 4;
  if (op == "Max") return 5;
  if (op == "Min") return 6;
  if (op == "PRelu") return 7;
  return -1;
}

// A chain of binary dispatches: out = in0 op in1 (op in2 …); Mean scales at the end.
class BinaryOp final : public VulkanOp {
 public:
  BinaryOp(int code, std::vector<BinaryPush> steps, float mean_scale)
      : code_(code), steps_(std::move(steps)), mean_scale_(mean_scale) {}

  // The activation runs in the last binary step; Mean's scale comes after that, so not there.
  bool fuse(const Activation& act) override {
    if (mean_scale_ != 1.0f || steps_.empty() || steps_.back().act != 0) return false;
    steps_.back().act = act.kind;
    steps_.back().act_min = act.min;
    steps_.back().act_max = act.max;
    return true;
  }

  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const DeviceTensor& y = out[0];
    if (in.size() == 1) {
      struct {
        uint32_t n, op;
        float alpha, beta;
      } push{static_cast<uint32_t>(y.size()), 29, 1.0f, 0.0f};
      return rec.dispatch("unary", {*in[0], y}, push, groups_for(y.size(), kLocal));
    }
    for (size_t s = 0; s < steps_.size(); ++s) {
      BinaryPush push = steps_[s];
      push.op = static_cast<uint32_t>(code_);
      const Binding a = s == 0 ? Binding(*in[0]) : Binding(y);
      PTQ_RETURN_IF_ERROR(
          rec.dispatch("binary", {a, *in[s + 1], y}, push, groups_for(push.n, kLocal)));
    }
    if (mean_scale_ != 1.0f) {
      struct {
        uint32_t n, op;
        float alpha, beta;
      } push{static_cast<uint32_t>(y.size()), 30, mean_scale_, 0.0f};
      PTQ_RETURN_IF_ERROR(rec.dispatch("unary", {y, y}, push, groups_for(y.size(), kLocal)));
    }
    return Status::ok();
  }

 private:
  int code_;
  std::vector<BinaryPush> steps_;
  float mean_scale_;
};

struct UnaryCode {
  std::string_view op;
  uint32_t code;
};
constexpr UnaryCode kUnary[] = {
    {"Relu", 0},      {"Sigmoid", 1},  {"Tanh", 2},         {"Exp", 3},       {"Log", 4},
    {"Sqrt", 5},      {"Abs", 6},      {"Neg", 7},          {"Erf", 8},       {"Gelu", 9},
    {"LeakyRelu", 11}, {"Elu", 12},    {"Clip", 13},        {"HardSigmoid", 14},
    {"HardSwish", 15}, {"Softplus", 16}, {"Reciprocal", 17}, {"Floor", 18},   {"Ceil", 19},
    {"Round", 20},    {"Sin", 21},     {"Cos", 22},         {"Mish", 23},     {"Selu", 24},
    {"Celu", 25},     {"Sign", 26},    {"Softsign", 27},    {"ThresholdedRelu", 28},
    {"Identity", 29},
};

class UnaryOp final : public VulkanOp {
 public:
  UnaryOp(uint32_t code, float alpha, float beta) : code_(code), alpha_(alpha), beta_(beta) {}
  bool reads_on_device(size_t i) const override { return i == 0; }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    struct {
      uint32_t n, op;
      float alpha, beta;
    } push{static_cast<uint32_t>(out[0].size()), code_, alpha_, beta_};
    return rec.dispatch("unary", {*in[0], out[0]}, push, groups_for(out[0].size(), kLocal));
  }

 private:
  uint32_t code_;
  float alpha_, beta_;
};

// Clip's bounds: attributes before opset 11, optional constant inputs after.
Status clip_bounds(const OpBuild& b, float& lo, float& hi) {
  lo = -std::numeric_limits<float>::infinity();
  hi = std::numeric_limits<float>::infinity();
  if (b.opset < 11) {
    lo = b.node.attr_float("min", lo);
    hi = b.node.attr_float("max", hi);
    return Status::ok();
  }
  for (size_t i = 1; i <= 2; ++i) {
    if (!b.has_input(i)) continue;
    const ir::Tensor* t = b.constant(i);
    if (t == nullptr) return unsupported("Clip bound {} is not a constant", i);
    if (t->size() != 1) return unsupported("Clip bound {} is not a scalar", i);
    (i == 1 ? lo : hi) = static_cast<float>(t->as_double(0));
  }
  return Status::ok();
}

class ChannelAffineOp final : public VulkanOp {
 public:
  ChannelAffineOp(Buffer scale, Buffer shift, uint32_t channels, uint32_t inner)
      : scale_(std::move(scale)), shift_(std::move(shift)), channels_(channels), inner_(inner) {}
  bool reads_on_device(size_t i) const override { return i == 0; }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    struct {
      uint32_t n, channels, inner;
    } push{static_cast<uint32_t>(out[0].size()), channels_, inner_};
    return rec.dispatch("channel_affine", {*in[0], scale_, shift_, out[0]}, push,
                        groups_for(out[0].size(), kLocal));
  }

 private:
  Buffer scale_, shift_;
  uint32_t channels_, inner_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_binary_vulkan(const OpBuild& b) {
  if (!all_float(b)) return unsupported("only float32 runs on Vulkan");
  const int code = binary_code(b.node.op_type);
  if (code < 0) return unsupported("no Vulkan binary op {}", b.node.op_type);
  const ir::Shape& out = b.outputs[0].shape;
  std::vector<BinaryPush> steps;
  for (size_t i = 1; i < b.inputs.size(); ++i) {
    const ir::Shape& a = i == 1 ? b.in(0).shape : out;
    PTQ_ASSIGN_OR_RETURN(BinaryPush p, binary_layout(a, b.in(i).shape, out));
    steps.push_back(p);
  }
  // Step 0 broadcasts both operands to the output shape, so later steps can read the
  // output in place: broadcasting is associative.
  const float scale = b.node.op_type == "Mean" ? 1.0f / static_cast<float>(b.inputs.size()) : 1.0f;
  return std::unique_ptr<VulkanOp>(std::make_unique<BinaryOp>(code, std::move(steps), scale));
}

Expected<std::unique_ptr<VulkanOp>> make_unary_vulkan(const OpBuild& b) {
  if (!b.has_input(0) || b.in(0).dtype != ir::DType::kFloat32 ||
      b.outputs[0].dtype != ir::DType::kFloat32) {
    return unsupported("only float32 runs on Vulkan");
  }
  const std::string& op = b.node.op_type;
  auto it = std::find_if(std::begin(kUnary), std::end(kUnary),
                         [&](const UnaryCode& u) { return u.op == op; });
  if (it == std::end(kUnary)) return unsupported("no Vulkan unary op {}", op);
  uint32_t code = it->code;
  float alpha = 0.0f, beta = 0.0f;
  if (op == "LeakyRelu") alpha = b.node.attr_float("alpha", 0.01f);
  if (op == "Elu" || op == "Celu") alpha = b.node.attr_float("alpha", 1.0f);
  if (op == "ThresholdedRelu") alpha = b.node.attr_float("alpha", 1.0f);
  if (op == "HardSigmoid") {
    alpha = b.node.attr_float("alpha", 0.2f);
    beta = b.node.attr_float("beta", 0.5f);
  }
  if (op == "Selu") {
    alpha = b.node.attr_float("alpha", 1.67326319217681884765625f);
    beta = b.node.attr_float("gamma", 1.05070102214813232421875f);
  }
  if (op == "Gelu" && b.node.attr_string("approximate", "none") == "tanh") code = 10;
  if (op == "Clip") PTQ_RETURN_IF_ERROR(clip_bounds(b, alpha, beta));
  return std::unique_ptr<VulkanOp>(std::make_unique<UnaryOp>(code, alpha, beta));
}

std::optional<Activation> fusable_activation(const OpBuild& b) {
  if (b.outputs.empty() || b.outputs[0].dtype != ir::DType::kFloat32) return std::nullopt;
  if (b.node.op_type == "Relu") return Activation{1, 0.0f, 0.0f};
  if (b.node.op_type != "Clip") return std::nullopt;
  Activation a{2, 0.0f, 0.0f};
  if (!clip_bounds(b, a.min, a.max).is_ok()) return std::nullopt;
  return a;
}

Expected<std::unique_ptr<VulkanOp>> make_batchnorm_vulkan(const OpBuild& b) {
  if (!all_float(b)) return unsupported("only float32 runs on Vulkan");
  if (b.node.attr_int("training_mode", 0) != 0 || b.outputs.size() > 1) {
    return unsupported("BatchNormalization in training mode");
  }
  const ir::Shape& x = b.in(0).shape;
  if (x.size() < 2) return unsupported("BatchNormalization of rank {}", x.size());
  const int64_t c = x[1];
  const ir::Tensor* t[4];
  for (size_t i = 0; i < 4; ++i) {
    t[i] = b.constant(i + 1);
    if (t[i] == nullptr || t[i]->size() != c)
      return unsupported("BatchNormalization parameters are not constant");
  }
  const double eps = b.node.attr_float("epsilon", 1e-5f);
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    const double s = t[0]->as_double(i) / std::sqrt(t[3]->as_double(i) + eps);
    scale[static_cast<size_t>(i)] = static_cast<float>(s);
    shift[static_cast<size_t>(i)] = static_cast<float>(t[1]->as_double(i) - t[2]->as_double(i) * s);
  }
  PTQ_ASSIGN_OR_RETURN(Buffer sb, upload_buffer(b.ctx, scale.data(), scale.size() * sizeof(float)));
  PTQ_ASSIGN_OR_RETURN(Buffer hb, upload_buffer(b.ctx, shift.data(), shift.size() * sizeof(float)));
  return std::unique_ptr<VulkanOp>(std::make_unique<ChannelAffineOp>(
      std::move(sb), std::move(hb), static_cast<uint32_t>(c),
      static_cast<uint32_t>(dims_product(x, 2, static_cast<int64_t>(x.size())))));
}

}  // namespace ptq::vulkan
