// dropped_edges(), rewired_base(): see rewire.h.
#include "rewire.h"

#include <map>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

namespace {

using planner::Plan;
using planner::QuantEdge;
using planner::Role;
using Slot = std::pair<size_t, size_t>;  // (node, input)

bool same_edge(const QuantEdge& a, const QuantEdge& b) {
  return a.node == b.node && a.input == b.input && a.tensor == b.tensor && a.role == b.role &&
         a.axis == b.axis && a.bias_input_slot == b.bias_input_slot &&
         a.bias_weight_slot == b.bias_weight_slot;
}

// The scale group whose scale the activation `tensor` takes under `plan` (null when none).
const planner::ScaleGroup* scale_group(const Plan& plan, const std::string& tensor) {
  const planner::TensorPlan* t = plan.tensor(tensor);
  if (t == nullptr) return nullptr;
  for (const planner::ScaleGroup& g : plan.groups) {
    if (g.name == t->scale_group) return &g;
  }
  return nullptr;
}

// Same group and range (a NaN bound never compares equal: such plans are not rewired).
bool same_scale(const Plan& a, const Plan& b, const std::string& tensor) {
  const planner::ScaleGroup* ga = scale_group(a, tensor);
  const planner::ScaleGroup* gb = scale_group(b, tensor);
  return ga != nullptr && gb != nullptr && ga->name == gb->name && ga->has_range == gb->has_range &&
         ga->range.amax == gb->range.amax && ga->range.min == gb->range.min &&
         ga->range.max == gb->range.max;
}

// A bias's quantization reads its weight's scales: a bias and its weight are kept or dropped
// together.
bool biases_follow_weights(const std::vector<QuantEdge>& edges, const std::set<Slot>& kept) {
  for (const QuantEdge& e : edges) {
    if (e.role != Role::kBias) continue;
    if (kept.contains({e.node, e.input}) != kept.contains({e.node, e.bias_weight_slot})) return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<const QuantEdge*>> dropped_edges(const Plan& base, const Plan& variant) {
  if (!base.folds.empty() || !variant.folds.empty() || base.node_count != variant.node_count) {
    return std::nullopt;
  }
  std::map<Slot, const QuantEdge*> by_slot;
  for (const QuantEdge& e : base.edges) by_slot.emplace(Slot{e.node, e.input}, &e);
  std::set<Slot> kept;
  std::unordered_set<std::string_view> kept_constants;  // weights and biases still quantized
  for (const QuantEdge& e : variant.edges) {
    auto it = by_slot.find({e.node, e.input});
    if (it == by_slot.end() || !same_edge(*it->second, e)) return std::nullopt;
    if (e.role == Role::kActivation && !same_scale(base, variant, e.tensor)) return std::nullopt;
    if (e.role != Role::kActivation) kept_constants.insert(e.tensor);
    kept.insert({e.node, e.input});
  }
  if (!biases_follow_weights(base.edges, kept)) return std::nullopt;
  std::vector<const QuantEdge*> dropped;
  for (const QuantEdge& e : base.edges) {
    if (kept.contains({e.node, e.input})) continue;
    // A weight kept for another node keeps scales the dropped node's bias may have widened.
    if (e.role != Role::kActivation && kept_constants.contains(e.tensor)) return std::nullopt;
    dropped.push_back(&e);
  }
  return dropped;
}

std::optional<ir::Model> rewired_base(const ir::Model& base, const ir::GraphIndex& base_index,
                                      const ir::Model& source,
                                      const std::vector<const QuantEdge*>& dropped) {
  ir::Model m = borrowing_copy(base);
  for (const QuantEdge* e : dropped) {
    if (e->node >= source.graph.nodes.size()) return std::nullopt;
    const ir::Node& planned = source.graph.nodes[e->node];
    if (planned.outputs.empty()) return std::nullopt;
    const int64_t n = base_index.producer(planned.outputs.front());  // apply() keeps outputs
    if (n < 0) return std::nullopt;
    ir::Node& node = m.graph.nodes[static_cast<size_t>(n)];
    if (node.op_type != planned.op_type || e->input >= node.inputs.size()) return std::nullopt;
    node.inputs[e->input] = e->tensor;
    // An activation is still computed by the base; a weight or bias apply() replaced is not.
    if (e->role == Role::kActivation || m.graph.initializer(e->tensor) != nullptr) continue;
    const ir::Tensor* t = source.graph.initializer(e->tensor);
    if (t == nullptr) return std::nullopt;
    m.graph.add_initializer(e->tensor, t->view());
  }
  return m;
}

}  // namespace ptq::sensitivity
