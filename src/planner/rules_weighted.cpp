// Weighted ops (TensorRT rule 1): activation inputs per-tensor, constant weights per output
// channel (axis: ir::weight_channel_axis), bias float (TensorRT) or int32 (ORT).
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

void add_bias(const Marking& m, const ir::Node& node, const ir::WeightedOp& op, int64_t channels,
              Spec& spec) {
  if (op.bias_slot < 0) return;
  const ir::Tensor* b = float_weight(m, node.input(static_cast<size_t>(op.bias_slot)));
  if (!b || b->size() != channels || b->rank() > 1) return;
  spec.bias_slot = op.bias_slot;
  spec.bias_channels = channels;
}

// The weight's per-channel axis (ir::op_traits), or -1 when weights are per-tensor.
int64_t weight_axis(const Marking& m, const ir::Node& node, const ir::Tensor& w) {
  return m.options.per_tensor_weights ? -1 : ir::weight_channel_axis(node, w.rank());
}

std::string conv_spec(const Marking& m, const ir::Node& node, const ir::WeightedOp& op,
                      Spec& spec) {
  if (auto why = activation_problem(m, node.input(0)); !why.empty()) return why;
  const std::string& wname = node.input(op.weight_slot);
  const ir::Tensor* w = float_weight(m, wname);
  if (!w || w->rank() < 3) {
    return fmt::format("weight '{}' is not a float32 constant of rank >= 3", wname);
  }
  const int64_t in_channels = ir::input_channels(node, w->shape());
  if (in_channels < m.options.min_conv_channels) {
    return fmt::format("{} input channels < min_conv_channels {} (float by default)", in_channels,
                       m.options.min_conv_channels);
  }
  spec.activations = {0};
  spec.weight_slot = static_cast<int64_t>(op.weight_slot);
  spec.weight_axis = weight_axis(m, node, *w);
  add_bias(m, node, op, ir::output_channels(node, w->shape()), spec);
  return "";
}

std::string gemm_spec(const Marking& m, const ir::Node& node, const ir::WeightedOp& op,
                      Spec& spec) {
  if (auto why = activation_problem(m, node.input(0)); !why.empty()) return why;
  spec.activations = {0};
  const std::string& bname = node.input(op.weight_slot);
  const ir::Tensor* b = float_weight(m, bname);
  if (!b) {
    if (auto why = activation_problem(m, bname); !why.empty()) return why;
    spec.activations.push_back(op.weight_slot);
    return "";
  }
  if (b->rank() != 2) return fmt::format("weight '{}' is not 2-D", bname);
  spec.weight_slot = static_cast<int64_t>(op.weight_slot);
  spec.weight_axis = weight_axis(m, node, *b);
  if (node.attr_float("alpha", 1.0f) == 1.0f && node.attr_float("beta", 1.0f) == 1.0f) {
    add_bias(m, node, op, ir::output_channels(node, b->shape()), spec);
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
    spec.weight_axis = weight_axis(m, node, *b);
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
    return fmt::format("matrix-vector MatMul ({} = 1), float by default",
                       rows.value == 1 ? "M" : "N");
  }
  if (!rows.known()) spec.unresolved.push_back({0, a, "M", rows.param});
  if (!cols.known()) spec.unresolved.push_back({0, bname, "N", cols.param});
  return "";
}

}  // namespace

void rule_weighted(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  const ir::WeightedOp* op = ir::weighted_op(node);
  if (m.excluded[n] || op == nullptr) return;
  Spec spec;
  std::string why;
  if (op->layout != ir::WeightLayout::kMatrix) {
    why = conv_spec(m, node, *op, spec);
  } else if (node.op_type == "Gemm") {
    why = gemm_spec(m, node, *op, spec);
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
