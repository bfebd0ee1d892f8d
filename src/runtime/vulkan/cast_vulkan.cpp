// Cast and CastLike on Vulkan (cast.comp) between float32, int32, int64, bool, uint8 and int8:
// an exported transformer's attention mask (int64 input, cast to float) is not static, so
// without it the mask arithmetic ran on the CPU between two GPU blocks.
#include <optional>

#include "op.h"

namespace ptq::vulkan {

namespace {

// cast.comp's type codes.
enum class CastType : uint32_t { kF32 = 0, kI32 = 1, kI64 = 2, kBool = 3, kU8 = 4, kI8 = 5 };

std::optional<CastType> cast_type(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32:
      return CastType::kF32;
    case ir::DType::kInt32:
      return CastType::kI32;
    case ir::DType::kInt64:
      return CastType::kI64;
    case ir::DType::kBool:
      return CastType::kBool;
    case ir::DType::kUInt8:
      return CastType::kU8;
    case ir::DType::kInt8:
      return CastType::kI8;
    default:
      return std::nullopt;
  }
}

struct CastPush {
  uint32_t n = 0, from = 0, to = 0;
};

class CastOp final : public VulkanOp {
 public:
  explicit CastOp(CastPush push) : push_(push) {}
  bool reads_on_device(size_t i) const override { return i == 0; }  // CastLike's 2nd: a type
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    return rec.dispatch("cast", {*in[0], out[0]}, push_, groups_for((push_.n + 3) / 4, 256));
  }

 private:
  CastPush push_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_cast_vulkan(const OpBuild& b) {
  const std::optional<CastType> from = cast_type(b.in(0).dtype);
  const std::optional<CastType> to = cast_type(b.outputs[0].dtype);
  if (!from || !to) {
    return unsupported("Cast from {} to {}", ir::dtype_name(b.in(0).dtype),
                       ir::dtype_name(b.outputs[0].dtype));
  }
  CastPush p;
  p.n = static_cast<uint32_t>(ir::num_elements(b.in(0).shape));
  p.from = static_cast<uint32_t>(*from);
  p.to = static_cast<uint32_t>(*to);
  return std::unique_ptr<VulkanOp>(std::make_unique<CastOp>(p));
}

}  // namespace ptq::vulkan
