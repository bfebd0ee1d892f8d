#include "plan.h"

#include <algorithm>
#include <optional>

#include "ptq/ir/constant_attr.h"
#include "ptq/ir/subgraph.h"

namespace ptq::runtime {

namespace {

int32_t add_value(Plan& plan, const std::string& name, ValueKind kind) {
  auto [it, fresh] = plan.ids.emplace(name, static_cast<int32_t>(plan.values.size()));
  if (fresh) {
    PlanValue v;
    v.name = name;
    v.kind = kind;
    plan.values.push_back(std::move(v));
  }
  return it->second;
}

// The value of a Constant node with a dense value attribute, or null (the node stays a step,
// whose kernel reports what is wrong).
std::unique_ptr<ir::Tensor> held_constant(const ir::Node& node) {
  if (node.op_type != "Constant" || !node.in_default_domain() || !node.inputs.empty() ||
      node.outputs.size() != 1 || node.outputs[0].empty()) {
    return nullptr;
  }
  std::optional<ir::Tensor> t = ir::constant_node_value(node);
  return t ? std::make_unique<ir::Tensor>(std::move(*t)) : nullptr;
}

// The plan with the nodes in `order` (all of them, or the file order when empty); nullopt when
// a node reads a value no earlier node, initializer or input gives, or gives one of those again
// (topological_order() then names the fault), or a graph output is none of them.
std::optional<Plan> ordered_plan(const ir::Graph& graph, const std::vector<size_t>& order) {
  Plan plan;
  for (const ir::Initializer& init : graph.initializers()) {
    const int32_t id = add_value(plan, init.name, ValueKind::kConstant);
    plan.values[id].constant = &init.tensor;
    plan.constants.push_back(id);
  }
  for (const ir::ValueInfo& in : graph.inputs) {
    if (plan.id(in.name) >= 0) continue;  // an initializer listed as input (IR < 4) stays constant
    const int32_t id = add_value(plan, in.name, ValueKind::kInput);
    plan.values[id].info = &in;
    plan.real_inputs.push_back(id);
  }
  for (size_t k = 0; k < graph.nodes.size(); ++k) {
    const size_t node_index = order.empty() ? k : order[k];
    const ir::Node& node = graph.nodes[node_index];
    if (std::unique_ptr<ir::Tensor> value = held_constant(node)) {
      if (plan.id(node.outputs[0]) >= 0) return std::nullopt;
      const int32_t id = add_value(plan, node.outputs[0], ValueKind::kConstant);
      plan.values[id].constant = value.get();
      plan.constants.push_back(id);
      plan.node_constants.push_back(std::move(value));
      continue;
    }
    PlanStep step;
    step.node = node_index;
    for (const std::string& in : node.inputs) {
      step.inputs.push_back(in.empty() ? -1 : plan.id(in));
      if (step.inputs.back() < 0 && !in.empty()) return std::nullopt;
    }
    // The values its subgraphs read come after its own inputs and live until it has run.
    for (const std::string& in : ir::outer_scope_values(node)) {
      step.inputs.push_back(plan.id(in));
      if (step.inputs.back() < 0) return std::nullopt;
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      if (plan.id(out) >= 0) return std::nullopt;
      const int32_t id = add_value(plan, out, ValueKind::kActivation);
      plan.values[id].producer_step = static_cast<int64_t>(plan.steps.size());
      step.outputs.push_back(id);
    }
    plan.steps.push_back(std::move(step));
  }
  for (const ir::ValueInfo& out : graph.outputs) {
    const int32_t id = plan.id(out.name);
    if (id < 0) return std::nullopt;
    plan.values[id].graph_output = true;
    plan.outputs.push_back(id);
  }
  // Last consumer of every activation; unconsumed ones die where they are born.
  std::vector<int64_t> last(plan.values.size(), -1);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int32_t id : plan.steps[s].inputs) {
      if (id >= 0) last[id] = static_cast<int64_t>(s);
    }
  }
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlanValue& v = plan.values[id];
    if (v.kind != ValueKind::kActivation || v.graph_output) continue;
    const int64_t s = last[id] >= 0 ? last[id] : v.producer_step;
    plan.steps[static_cast<size_t>(s)].release.push_back(static_cast<int32_t>(id));
  }
  return plan;
}

}  // namespace

// Most graphs come sorted (ONNX asks for it; the planner and the sweep keep it): planned in file
// order first, sorted only when that fails, which also names the fault of a broken graph.
Expected<Plan> build_plan(const ir::Graph& graph) {
  if (std::optional<Plan> plan = ordered_plan(graph, {})) return std::move(*plan);
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(graph));
  if (std::optional<Plan> plan = ordered_plan(graph, order)) return std::move(*plan);
  for (const ir::ValueInfo& out : graph.outputs) {
    if (!graph.is_graph_input(out.name) && graph.initializer(out.name) == nullptr &&
        std::none_of(graph.nodes.begin(), graph.nodes.end(), [&](const ir::Node& n) {
          return std::find(n.outputs.begin(), n.outputs.end(), out.name) != n.outputs.end();
        })) {
      return invalid_input("graph output '{}' is produced by no node", out.name);
    }
  }
  return runtime_error("graph '{}': sorted, but its plan still fails", graph.name);
}

}  // namespace ptq::runtime
