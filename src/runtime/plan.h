// The executor's static plan: value ids, node order, and when each value dies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::runtime {

enum class ValueKind { kInput, kConstant, kActivation };

struct PlanValue {
  std::string name;
  ValueKind kind = ValueKind::kActivation;
  const ir::Tensor* constant = nullptr;  // the initializer or Constant node's value, for kConstant
  const ir::ValueInfo* info = nullptr;   // declared type, for kInput
  int64_t producer_step = -1;            // -1 for inputs and constants
  bool graph_output = false;
};

struct PlanStep {
  size_t node = 0;                 // index into graph.nodes
  std::vector<int32_t> inputs;     // value ids; -1 for an omitted optional input
  std::vector<int32_t> outputs;    // value ids; -1 for an omitted optional output
  std::vector<int32_t> release;    // activations that die once this step has run
};

struct Plan {
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;          // in topological order
  std::vector<int32_t> real_inputs;     // graph inputs the caller feeds, in graph order
  std::vector<int32_t> constants;       // initializers and Constant nodes' outputs
  std::vector<int32_t> outputs;         // graph outputs, in graph order
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::unique_ptr<ir::Tensor>> node_constants;  // the Constant nodes' values

  int32_t id(const std::string& name) const {
    auto it = ids.find(name);
    return it == ids.end() ? -1 : it->second;
  }
};

// Orders the nodes and computes lifetimes. Graph outputs never die during a run; an activation
// nothing consumes dies right after the step that produced it. A Constant node (default
// domain, a dense value) is no step: its value is made here and held like an initializer, so
// a run does not copy it out again (MobileNetV2's 70 Clip bounds: 0.05 ms of a 4.5 ms pass).
Expected<Plan> build_plan(const ir::Graph& graph);

}  // namespace ptq::runtime
