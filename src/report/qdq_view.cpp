#include "qdq_view.h"

#include "ptq/ir/constant_attr.h"

#include <fmt/format.h>

#include <algorithm>

namespace ptq::report {

bool op_is(const ir::Node& node, std::string_view op) {
  return node.in_default_domain() && node.op_type == op;
}

std::string_view precision_colour(Precision p) {
  switch (p) {
    case Precision::kInt8:
      return "#7fc97f";
    case Precision::kMixed:
      return "#fdc086";
    case Precision::kFloat:
      return "#9ecae1";
    case Precision::kQdq:
      return "#cab2d6";
    case Precision::kOther:
      return "#e0e0e0";
  }
  return "#ffffff";
}

bool is_q(const ir::Node& node) { return op_is(node, "QuantizeLinear"); }
bool is_dq(const ir::Node& node) { return op_is(node, "DequantizeLinear"); }

QdqView::QdqView(const ir::Model& model) : model_(model), index_(model.graph) {
  const ir::Graph& g = model.graph;
  for (const ir::Initializer& i : g.initializers()) constants_[i.name] = &i.tensor;
  for (const ir::Node& node : g.nodes) {
    if (!op_is(node, "Constant") || node.outputs.empty()) continue;
    const ir::Attribute* value = node.attr("value");
    if (value && value->type == ir::AttrType::kTensor) {
      constants_[node.outputs[0]] = &value->t;
    } else if (auto t = ir::constant_attr_value(node)) {
      owned_.push_back(std::move(*t));
      constants_[node.outputs[0]] = &owned_.back();
    }
  }
  precision_.resize(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) precision_[n] = compute_precision(n);
}

std::string QdqView::node_name(size_t n) const {
  const ir::Node& nd = node(n);
  return nd.name.empty() ? fmt::format("{}_{}", nd.op_type, n) : nd.name;
}

const ir::Tensor* QdqView::constant(std::string_view value) const {
  if (value.empty()) return nullptr;
  auto it = constants_.find(std::string(value));
  return it == constants_.end() ? nullptr : it->second;
}

int64_t QdqView::dq_producing(std::string_view value) const {
  if (value.empty()) return -1;
  const int64_t p = producer(value);
  return p >= 0 && is_dq(node(static_cast<size_t>(p))) ? p : -1;
}

std::string QdqView::dequantized_source(std::string_view value) const {
  const int64_t dq = dq_producing(value);
  if (dq < 0) return std::string(value);
  const std::string& x = node(static_cast<size_t>(dq)).input(0);
  const int64_t q = producer(x);
  if (q >= 0 && is_q(node(static_cast<size_t>(q)))) return node(static_cast<size_t>(q)).input(0);
  return x;
}

const ir::Tensor* QdqView::weight_data(std::string_view value) const {
  if (const ir::Tensor* t = constant(value)) return t;
  if (dq_producing(value) < 0) return nullptr;
  return constant(dequantized_source(value));
}

bool QdqView::is_weight_like(std::string_view value) const { return weight_data(value) != nullptr; }

ir::TypeInfo QdqView::type(std::string_view value) const {
  ir::TypeInfo info;
  if (value.empty()) return info;
  if (const ir::Tensor* t = constant(value)) {
    info.dtype = t->dtype();
    std::vector<ir::Dim> dims;
    for (int64_t d : t->shape()) dims.push_back(ir::Dim::of(d));
    info.dims = std::move(dims);
    return info;
  }
  if (const ir::ValueInfo* v = graph().find_value_info(value)) {
    if (v->type.dtype != ir::DType::kUndefined || v->type.has_shape()) return v->type;
  }
  // Q/DQ outputs are rarely declared: they have their input's shape.
  const int64_t p = producer(value);
  if (p < 0) return info;
  const ir::Node& nd = node(static_cast<size_t>(p));
  if (is_dq(nd)) {
    info = type(nd.input(0));
    info.dtype = ir::DType::kFloat32;
  } else if (is_q(nd)) {
    info = type(nd.input(0));
    const ir::Tensor* zp = constant(nd.input(2));
    info.dtype = zp ? zp->dtype() : ir::DType::kUInt8;
  }
  return info;
}

std::string QdqView::type_str(std::string_view value) const {
  const ir::TypeInfo t = type(value);
  std::string dtype = t.dtype == ir::DType::kUndefined ? "" : std::string(ir::dtype_name(t.dtype));
  if (!t.has_shape()) return dtype;
  const std::string shape = ir::dims_str(t.dims);
  return dtype.empty() ? shape : shape + " " + dtype;
}

WeightedSlots QdqView::weighted_slots(size_t n) const {
  const ir::Node& nd = node(n);
  WeightedSlots s;
  const ir::WeightedOp* op = ir::weighted_op(nd);
  if (op == nullptr) return s;
  // The operands: a convolution's weight is in its weight slot only, a matrix product's
  // first constant operand is its weight.
  const size_t operands = std::min(op->weight_slot + 1, nd.inputs.size());
  for (size_t slot = 0; slot < operands; ++slot) {
    if (nd.inputs[slot].empty()) continue;
    const bool weight = is_weight_like(nd.inputs[slot]) && (s.weight < 0) &&
                        (op->layout == ir::WeightLayout::kMatrix || slot == op->weight_slot);
    if (weight) {
      s.weight = static_cast<int64_t>(slot);
    } else {
      s.activations.push_back(slot);
    }
  }
  if (op->bias_slot >= 0 && !nd.input(static_cast<size_t>(op->bias_slot)).empty()) {
    s.bias = op->bias_slot;
  }
  return s;
}

bool QdqView::reads_dequantized(size_t n, size_t slot) const {
  return slot < node(n).inputs.size() && is_dequantized(node(n).inputs[slot]);
}

bool QdqView::has_float_data(size_t n) const {
  const ir::Node& nd = node(n);
  bool known = false;
  for (const std::string& out : nd.outputs) {
    const ir::DType t = type(out).dtype;
    if (t == ir::DType::kUndefined) continue;
    known = true;
    if (ir::is_float(t)) return true;
  }
  if (known) return false;
  for (const std::string& in : nd.inputs) {
    if (in.empty()) continue;
    const ir::DType t = type(in).dtype;
    if (t == ir::DType::kUndefined || ir::is_float(t)) return true;
  }
  return false;
}

Precision QdqView::compute_precision(size_t n) const {
  const ir::Node& nd = node(n);
  if (op_is(nd, "Constant")) return Precision::kOther;
  if (is_q(nd) || is_dq(nd)) return Precision::kQdq;
  if (ir::is_weighted_op(nd)) {
    const WeightedSlots s = weighted_slots(n);
    std::vector<size_t> needed = s.activations;
    if (s.weight >= 0) needed.push_back(static_cast<size_t>(s.weight));
    const auto quantized = std::count_if(needed.begin(), needed.end(),
                                         [&](size_t slot) { return reads_dequantized(n, slot); });
    if (quantized > 0) {
      return static_cast<size_t>(quantized) == needed.size() ? Precision::kInt8 : Precision::kMixed;
    }
  } else {
    for (const std::string& in : nd.inputs) {
      if (is_dequantized(in) && !is_weight_like(in)) return Precision::kInt8;
    }
  }
  return has_float_data(n) ? Precision::kFloat : Precision::kOther;
}

}  // namespace ptq::report
