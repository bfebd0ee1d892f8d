// A Vulkan op: built once per node and input shape (all shapes known), recorded once into the
// program's command buffer, replayed every batch. Factories are listed in ops.inc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "buffer.h"
#include "context.h"
#include "ptq/ir.h"
#include "ptq/runtime/op_attrs.h"
#include "ptq/status.h"
#include "recorder.h"

namespace ptq::vulkan {

// What an op factory knows about one input or output of its node.
struct ValueDesc {
  bool present = false;               // false for an omitted optional input/output
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;
  const ir::Tensor* constant = nullptr;  // host data when the value is a constant for this shape
};

struct OpBuild {
  Context& ctx;
  const ir::Node& node;
  int64_t opset = 0;
  std::vector<ValueDesc> inputs;   // one per node input
  std::vector<ValueDesc> outputs;  // one per node output
  int conv_split_k = 0;            // split-K: 0 auto, 1 off, N up to N slices (split_k.h)

  const ValueDesc& in(size_t i) const { return inputs[i]; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].present; }
  const ir::Tensor* constant(size_t i) const { return has_input(i) ? inputs[i].constant : nullptr; }
};

// An activation folded into a GEMM or convolution epilogue (Relu, Clip).
struct Activation {
  uint32_t kind = 0;  // 0 none, 1 relu, 2 clip
  float min = 0.0f, max = 0.0f;
};

class VulkanOp {
 public:
  virtual ~VulkanOp() = default;
  // Folds `act` into this op's output if it can (before record); false leaves it unchanged.
  virtual bool fuse(const Activation& /*act*/) { return false; }
  // Whether input i is read by shaders (so a constant input must be uploaded). Inputs only
  // read at build time (shapes, axes, pads, scales folded into the op) return false.
  virtual bool reads_on_device(size_t /*input*/) const { return true; }
  // Records the op. inputs[i] is null for an omitted input or one not read on the device.
  virtual Status record(Recorder& rec, std::span<const DeviceTensor* const> inputs,
                        std::span<const DeviceTensor> outputs) = 0;
};

// A factory returns an op, or a Status saying why this node (with these shapes and dtypes)
// does not run on Vulkan; the executor then runs it on the CPU.
using OpFactory = Expected<std::unique_ptr<VulkanOp>> (*)(const OpBuild& build);

#define PTQ_VULKAN_OP(op, factory) \
  Expected<std::unique_ptr<VulkanOp>> factory(const OpBuild& build);
#include "ops.inc"
#undef PTQ_VULKAN_OP

// The factory for a default-domain op type, or null.
OpFactory find_op(std::string_view op_type);

// The activation a Relu or Clip (with constant bounds) node applies, to fold into the GEMM or
// convolution before it; nullopt for other nodes.
std::optional<Activation> fusable_activation(const OpBuild& build);

// Why a node does not run on Vulkan: an error Status the executor turns into a fallback.
template <typename... Args>
Status unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kRuntime, fmt::format(f, std::forward<Args>(args)...)};
}

// Attributes, axes and integer inputs are read as the CPU kernels read them.
using runtime::dims_product;
using runtime::normalize_axis;
using runtime::to_int64s;

}  // namespace ptq::vulkan
