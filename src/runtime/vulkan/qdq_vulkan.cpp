// QuantizeLinear and DequantizeLinear on Vulkan (qdq.comp), float32 <-> int8/uint8, per
// tensor or per channel. Scales and zero points are constants, uploaded at build.
#include <vector>

#include "op.h"

namespace ptq::vulkan {

namespace {

struct QdqPush {
  uint32_t n, channels, inner, is_signed, has_zero;
};

class QdqOp final : public VulkanOp {
 public:
  QdqOp(bool quantize, QdqPush push, Buffer scale, Buffer zero)
      : quantize_(quantize), push_(push), scale_(std::move(scale)), zero_(std::move(zero)) {}
  bool reads_on_device(size_t i) const override { return i == 0; }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const uint32_t items = quantize_ ? (push_.n + 3) / 4 : push_.n;
    return rec.dispatch(quantize_ ? "quantize" : "dequantize", {*in[0], scale_, zero_, out[0]},
                        push_, groups_for(items, 256));
  }

 private:
  bool quantize_;
  QdqPush push_;
  Buffer scale_, zero_;
};

}  // namespace

// Shared by both directions: input 1 is the scale, input 2 the optional zero point.
Expected<std::unique_ptr<VulkanOp>> make_qdq_vulkan(const OpBuild& b) {
  const bool quantize = b.node.op_type == "QuantizeLinear";
  const ValueDesc& x = b.in(0);
  const ir::DType q = quantize ? b.outputs[0].dtype : x.dtype;
  const ir::DType f = quantize ? x.dtype : b.outputs[0].dtype;
  if (f != ir::DType::kFloat32 || (q != ir::DType::kInt8 && q != ir::DType::kUInt8)) {
    return unsupported("{} between {} and {}", b.node.op_type, ir::dtype_name(f),
                       ir::dtype_name(q));
  }
  if (b.node.attr_int("block_size", 0) != 0) return unsupported("blocked quantization");
  const ir::Tensor* scale = b.constant(1);
  const ir::Tensor* zero = b.has_input(2) ? b.constant(2) : nullptr;
  if (scale == nullptr || (b.has_input(2) && zero == nullptr)) {
    return unsupported("{} with a scale or zero point that is not a constant", b.node.op_type);
  }
  const ir::Shape& shape = x.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  QdqPush p{};
  p.n = static_cast<uint32_t>(ir::num_elements(shape));
  p.channels = 1;
  p.inner = 1;
  if (scale->size() > 1) {
    PTQ_ASSIGN_OR_RETURN(const int64_t axis,
                         normalize_axis(b.node, b.node.attr_int("axis", 1), rank));
    if (shape[static_cast<size_t>(axis)] != scale->size()) {
      return unsupported("per-channel scale does not match the axis");
    }
    p.channels = static_cast<uint32_t>(scale->size());
    p.inner = static_cast<uint32_t>(dims_product(shape, axis + 1, rank));
  }
  p.is_signed = q == ir::DType::kInt8 ? 1 : 0;
  p.has_zero = zero != nullptr ? 1 : 0;
  std::vector<float> s(static_cast<size_t>(scale->size()));
  for (int64_t i = 0; i < scale->size(); ++i)
    s[static_cast<size_t>(i)] = static_cast<float>(scale->as_double(i));
  std::vector<int32_t> z(s.size(), 0);
  if (zero != nullptr) {
    if (zero->size() != scale->size()) return unsupported("zero point and scale sizes differ");
    for (int64_t i = 0; i < zero->size(); ++i)
      z[static_cast<size_t>(i)] = static_cast<int32_t>(zero->as_int64(i));
  }
  PTQ_ASSIGN_OR_RETURN(Buffer sb, upload_buffer(b.ctx, s.data(), s.size() * sizeof(float)));
  PTQ_ASSIGN_OR_RETURN(Buffer zb, upload_buffer(b.ctx, z.data(), z.size() * sizeof(int32_t)));
  return std::unique_ptr<VulkanOp>(
      std::make_unique<QdqOp>(quantize, p, std::move(sb), std::move(zb)));
}

}  // namespace ptq::vulkan
