#include "marking.h"

#include <algorithm>

#include <fmt/format.h>

#include "ptq/ir/op_traits.h"

namespace ptq::planner {

Marking::Marking(const GraphView& v, const PlanOptions& o)
    : view(v),
      options(o),
      nodes(v.size()),
      excluded(v.size(), false),
      weighted_ok(v.size(), false),
      bn_of_conv(v.size(), -1),
      conv_of_bn(v.size(), -1) {
  for (size_t n = 0; n < v.size(); ++n) {
    nodes[n].name = v.node(n).name;
    nodes[n].op_type = v.node(n).op_type;
    nodes[n].reason = std::string(kNoRuleReason);
    if (const auto reason = ir::float_reason(v.node(n))) {
      nodes[n].reason = std::string(*reason);
      excluded[n] = true;
    } else if (ir::is_control_flow(v.node(n))) {
      nodes[n].reason = std::string(kControlFlowReason);
    }
  }
}

std::string Marking::open_unit(size_t n, std::string kind) {
  if (!nodes[n].unit.empty()) return nodes[n].unit;
  const ir::Node& node = view.node(n);
  std::string name = node.name.empty() ? fmt::format("{}_{}", node.op_type, n) : node.name;
  if (unit_names_.count(name)) name = fmt::format("{}_{}", name, n);
  unit_names_.insert(name);
  units.push_back({name, std::move(kind), n, {}});
  nodes[n].unit = name;
  return name;
}

bool Marking::mark(size_t node, size_t slot, Role role, int64_t axis, const std::string& unit,
                   bool required_by_unit) {
  auto key = std::make_pair(node, slot);
  auto it = edge_index_.find(key);
  size_t e;
  bool changed = false;
  if (it == edge_index_.end()) {
    QuantEdge edge;
    edge.node = node;
    edge.input = slot;
    edge.tensor = view.node(node).inputs[slot];
    edge.role = role;
    edge.axis = axis;
    e = edges.size();
    edges.push_back(std::move(edge));
    edge_index_.emplace(key, e);
    changed = true;
  } else {
    e = it->second;
  }
  auto& owners = edges[e].units;
  if (std::find(owners.begin(), owners.end(), unit) == owners.end()) {
    owners.push_back(unit);
    changed = true;
  }
  if (required_by_unit) required[unit].insert(e);
  return changed;
}

bool Marking::mark_like(size_t node, size_t slot, const QuantEdge& from) {
  bool changed = false;
  const std::vector<std::string> owners = from.units;  // `from` may move when edges grow
  for (const std::string& u : owners) {
    changed |= mark(node, slot, Role::kActivation, -1, u, false);
  }
  return changed;
}

int64_t Marking::find_edge(size_t node, size_t slot) const {
  auto it = edge_index_.find({node, slot});
  return it == edge_index_.end() ? -1 : static_cast<int64_t>(it->second);
}

std::vector<size_t> Marking::edges_of(const std::string& tensor) const {
  std::vector<size_t> out;
  for (size_t c : view.consumers(tensor)) {
    const ir::Node& node = view.node(c);
    for (size_t s = 0; s < node.inputs.size(); ++s) {
      if (node.inputs[s] != tensor) continue;
      int64_t e = find_edge(c, s);
      if (e >= 0) out.push_back(static_cast<size_t>(e));
    }
  }
  return out;
}

const std::string& Marking::effective_output(size_t n) const {
  if (bn_of_conv[n] >= 0) return view.node(static_cast<size_t>(bn_of_conv[n])).outputs[0];
  return view.node(n).outputs[0];
}

int64_t Marking::source(const std::string& tensor) const {
  int64_t p = view.producer(tensor);
  for (int hops = 0; p >= 0 && hops < 4; ++hops) {
    const size_t n = static_cast<size_t>(p);
    const ir::Node& node = view.node(n);
    if (conv_of_bn[n] >= 0) return conv_of_bn[n];
    const bool bias_add = node.in_default_domain() && node.op_type == "Add" &&
                          node.inputs.size() == 2 &&
                          (view.is_constant(node.inputs[0]) != view.is_constant(node.inputs[1]));
    if (!bias_add) return p;
    const std::string& act = view.is_constant(node.inputs[0]) ? node.inputs[1] : node.inputs[0];
    int64_t q = view.producer(act);
    if (q < 0 || !ir::is_weighted_op(view.node(static_cast<size_t>(q)))) return p;
    p = q;
  }
  return p;
}

namespace {

bool is_float32_constant(const GraphView& view, const std::string& name) {
  const ir::Tensor* t = name.empty() ? nullptr : view.constant(name);
  return t && t->dtype() == ir::DType::kFloat32;
}

}  // namespace

void find_bn_folds(Marking& m) {
  const GraphView& view = m.view;
  for (size_t b = 0; b < view.size(); ++b) {
    const ir::Node& bn = view.node(b);
    if (!bn.in_default_domain() || bn.op_type != "BatchNormalization") continue;
    if (bn.inputs.size() != 5 || bn.attr_int("training_mode", 0) != 0) continue;
    const bool extra_outputs = std::any_of(bn.outputs.begin() + 1, bn.outputs.end(),
                                           [](const std::string& o) { return !o.empty(); });
    if (bn.outputs.empty() || extra_outputs) continue;
    bool params_ok = true;
    for (size_t i = 1; i < 5; ++i) params_ok &= is_float32_constant(view, bn.inputs[i]);
    if (!params_ok) continue;
    const std::string& x = bn.inputs[0];
    int64_t p = view.producer(x);
    if (p < 0) continue;
    const ir::Node& conv = view.node(static_cast<size_t>(p));
    const ir::WeightedOp* op = ir::weighted_op(conv);
    if (!ir::is_convolution(conv) || op->bias_slot < 0) continue;
    const std::string& wname = conv.input(op->weight_slot);
    const std::string& bname = conv.input(static_cast<size_t>(op->bias_slot));
    if (view.use_count(x) != 1 || !is_float32_constant(view, wname)) continue;
    if (!bname.empty() && !is_float32_constant(view, bname)) continue;
    const ir::Tensor* scale = view.constant(bn.inputs[1]);
    const ir::Tensor* w = view.constant(wname);
    if (w->rank() < 3 || scale->size() != ir::output_channels(conv, w->shape())) continue;
    m.bn_of_conv[static_cast<size_t>(p)] = static_cast<int64_t>(b);
    m.conv_of_bn[b] = p;
  }
}

}  // namespace ptq::planner
