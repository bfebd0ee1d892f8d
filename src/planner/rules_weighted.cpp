// Weighted ops (TensorRT rule 1): activation inputs per-tensor, constant weights per output
// channel (axis per op), bias float (TensorRT) or int32 (ORT).
#include <fmt/format.h>

#include "marking.h"

namespace ptq::planner {

namespace {

struct Spec {
  std::vector<size_t> activations;  // slots quantized per-tensor as activations
  int64_t weight_slot = -1;
  int64_t weight_axis = -1;
  int64_t bias_slot = -1;  // ORT int32 bias
  int64_t bias_channels = 0;
  std::vector<UnresolvedDim> unresolved;  // dims the decision needed but could not see
};

// "" when `name` is a float activation, else why not.
std::string activation_problem(const Marking& m, const std::string& name) {
  if (name.empty()) return "a required input is missing";
  if (m.view.is_constant(name)) return fmt::format("input '{}' is a constant", name);
  if (!m.view.is_float_activation(name)) {
    return fmt::format("input '{}' is {} (only float32 is quantized)", name,
                       ir::dtype_name(m.view.dtype(name)));
  }
  return "";
}

const ir::Tensor* float_weight(const Marking& m, const std::string& name) {
  const ir::Tensor* w = name.empty() ? nullptr : m.view.constant(name);
  return w && w->dtype() == ir::DType::kFloat32 ? w : nullptr;
}

// Dim k from the end (1 = last) of an activation's shape; rank 1 counts as 1 (a vector).
// Unknown (value -1, no symbol) when the rank is unknown or too small.
ir::Dim dim_from_end(const Marking& m, const std::string& name, size_t k) {
  auto dims = m.view.dims(name);
  if (!dims) return {};
  if (dims->size() == 1) return ir::Dim::of(1);
  if (dims->size() < k) return {};
  return (*dims)[dims->size() - k];
}

// The same for a constant operand: rank < 2 is a vector.
ir::Dim const_dim_from_end(const ir::Tensor& t, int64_t k) {
  return ir::Dim::of(t.rank() >= 2 ? t.dim(t.rank() - k) : 1);
}

void add_bias(const Marking& m, const ir::Node& node, size_t slot, int64_t channels, Spec& spec) {
  const ir::Tensor* b = float_weight(m, node.input(slot));
  if (!b || b->size() != channels || b->rank() > 1) return;
  spec.bias_slot = static_cast<int64_t>(slot);
  spec.bias_channels = channels;
}

std::string conv_spec(const Marking& m, const ir::Node& node, Spec& spec) {
  const bool transposed = node.op_type == "ConvTranspose";
  if (auto why = activation_problem(m, node.input(0)); !why.empty()) return why;
  const ir::Tensor* w = float_weight(m, node.input(1));
  if (!w || w->rank() < 3) {
    return fmt::format("weight '{}' is not a float32 constant of rank >= 3", node.input(1));
  }
  const int64_t group = node.attr_int("group", 1);
  const int64_t in_channels = transposed ? w->dim(0) : w->dim(1) * group;
  if (in_channels < m.options.min_conv_channels) {
    return fmt::format("{} input channels < min_conv_channels {} (float by default)", in_channels,
                       m.options.min_conv_channels);
  }
  spec.activations = {0};
  spec.weight_slot = 1;
  spec.weight_axis = m.options.per_tensor_weights ? -1 : (transposed ? 1 : 0);
  add_bias(m, node, 2, transposed ? w->dim(1) * group : w->dim(0), spec);
  return "";
}

std::string gemm_spec(const Marking& m, const ir::Node& node, Spec& spec) {
  if (auto why = activation_problem(m, node.input(0)); !why.empty()) return why;
  spec.activations = {0};
  const ir::Tensor* b = float_weight(m, node.input(1));
  if (!b) {
    if (auto why = activation_problem(m, node.input(1)); !why.empty()) return why;
    spec.activations.push_back(1);
    return "";
  }
  if (b->rank() != 2) return fmt::format("weight '{}' is not 2-D", node.input(1));
  const bool trans_b = node.attr_int("transB", 0) != 0;
  spec.weight_slot = 1;
  spec.weight_axis = m.options.per_tensor_weights ? -1 : (trans_b ? 0 : 1);
  if (node.attr_float("alpha", 1.0f) == 1.0f && node.attr_float("beta", 1.0f) == 1.0f) {
    add_bias(m, node, 2, trans_b ? b->dim(0) : b->dim(1), spec);
  }
  return "";
}

// M and N decide "matrix-vector stays float"; an unknown one is recorded in the spec (the
// planner errors on it with require_shapes) and otherwise taken as not 1.
std::string matmul_spec(const Marking& m, const ir::Node& node, Spec& spec) {
  const std::string& a = node.input(0);
  const std::string& bname = node.input(1);
  const ir::Tensor* b = float_weight(m, bname);
  const ir::Tensor* a_const = float_weight(m, a);
  if (b && a_const) return "both inputs are constants";
  if (b) {
    if (auto why = activation_problem(m, a); !why.empty()) return why;
    spec.activations = {0};
    spec.weight_slot = 1;
    spec.weight_axis = (m.options.per_tensor_weights || b->rank() < 2) ? -1 : b->rank() - 1;
  } else if (a_const) {
    if (auto why = activation_problem(m, bname); !why.empty()) return why;
    spec.activations = {1};
    spec.weight_slot = 0;
    spec.weight_axis = -1;
  } else {
    if (auto why = activation_problem(m, a); !why.empty()) return why;
    if (auto why = activation_problem(m, bname); !why.empty()) return why;
    spec.activations = {0, 1};
  }
  const ir::Dim rows = a_const ? const_dim_from_end(*a_const, 2) : dim_from_end(m, a, 2);
  const ir::Dim cols = b ? const_dim_from_end(*b, 1) : dim_from_end(m, bname, 1);
  if (m.options.quantize_matrix_vector) return "";
  if (rows.value == 1 || cols.value == 1) {
    return fmt::format("matrix-vector MatMul ({} = 1), float by default", rows.value == 1 ? "M" : "N");
  }
  if (!rows.known()) spec.unresolved.push_back({0, a, "M", rows.param});
  if (!cols.known()) spec.unresolved.push_back({0, bname, "N", cols.param});
  return "";
}

}  // namespace

void rule_weighted(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  if (m.excluded[n] || !is_weighted_op(node)) return;
  Spec spec;
  std::string why;
  if (node.op_type == "Conv" || node.op_type == "ConvTranspose") {
    why = conv_spec(m, node, spec);
  } else if (node.op_type == "Gemm") {
    why = gemm_spec(m, node, spec);
  } else {
    why = matmul_spec(m, node, spec);
  }
  if (!why.empty()) {
    m.nodes[n].reason = why;
    return;
  }
  m.weighted_ok[n] = true;
  for (UnresolvedDim& d : spec.unresolved) {
    d.node = n;
    m.unresolved.push_back(std::move(d));
  }
  const std::string unit = m.open_unit(n, node.op_type);
  for (size_t slot : spec.activations) m.mark(n, slot, Role::kActivation, -1, unit, true);
  if (spec.weight_slot >= 0) {
    m.mark(n, static_cast<size_t>(spec.weight_slot), Role::kWeight, spec.weight_axis, unit, false);
  }
  if (m.is_target_ort() && spec.bias_slot >= 0 && spec.weight_slot >= 0) {
    const size_t slot = static_cast<size_t>(spec.bias_slot);
    m.mark(n, slot, Role::kBias, 0, unit, false);
    QuantEdge& edge = m.edges[static_cast<size_t>(m.find_edge(n, slot))];
    edge.bias_input_slot = spec.activations.front();
    edge.bias_weight_slot = static_cast<size_t>(spec.weight_slot);
  }
  m.nodes[n].reason = "quantized";
}

}  // namespace ptq::planner
