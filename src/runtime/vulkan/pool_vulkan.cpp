// MaxPool and AveragePool on Vulkan (pool.comp); the global pools are reductions
// (reduce_vulkan.cpp).
#include <algorithm>

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
  if (x.size() != 3 && x.size() != 4) return unsupported("{}-D pooling", static_cast<int64_t>(x.size()) - 2);
  const bool is_1d = x.size() == 3;
  const size_t nd = is_1d ? 1 : 2;
  const std::vector<int64_t> k = node.attr_ints("kernel_shape", {});
  if (k.size() != nd) return unsupported("pooling without a matching kernel_shape");
  std::vector<int64_t> s = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> d = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (s.size() != nd || d.size() != nd || pads.size() != 2 * nd) return unsupported("pooling attributes");
  PoolPush p{};
  p.H = static_cast<uint32_t>(is_1d ? 1 : x[2]);
  p.W = static_cast<uint32_t>(x.back());
  p.OH = static_cast<uint32_t>(is_1d ? 1 : y[2]);
  p.OW = static_cast<uint32_t>(y.back());
  p.n = static_cast<uint32_t>(ir::num_elements(y));
  p.KH = static_cast<uint32_t>(is_1d ? 1 : k[0]);
  p.KW = static_cast<uint32_t>(k.back());
  p.sh = static_cast<int32_t>(is_1d ? 1 : s[0]);
  p.sw = static_cast<int32_t>(s.back());
  p.dh = static_cast<int32_t>(is_1d ? 1 : d[0]);
  p.dw = static_cast<int32_t>(d.back());
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    p.ph = static_cast<int32_t>(is_1d ? 0 : pads[0]);
    p.pw = static_cast<int32_t>(pads[nd - 1]);
    p.pad_h_end = static_cast<int32_t>(is_1d ? 0 : pads[nd]);
    p.pad_w_end = static_cast<int32_t>(pads[2 * nd - 1]);
  } else if (auto_pad != "VALID") {
    // SAME_*: total padding so that out = ceil(in / stride).
    auto total = [](int64_t in, int64_t out, int64_t st, int64_t kk, int64_t dd) {
      return std::max<int64_t>((out - 1) * st + (kk - 1) * dd + 1 - in, 0);
    };
    const int64_t th = total(p.H, p.OH, p.sh, p.KH, p.dh), tw = total(p.W, p.OW, p.sw, p.KW, p.dw);
    const bool upper = auto_pad == "SAME_UPPER";
    p.ph = static_cast<int32_t>(upper ? th / 2 : th - th / 2);
    p.pw = static_cast<int32_t>(upper ? tw / 2 : tw - tw / 2);
    p.pad_h_end = static_cast<int32_t>(th - p.ph);
    p.pad_w_end = static_cast<int32_t>(tw - p.pw);
  }
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
