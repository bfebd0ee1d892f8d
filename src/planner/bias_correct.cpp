// Bias correction in apply(): each planned unit's correction is subtracted from its weighted
// op's bias once BatchNormalization is folded (the corrections were measured on the folded
// weights) and before an ORT int32 bias is quantized from it.
#include <algorithm>

#include <fmt/format.h>

#include "ptq/ir/owned_copy.h"
#include "ptq/ir/op_traits.h"
#include "rewrite.h"

namespace ptq::planner {

namespace {

bool weight_quantized(const Plan& plan, size_t node, size_t slot) {
  for (const QuantEdge& e : plan.edges) {
    if (e.node == node && e.input == slot && e.role == Role::kWeight) return true;
  }
  return false;
}

// The corrected bias: bias - correction / beta (Gemm's C is scaled by beta); zeros when absent.
Expected<ir::Tensor> corrected(const ir::Node& node, const ir::Tensor* bias,
                               const std::vector<double>& correction) {
  const int64_t n = static_cast<int64_t>(correction.size());
  if (bias != nullptr && (bias->dtype() != ir::DType::kFloat32 || bias->size() != n)) {
    return invalid_input("{}: bias of {} {} cannot take a correction of {} channels", node.label(),
                         ir::dtype_name(bias->dtype()), ir::shape_str(bias->shape()), n);
  }
  const double beta = node.op_type == "Gemm" ? node.attr_float("beta", 1.0f) : 1.0;
  if (beta == 0.0) {
    return invalid_input("{}: Gemm with beta 0 has no bias to correct", node.label());
  }
  ir::Tensor out = bias != nullptr ? ir::owned_copy(*bias) : ir::Tensor(ir::DType::kFloat32, {n});
  float* b = out.data<float>();
  for (int64_t c = 0; c < n; ++c) {
    const double shift = correction[static_cast<size_t>(c)] / beta;
    b[c] = static_cast<float>(static_cast<double>(b[c]) - shift);
  }
  return out;
}

// The constant value of `name`, looking through Identity nodes (exporters share equal
// constants that way: squeezenet's zero biases).
const ir::Tensor* constant_through_identity(const ir::Graph& graph, std::string name) {
  for (size_t hops = 0; hops <= graph.nodes.size(); ++hops) {
    if (const ir::Tensor* t = find_constant(graph, name)) return t;
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const ir::Node& n) {
      return n.op_type == "Identity" && !n.outputs.empty() && n.outputs[0] == name;
    });
    if (it == graph.nodes.end()) return nullptr;
    name = it->input(0);
  }
  return nullptr;
}

}  // namespace

Expected<int64_t> correct_biases(ir::Graph& graph, const Plan& plan, NameSet& names,
                                 std::set<std::string>& replaced,
                                 std::vector<std::string>& warnings) {
  const auto& corrections = plan.options.bias_corrections;
  int64_t count = 0;
  for (size_t i = 0; i < plan.nodes.size() && !corrections.empty(); ++i) {
    auto it = corrections.find(plan.nodes[i].unit);
    ir::Node& node = graph.nodes[i];
    const ir::WeightedOp* op = ir::weighted_op(node);
    if (it == corrections.end() || op == nullptr || op->bias_slot < 0 ||
        !weight_quantized(plan, i, op->weight_slot)) {
      continue;
    }
    const size_t slot = static_cast<size_t>(op->bias_slot);
    const std::string old = node.input(slot);
    const ir::Tensor* bias = old.empty() ? nullptr : constant_through_identity(graph, old);
    if (!old.empty() && bias == nullptr) {
      warnings.push_back(fmt::format("{}: bias '{}' is computed, not a constant: not corrected",
                                     node.label(), old));
      continue;
    }
    const ir::Tensor* w = find_constant(graph, node.input(op->weight_slot));
    if (w == nullptr ||
        ir::output_channels(node, w->shape()) != static_cast<int64_t>(it->second.size())) {
      return invalid_input("{}: a bias correction of {} channels does not fit its weight",
                           node.label(), it->second.size());
    }
    PTQ_ASSIGN_OR_RETURN(ir::Tensor value, corrected(node, bias, it->second));
    const std::string base = old.empty() ? node.input(op->weight_slot) + "_bias" : old;
    const std::string fresh = names.fresh(base + "_corrected");
    graph.add_initializer(fresh, std::move(value));
    if (!old.empty() && find_constant(graph, old) != nullptr) replaced.insert(old);
    node.inputs.resize(std::max(node.inputs.size(), slot + 1));
    node.inputs[slot] = fresh;
    ++count;
  }
  return count;
}

}  // namespace ptq::planner
