// Reductions on Vulkan: Reduce*, the global pools (reduce.comp), Softmax and LogSoftmax
// (softmax.comp), LayerNormalization (layernorm.comp). Each views its input as
// [outer, R, inner] with R the reduced extent.
#include <algorithm>
#include <numeric>

#include "op.h"

namespace ptq::vulkan {

namespace {

struct RowsPush {
  uint32_t outer, R, inner, op;
};

// Dispatches the ROWS variant (a workgroup per row) when inner == 1, else a thread per column.
class RowsOp final : public VulkanOp {
 public:
  RowsOp(std::string family, RowsPush push) : family_(std::move(family)), push_(push) {}
  bool reads_on_device(size_t i) const override { return i == 0; }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    if (push_.inner == 1) {
      return rec.dispatch(family_ + "_rows", {*in[0], out[0]}, push_,
                          std::min<uint32_t>(std::max<uint32_t>(push_.outer, 1), 65535));
    }
    return rec.dispatch(family_ + "_cols", {*in[0], out[0]}, push_,
                        groups_for(int64_t{push_.outer} * push_.inner, 256));
  }

 private:
  std::string family_;
  RowsPush push_;
};

int reduce_code(std::string_view op) {
  if (op == "ReduceSum") return 0;
  if (op == "ReduceMean" || op == "GlobalAveragePool") return 1;
  if (op == "ReduceMax" || op == "GlobalMaxPool") return 2;
  if (op == "ReduceMin") return 3;
  if (op == "ReduceProd") return 4;
  if (op == "ReduceSumSquare") return 5;
  if (op == "ReduceL1") return 6;
  if (op == "ReduceL2") return 7;
  if (op == "ReduceLogSum") return 8;
  if (op == "ReduceLogSumExp") return 9;
  return -1;
}

bool float_io(const OpBuild& b) {
  return b.in(0).dtype == ir::DType::kFloat32 && b.outputs[0].dtype == ir::DType::kFloat32;
}

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_reduce_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  const int code = reduce_code(b.node.op_type);
  if (code < 0) return unsupported("{} on Vulkan", b.node.op_type);
  const ir::Shape& x = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  const bool global = b.node.op_type.starts_with("Global");
  if (global) {
    if (rank < 2) return unsupported("global pooling of rank {}", rank);
    axes.resize(static_cast<size_t>(rank - 2));
    std::iota(axes.begin(), axes.end(), 2);
  } else if (b.has_input(1)) {
    if (b.constant(1) == nullptr) return unsupported("reduction axes are not a constant");
    axes = to_int64s(*b.constant(1));
  } else {
    axes = b.node.attr_ints("axes", {});
  }
  if (axes.empty()) {
    if (!global && b.node.attr_int("noop_with_empty_axes", 0) != 0) {
      return unsupported("a reduction over no axes");
    }
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) {
    PTQ_ASSIGN_OR_RETURN(a, normalize_axis(b.node, a, rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  // Size-1 dims do not matter for contiguity of the reduced block.
  std::vector<int64_t> real;
  for (int64_t a : axes) {
    if (x[static_cast<size_t>(a)] != 1) real.push_back(a);
  }
  int64_t first = real.empty() ? 0 : real.front(), last = real.empty() ? -1 : real.back();
  for (int64_t a = first; a <= last; ++a) {
    if (x[static_cast<size_t>(a)] != 1 && !std::binary_search(real.begin(), real.end(), a)) {
      return unsupported("a reduction over non-adjacent axes");
    }
  }
  RowsPush p{};
  p.outer = static_cast<uint32_t>(dims_product(x, 0, first));
  p.R = static_cast<uint32_t>(dims_product(x, first, last + 1));
  p.inner = static_cast<uint32_t>(dims_product(x, last + 1, rank));
  p.op = static_cast<uint32_t>(code);
  if (ir::num_elements(x) == 0) return unsupported("a reduction of an empty tensor");
  return std::unique_ptr<VulkanOp>(std::make_unique<RowsOp>("reduce", p));
}

Expected<std::unique_ptr<VulkanOp>> make_softmax_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  const ir::Shape& x = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t given = b.node.attr_int("axis", b.opset < 13 ? 1 : -1);
  PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(b.node, given, rank));
  RowsPush p{};
  p.outer = static_cast<uint32_t>(dims_product(x, 0, axis));
  if (b.opset < 13) {  // the input is coerced to 2-D at `axis`
    p.R = static_cast<uint32_t>(dims_product(x, axis, rank));
    p.inner = 1;
  } else {
    p.R = static_cast<uint32_t>(x[static_cast<size_t>(axis)]);
    p.inner = static_cast<uint32_t>(dims_product(x, axis + 1, rank));
  }
  p.op = b.node.op_type == "LogSoftmax" ? 1 : 0;
  if (ir::num_elements(x) == 0) return unsupported("Softmax of an empty tensor");
  return std::unique_ptr<VulkanOp>(std::make_unique<RowsOp>("softmax", p));
}

namespace {

struct LayerNormPush {
  uint32_t rows, R;
  float eps;
  uint32_t has_bias, scale_len, bias_len;
};

class LayerNormOp final : public VulkanOp {
 public:
  explicit LayerNormOp(LayerNormPush push) : push_(push) {}
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const Binding bias = push_.has_bias != 0 ? Binding(*in[2]) : Binding(*in[1]);
    return rec.dispatch("layernorm", {*in[0], *in[1], bias, out[0]}, push_,
                        std::min<uint32_t>(std::max<uint32_t>(push_.rows, 1), 65535));
  }

 private:
  LayerNormPush push_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_layernorm_vulkan(const OpBuild& b) {
  for (const ValueDesc& v : b.inputs) {
    if (v.present && v.dtype != ir::DType::kFloat32)
      return unsupported("only float32 runs on Vulkan");
  }
  for (size_t i = 1; i < b.outputs.size(); ++i) {
    if (b.outputs[i].present) return unsupported("LayerNormalization with Mean/InvStdDev outputs");
  }
  const ir::Shape& x = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  PTQ_ASSIGN_OR_RETURN(const int64_t axis,
                       normalize_axis(b.node, b.node.attr_int("axis", -1), rank));
  LayerNormPush p{};
  p.rows = static_cast<uint32_t>(dims_product(x, 0, axis));
  p.R = static_cast<uint32_t>(dims_product(x, axis, rank));
  p.eps = b.node.attr_float("epsilon", 1e-5f);
  const int64_t scale_len = ir::num_elements(b.in(1).shape);
  const int64_t bias_len = b.has_input(2) ? ir::num_elements(b.in(2).shape) : 1;
  if (scale_len == 0 || p.R % scale_len != 0 || bias_len == 0 || p.R % bias_len != 0) {
    return unsupported("LayerNormalization scale/bias do not tile the normalised shape");
  }
  p.has_bias = b.has_input(2) ? 1 : 0;
  p.scale_len = static_cast<uint32_t>(scale_len);
  p.bias_len = static_cast<uint32_t>(bias_len);
  if (p.R == 0) return unsupported("LayerNormalization of an empty row");
  return std::unique_ptr<VulkanOp>(std::make_unique<LayerNormOp>(p));
}

}  // namespace ptq::vulkan
