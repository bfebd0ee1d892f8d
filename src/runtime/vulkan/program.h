// A Program: the model prepared for one set of input shapes (and one set of observed values).
// Every value's shape is known (from the CPU shape pass), values computable from shapes and
// constants alone are folded, each node is a Vulkan op, a view, or a CPU fallback step, and
// device memory is one arena laid out by liveness. The GPU work between two CPU steps (or two
// points where observed values must be read) is one recorded command buffer, submitted again
// for every batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffer.h"
#include "context.h"
#include "op.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "recorder.h"
#include "step_timer.h"

namespace ptq::vulkan {

// What the shape pass learnt about one value for these input shapes.
struct ValueFacts {
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;
  bool seen = false;
};

enum class StepKind { kFolded, kView, kGpu, kHost };

struct Value {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;
  const ir::Tensor* constant = nullptr;  // static values: initializer or folded tensor
  int producer_step = -1;                 // -1: graph input or constant
  bool graph_input = false;
  bool graph_output = false;
  bool observed = false;
  int root = -1;          // the value whose storage this one views (itself for a root)
  // Root-only facts:
  bool on_gpu = false;    // produced by a Vulkan op (else by the host or the caller)
  bool needs_device = false;
  bool needs_host = false;
  int64_t offset = -1;    // arena offset when it has device storage
  int64_t first = 0, last = -1;  // live step range for the arena
  int staging = -1;       // staging buffer index for up/downloads
  int stats_slot = -1;    // minmax slot for observed device values

  size_t bytes() const {
    return ir::dtype_size(dtype) * static_cast<size_t>(ir::num_elements(shape));
  }
};

struct Step {
  StepKind kind = StepKind::kFolded;
  size_t node = 0;
  std::vector<int> inputs;   // value ids, -1 for omitted
  std::vector<int> outputs;  // value ids, -1 for omitted
  std::unique_ptr<VulkanOp> op;            // kGpu
  std::unique_ptr<runtime::Kernel> kernel; // kHost
  std::string fallback_reason;             // kHost
  std::vector<int> observe_after;          // kHost: observed host values ready after it
};

// GPU work recorded once: uploads first, then steps [first_step, end_step), then the minmax
// statistics of the observed values produced in it and the downloads the host needs next.
struct Block {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  int first_step = 0, end_step = 0;
  std::vector<int> uploads;    // root ids uploaded from staging at the start
  std::vector<int> downloads;  // root ids downloaded to staging at the end
  std::vector<int> observed;   // value ids observed after it, in production order
  std::vector<int> host_steps; // CPU steps run after it (and after the observers)
  int stats_first = 0, stats_count = 0;
};

struct Program {
  explicit Program(Context& ctx) : descriptors(ctx.device()) {}
  std::vector<Value> values;
  std::vector<Step> steps;
  std::vector<Block> blocks;
  std::vector<int> inputs;   // real input value ids, graph order
  std::vector<int> outputs;  // graph output value ids, graph order
  std::vector<int> start_observed;  // observed views of inputs (inputs/constants: see executor)
  std::unordered_map<std::string, int> ids;
  std::vector<std::unique_ptr<ir::Tensor>> folded;  // static values computed by the shape pass
  std::vector<Buffer> constant_buffers;             // folded statics uploaded for GPU steps
  std::unordered_map<int, DeviceTensor> constant_tensors;  // value id -> its device copy
  Buffer arena;
  Buffer stats;           // 8 uints per observed device value
  Buffer stats_staging;
  std::vector<Buffer> staging;
  DescriptorArena descriptors;
  std::unique_ptr<StepTimer> timer;  // PTQ_VULKAN_TIMING=1 only
  std::vector<std::string> fallback_nodes;  // "Op 'name'" of the CPU steps
  int64_t arena_bytes = 0;
  int64_t staging_bytes = 0;
  int64_t weight_bytes = 0;

  int id(const std::string& name) const {
    auto it = ids.find(name);
    return it == ids.end() ? -1 : it->second;
  }
  // The device view of value `id` (a constant's upload, or its root's arena range).
  DeviceTensor device_tensor(int id) const;
};

// The executor-wide state programs draw on.
struct BuildEnv {
  Context& ctx;
  const ir::Model& model;
  runtime::Backend& cpu;         // for fallback kernels
  int threads = 1;
  int64_t observe_budget = 0;
  // Initializers uploaded once for every program (by name).
  std::unordered_map<std::string, Buffer>& uploaded;
  int64_t& uploaded_bytes;
  int conv_split_k = 0;  // VulkanOptions::conv_split_k, resolved (0: auto)
  bool inputs_on_device = true;  // VulkanOptions::input_staging, resolved
};

// Builds and records a program. `facts` has every value's dtype and shape for these inputs,
// `folded` the host copies of the static values that are not initializers (a value is static
// when it is an initializer or in `folded`), `observed` the names the observers want.
Expected<std::unique_ptr<Program>> build_program(
    BuildEnv& env, const std::unordered_map<std::string, ValueFacts>& facts,
    std::unordered_map<std::string, ir::Tensor> folded, const std::vector<std::string>& observed);

// Node ops whose output is a view of input 0 (no kernel): Reshape, Flatten, Squeeze, …
bool is_view_op(const ir::Node& node, int64_t opset);

}  // namespace ptq::vulkan
