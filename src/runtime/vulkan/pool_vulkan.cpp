// MaxPool and AveragePool on Vulkan (pool.comp); the global pools are reductions
// (reduce_vulkan.cpp).
#include <vector>

#include "op.h"

namespace ptq::vulkan {

namespace {

struct PoolPush {
  uint32_t n, H, W, OH, OW, KH, KW;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t pad_h_end, pad_w_end;
  uint32_t mode;
};

class PoolOp final : public VulkanOp {
 public:
  explicit PoolOp(PoolPush push) : push_(push) {}
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    return rec.dispatch("pool", {*in[0], out[0]}, push_, groups_for(push_.n, 256));
  }

 private:
  PoolPush push_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_pool_vulkan(const OpBuild& b) {
  const ir::Node& node = b.node;
  if (b.in(0).dtype != ir::DType::kFloat32) return unsupported("only float32 runs on Vulkan");
  if (b.outputs.size() > 1 && b.outputs[1].present) return unsupported("MaxPool with Indices");
  const ir::Shape& x = b.in(0).shape;
  const ir::Shape& y = b.outputs[0].shape;
  if (x.size() != 3 && x.size() != 4)
    return unsupported("{}-D pooling", static_cast<int64_t>(x.size()) - 2);
  const bool is_1d = x.size() == 3;
  const size_t nd = is_1d ? 1 : 2;
  const std::vector<int64_t> k = node.attr_ints("kernel_shape", {});
  if (k.size() != nd) return unsupported("pooling without a matching kernel_shape");
  // Strides, dilations and pads as the CPU kernels read them (auto_pad resolved); the output
  // dims themselves come from the output's shape.
  PTQ_ASSIGN_OR_RETURN(runtime::Window w, runtime::read_window(node, k));
  const Expected<std::vector<int64_t>> out =
      runtime::forward_output_dims(node, w, std::vector<int64_t>(x.begin() + 2, x.end()));
  if (!out) return out.status();
  PoolPush p{};
  p.H = static_cast<uint32_t>(is_1d ? 1 : x[2]);
  p.W = static_cast<uint32_t>(x.back());
  p.OH = static_cast<uint32_t>(is_1d ? 1 : y[2]);
  p.OW = static_cast<uint32_t>(y.back());
  p.n = static_cast<uint32_t>(ir::num_elements(y));
  p.KH = static_cast<uint32_t>(is_1d ? 1 : k[0]);
  p.KW = static_cast<uint32_t>(k.back());
  p.sh = static_cast<int32_t>(is_1d ? 1 : w.strides[0]);
  p.sw = static_cast<int32_t>(w.strides.back());
  p.dh = static_cast<int32_t>(is_1d ? 1 : w.dilations[0]);
  p.dw = static_cast<int32_t>(w.dilations.back());
  p.ph = static_cast<int32_t>(is_1d ? 0 : w.pad_begin(0));
  p.pw = static_cast<int32_t>(w.pad_begin(nd - 1));
  p.pad_h_end = static_cast<int32_t>(is_1d ? 0 : w.pad_end(0));
  p.pad_w_end = static_cast<int32_t>(w.pad_end(nd - 1));
  if (node.op_type == "MaxPool") {
    p.mode = 0;
  } else if (node.op_type == "AveragePool") {
    p.mode = node.attr_int("count_include_pad", 0) != 0 ? 1 : 2;
  } else {
    return unsupported("{} on Vulkan", node.op_type);
  }
  return std::unique_ptr<VulkanOp>(std::make_unique<PoolOp>(p));
}

}  // namespace ptq::vulkan
