#include "plan.h"

#include "ptq/ir/constant_attr.h"

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

}  // namespace

Expected<Plan> build_plan(const ir::Graph& graph) {
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(graph));
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
  for (size_t node_index : order) {
    const ir::Node& node = graph.nodes[node_index];
    if (std::unique_ptr<ir::Tensor> value = held_constant(node)) {
      const int32_t id = add_value(plan, node.outputs[0], ValueKind::kConstant);
      plan.values[id].constant = value.get();
      plan.constants.push_back(id);
      plan.node_constants.push_back(std::move(value));
      continue;
    }
    PlanStep step;
    step.node = node_index;
    for (const std::string& in : node.inputs) step.inputs.push_back(in.empty() ? -1 : plan.id(in));
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      const int32_t id = add_value(plan, out, ValueKind::kActivation);
      plan.values[id].producer_step = static_cast<int64_t>(plan.steps.size());
      step.outputs.push_back(id);
    }
    plan.steps.push_back(std::move(step));
  }
  for (const ir::ValueInfo& out : graph.outputs) {
    const int32_t id = plan.id(out.name);
    if (id < 0) return invalid_input("graph output '{}' is produced by no node", out.name);
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

}  // namespace ptq::runtime
