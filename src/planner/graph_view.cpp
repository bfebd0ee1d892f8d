#include "graph_view.h"

#include "ptq/ir/constant_attr.h"

#include <algorithm>
#include <set>

namespace ptq::planner {

namespace {

bool op_in(const ir::Node& node, std::initializer_list<std::string_view> ops) {
  if (!node.in_default_domain()) return false;
  return std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
}

}  // namespace

GraphView::GraphView(const ir::Graph& graph,
                     const std::map<std::string, std::vector<ir::Dim>>* value_dims)
    : graph_(graph), value_dims_(value_dims), index_(graph) {
  for (const ir::Initializer& i : graph.initializers()) constants_[i.name] = &i.tensor;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (!op_in(node, {"Constant"}) || node.outputs.empty()) continue;
    const ir::Attribute* value = node.attr("value");
    if (value && value->type == ir::AttrType::kTensor) {
      constants_[node.outputs[0]] = &value->t;
    } else if (auto t = ir::constant_attr_value(node)) {
      owned_.push_back(std::move(*t));
      constants_[node.outputs[0]] = &owned_.back();
    } else {
      continue;
    }
    constant_nodes_[node.outputs[0]] = n;
  }

  auto order = ir::topological_order(graph);
  if (order.has_value()) {
    order_ = std::move(order).value();
  } else {
    sorted_ok_ = false;
    order_.resize(graph.nodes.size());
    for (size_t n = 0; n < order_.size(); ++n) order_[n] = n;
  }
  depth_.assign(graph.nodes.size(), 0);
  for (size_t n : order_) {
    for (const std::string& in : graph.nodes[n].inputs) {
      int64_t p = in.empty() ? -1 : producer(in);
      if (p >= 0) depth_[n] = std::max(depth_[n], depth_[static_cast<size_t>(p)] + 1);
    }
  }
}

const ir::Tensor* GraphView::constant(std::string_view name) const {
  auto it = constants_.find(std::string(name));
  return it == constants_.end() ? nullptr : it->second;
}

int64_t GraphView::constant_node(std::string_view name) const {
  auto it = constant_nodes_.find(std::string(name));
  return it == constant_nodes_.end() ? -1 : static_cast<int64_t>(it->second);
}

size_t GraphView::use_count(std::string_view name) const {
  size_t count = graph_.is_graph_output(name) ? 1 : 0;
  for (size_t c : consumers(name)) {
    for (const std::string& in : graph_.nodes[c].inputs) count += in == name ? 1 : 0;
  }
  return count;
}

ir::DType GraphView::dtype(std::string_view name) const {
  if (const ir::Tensor* t = constant(name)) return t->dtype();
  return graph_.value_dtype(name);
}

bool GraphView::is_float_activation(std::string_view name) const {
  if (name.empty() || is_constant(name)) return false;
  ir::DType t = dtype(name);
  return t == ir::DType::kFloat32 || t == ir::DType::kUndefined;
}

std::optional<std::vector<ir::Dim>> GraphView::dims(std::string_view name) const {
  if (const ir::Tensor* t = constant(name)) {
    std::vector<ir::Dim> d;
    for (int64_t v : t->shape()) d.push_back(ir::Dim::of(v));
    return d;
  }
  if (value_dims_ != nullptr) {
    if (auto it = value_dims_->find(std::string(name)); it != value_dims_->end()) return it->second;
  }
  const ir::ValueInfo* v = graph_.find_value_info(name);
  if (!v) return std::nullopt;
  return v->type.dims;
}

bool is_float_sensitive(const ir::Node& node) {
  return op_in(node, {"Softmax", "LogSoftmax", "LayerNormalization", "Exp", "Log", "Pow", "Sqrt",
                      "Reciprocal", "Erf", "InstanceNormalization", "GroupNormalization",
                      "ReduceMean", "ReduceSum", "ReduceL2"});
}

bool is_quantization_op(const ir::Node& node) {
  static const std::set<std::string, std::less<>> kOps = {
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
      "QLinearMatMul", "ConvInteger", "MatMulInteger", "QLinearAdd", "QLinearMul",
      "QGemm", "QLinearConcat", "QLinearAveragePool", "QLinearGlobalAveragePool",
      "QLinearSigmoid", "QLinearLeakyRelu", "DynamicQuantizeMatMul", "QAttention"};
  return kOps.count(node.op_type) > 0;
}

}  // namespace ptq::planner
