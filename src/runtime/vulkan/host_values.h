// Host-side values of the Vulkan executor: tensors made by nodes run on the CPU (static shape
// arithmetic, fallbacks, stand-in runs) and the names a whole-graph observer asks for.
#pragma once

#include <string>
#include <vector>

#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::vulkan {

// Outputs of nodes run on the CPU: plain owned tensors, alive as long as the caller keeps them.
class HostAllocator final : public runtime::Allocator {
 public:
  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override {
    return ir::Tensor(dtype, shape);
  }
};

// Every real input and every node output of `graph`, in graph order.
inline std::vector<std::string> every_value_name(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::ValueInfo* v : graph.real_inputs()) names.push_back(v->name);
  for (const ir::Node& n : graph.nodes) {
    for (const std::string& o : n.outputs) {
      if (!o.empty()) names.push_back(o);
    }
  }
  return names;
}

}  // namespace ptq::vulkan
