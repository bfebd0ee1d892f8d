// Rules for ops without weights: residual Add, pooling, Concat, and (ORT) output Q/DQ and
// propagation through data-movement ops and activations.
#include <algorithm>

#include <fmt/format.h>

#include "marking.h"

namespace ptq::planner {

namespace {

bool is_op(const ir::Node& node, std::string_view op) {
  return node.in_default_domain() && node.op_type == op;
}

// True when the unit anchored at p quantizes its inputs (weighted op, Add, pool, Concat).
bool is_quantized_unit(const Marking& m, size_t p) { return !m.nodes[p].unit.empty(); }

// Walks back from `tensor` through fusable activations, data-movement ops and folding BNs to
// the first node that does arithmetic; true when it is a quantized unit.
bool quantized_before(const Marking& m, const std::string& tensor) {
  int64_t p = m.view.producer(tensor);
  for (int hops = 0; p >= 0 && hops < 8; ++hops) {
    const size_t n = static_cast<size_t>(p);
    if (is_quantized_unit(m, n)) return true;
    const ir::Node& node = m.view.node(n);
    if (m.conv_of_bn[n] >= 0) {
      p = m.conv_of_bn[n];
    } else if (ir::is_fusable_activation(node) || ir::is_data_movement(node)) {
      p = m.view.producer(node.input(0));
    } else {
      return false;
    }
  }
  return false;
}

// True when some consumer of `tensor` (looking through data-movement ops) reads it quantized.
bool quantized_after(const Marking& m, const std::string& tensor, int hops = 0) {
  if (!m.edges_of(tensor).empty()) return true;
  if (hops >= 8) return false;
  for (size_t c : m.view.consumers(tensor)) {
    const ir::Node& node = m.view.node(c);
    if (!ir::is_data_movement(node) || node.input(0) != tensor || m.excluded[c]) continue;
    for (const std::string& out : node.outputs) {
      if (!out.empty() && quantized_after(m, out, hops + 1)) return true;
    }
  }
  return false;
}

// Ops that rescale one activation by constants: looked through when asking where it ends up.
bool is_scalar_passthrough(const GraphView& view, const ir::Node& node) {
  if (!node.in_default_domain()) return false;
  if (node.op_type != "Div" && node.op_type != "Mul" && node.op_type != "Add" &&
      node.op_type != "Sub") {
    return false;
  }
  return node.inputs.size() == 2 && view.is_constant(node.inputs[1]);
}

// True when every use of `tensor` ends in a Softmax/LayerNorm/Exp-like op.
bool feeds_only_float_sensitive(const Marking& m, const std::string& tensor, int hops = 0) {
  const auto& consumers = m.view.consumers(tensor);
  if (consumers.empty() || m.view.graph().is_graph_output(tensor) || hops > 4) return false;
  for (size_t c : consumers) {
    const ir::Node& node = m.view.node(c);
    if (is_float_sensitive(node)) continue;
    if (is_scalar_passthrough(m.view, node) &&
        feeds_only_float_sensitive(m, node.outputs[0], hops + 1)) {
      continue;
    }
    return false;
  }
  return true;
}

// Marks every read of `tensor` by a node that can take a DQ output; owners copied from `like`
// or, when null, `unit`.
bool mark_consumers(Marking& m, const std::string& tensor, const std::string& unit,
                    const QuantEdge* like) {
  if (tensor.empty() || m.view.graph().is_graph_output(tensor)) return false;
  if (!m.view.is_float_activation(tensor)) return false;
  if (!m.options.quantize_float_sensitive && feeds_only_float_sensitive(m, tensor)) return false;
  bool changed = false;
  for (size_t c : m.view.consumers(tensor)) {
    const ir::Node& node = m.view.node(c);
    if (m.excluded[c] || is_op(node, "Shape") || is_op(node, "Size")) continue;
    if (m.conv_of_bn[c] >= 0) continue;  // the BN folds away; its output is the conv's
    for (size_t s = 0; s < node.inputs.size(); ++s) {
      if (node.inputs[s] != tensor) continue;
      changed |= like ? m.mark_like(c, s, *like)
                      : m.mark(c, s, Role::kActivation, -1, unit, false);
    }
  }
  return changed;
}

}  // namespace

void rule_add(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  if (m.excluded[n] || !is_op(node, "Add") || node.inputs.size() != 2) return;
  if (m.view.is_constant(node.inputs[0]) || m.view.is_constant(node.inputs[1])) {
    m.nodes[n].reason = "Add with a constant input (bias) stays float";
    return;
  }
  for (const std::string& in : node.inputs) {
    if (!m.view.is_float_activation(in)) {
      m.nodes[n].reason = fmt::format("input '{}' is not float32", in);
      return;
    }
  }
  if (m.is_target_ort()) {
    const std::string unit = m.open_unit(n, "Add");
    m.mark(n, 0, Role::kActivation, -1, unit, true);
    m.mark(n, 1, Role::kActivation, -1, unit, true);
    m.nodes[n].reason = "quantized";
    return;
  }
  // TensorRT fuses the Add into the weighted op producing one input; the other (the skip
  // connection) is quantized. With two weighted inputs the shallower one is the skip.
  int64_t src[2];
  bool from_weighted[2];
  for (size_t i = 0; i < 2; ++i) {
    src[i] = m.source(node.inputs[i]);
    from_weighted[i] = src[i] >= 0 && m.weighted_ok[static_cast<size_t>(src[i])];
  }
  if (!from_weighted[0] && !from_weighted[1]) {
    m.nodes[n].reason = "no input comes from a quantized weighted op (residual rule)";
    return;
  }
  size_t residual;
  if (from_weighted[0] != from_weighted[1]) {
    residual = from_weighted[0] ? 1 : 0;
  } else {
    residual = m.view.depth(static_cast<size_t>(src[0])) < m.view.depth(static_cast<size_t>(src[1]))
                   ? 0
                   : 1;
  }
  const std::string unit = m.open_unit(n, "Add");
  m.mark(n, residual, Role::kActivation, -1, unit, true);
  m.nodes[n].reason = fmt::format("quantized (residual input '{}')", node.inputs[residual]);
}

bool rule_pool(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  if (m.excluded[n] || !ir::is_pool(node) || !m.nodes[n].unit.empty()) return false;
  const std::string& in = node.input(0);
  if (!m.view.is_float_activation(in)) {
    m.nodes[n].reason = fmt::format("input '{}' is not float32", in);
    return false;
  }
  if (!quantized_before(m, in) && !quantized_after(m, node.outputs[0])) {
    m.nodes[n].reason = "no quantized neighbour (pooling stays float)";
    return false;
  }
  const std::string unit = m.open_unit(n, "Pool");
  m.mark(n, 0, Role::kActivation, -1, unit, true);
  m.nodes[n].reason = "quantized";
  return true;
}

bool rule_concat(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  if (m.excluded[n] || !is_op(node, "Concat") || !m.nodes[n].unit.empty()) return false;
  bool neighbour = quantized_after(m, node.outputs[0]);
  if (m.is_target_ort()) {
    for (size_t s = 0; s < node.inputs.size(); ++s) neighbour |= m.find_edge(n, s) >= 0;
  }
  if (!neighbour) {
    m.nodes[n].reason = "output not read quantized (Concat stays float)";
    return false;
  }
  std::vector<size_t> slots;
  for (size_t s = 0; s < node.inputs.size(); ++s) {
    if (m.view.is_float_activation(node.inputs[s])) slots.push_back(s);
  }
  if (slots.empty()) return false;
  const std::string unit = m.open_unit(n, "Concat");
  for (size_t s : slots) m.mark(n, s, Role::kActivation, -1, unit, true);
  m.nodes[n].reason = "quantized (inputs and output share one scale)";
  return true;
}

bool rule_ort_outputs(Marking& m, size_t n) {
  if (!m.is_target_ort() || m.nodes[n].unit.empty()) return false;
  return mark_consumers(m, m.effective_output(n), m.nodes[n].unit, nullptr);
}

bool rule_ort_propagate(Marking& m, size_t n) {
  const ir::Node& node = m.view.node(n);
  if (!m.is_target_ort() || m.excluded[n] || !m.nodes[n].unit.empty()) return false;
  if (!ir::is_data_movement(node) && !is_op(node, "Relu") && !is_op(node, "Clip")) return false;
  const int64_t e = m.find_edge(n, 0);
  if (e < 0) return false;
  const QuantEdge like = m.edges[static_cast<size_t>(e)];
  bool changed = false;
  for (const std::string& out : node.outputs) changed |= mark_consumers(m, out, "", &like);
  if (changed) m.nodes[n].reason = "runs on its quantized input (output Q/DQ, ORT)";
  return changed;
}

}  // namespace ptq::planner
