// strip_qdq(): turns a Q/DQ model back into its float form so it can be quantized again.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "graph_view.h"
#include "rewrite.h"

namespace ptq::planner {

namespace {

// DequantizeLinear of a constant: (q - zp) * scale, per tensor or along `axis`.
Expected<ir::Tensor> dequantize_constant(const ir::Node& dq, const ir::Tensor& q,
                                         const ir::Tensor& scale, const ir::Tensor* zp) {
  if (scale.dtype() != ir::DType::kFloat32) {
    return invalid_input("{}: scale is {}, expected float32", dq.label(),
                         ir::dtype_name(scale.dtype()));
  }
  ir::Tensor out(ir::DType::kFloat32, q.shape());
  int64_t axis = dq.attr_int("axis", 1);
  if (axis < 0) axis += q.rank();
  const bool per_axis = scale.rank() == 1 && scale.size() > 1;
  int64_t inner = 1;
  if (per_axis) {
    if (axis < 0 || axis >= q.rank() || q.dim(axis) != scale.size()) {
      return invalid_input("{}: {} scales for axis {} of shape {}", dq.label(), scale.size(), axis,
                           ir::shape_str(q.shape()));
    }
    for (int64_t d = axis + 1; d < q.rank(); ++d) inner *= q.dim(d);
  }
  for (int64_t i = 0; i < q.size(); ++i) {
    const int64_t c = per_axis ? (i / inner) % scale.size() : 0;
    const double z = zp ? zp->as_double(zp->size() == 1 ? 0 : c) : 0.0;
    out.data<float>()[i] =
        static_cast<float>((q.as_double(i) - z) * static_cast<double>(scale.data<float>()[c]));
  }
  return out;
}

void replace_uses(ir::Graph& g, const std::string& from, const std::string& to) {
  for (ir::Node& n : g.nodes) {
    for (std::string& in : n.inputs) {
      if (in == from) in = to;
    }
  }
}

}  // namespace

Expected<int64_t> strip_qdq(ir::Model& model) {
  ir::Graph& g = model.graph;
  for (const ir::Node& n : g.nodes) {
    if (is_quantization_op(n) && n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") {
      return invalid_input("cannot requantize: {} is an integer-arithmetic op", n.label());
    }
  }
  std::vector<bool> dead(g.nodes.size(), false);
  std::set<std::string> maybe_unused;
  std::map<size_t, ir::Node> identities;  // a DQ producing a graph output becomes an Identity
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& dq = g.nodes[i];
    if (dq.op_type != "DequantizeLinear") continue;
    const ir::Tensor* q = find_constant(g, dq.input(0));
    const ir::Tensor* scale = find_constant(g, dq.input(1));
    const ir::Tensor* zp = dq.input(2).empty() ? nullptr : find_constant(g, dq.input(2));
    if (!q || !scale) continue;
    PTQ_ASSIGN_OR_RETURN(ir::Tensor value, dequantize_constant(dq, *q, *scale, zp));
    for (const std::string& in : dq.inputs) maybe_unused.insert(in);
    dead[i] = true;
    g.set_initializer(dq.outputs[0], std::move(value));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& qn = g.nodes[i];
    if (qn.op_type != "QuantizeLinear") continue;
    const std::string x = qn.input(0);
    for (size_t j = 0; j < g.nodes.size(); ++j) {
      const ir::Node& dq = g.nodes[j];
      if (dead[j] || j == i ||
          std::find(dq.inputs.begin(), dq.inputs.end(), qn.outputs[0]) == dq.inputs.end()) {
        continue;
      }
      if (dq.op_type != "DequantizeLinear") {
        return invalid_input("cannot requantize: {} reads the quantized output of {}", dq.label(),
                             qn.label());
      }
      dead[j] = true;
      for (const std::string& in : dq.inputs) maybe_unused.insert(in);
      if (g.is_graph_output(dq.outputs[0])) {
        ir::Node id;
        id.op_type = "Identity";
        id.name = dq.name;
        id.inputs = {x};
        id.outputs = {dq.outputs[0]};
        identities.emplace(j, std::move(id));
      } else {
        replace_uses(g, dq.outputs[0], x);
      }
    }
    for (const std::string& in : qn.inputs) maybe_unused.insert(in);
    dead[i] = true;
  }
  int64_t removed = 0;
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!dead[i]) {
      kept.push_back(std::move(g.nodes[i]));
    } else if (auto it = identities.find(i); it != identities.end()) {
      kept.push_back(std::move(it->second));
    } else {
      ++removed;
    }
  }
  g.nodes = std::move(kept);
  const std::vector<bool> none;
  for (const std::string& name : maybe_unused) {
    if (name.empty() || count_uses(g, name, none) > 0) continue;
    g.remove_initializer(name);
    std::erase_if(g.nodes, [&](const ir::Node& n) {
      return n.op_type == "Constant" && !n.outputs.empty() && n.outputs[0] == name;
    });
  }
  return removed;
}

}  // namespace ptq::planner
