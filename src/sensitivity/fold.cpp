// ConstantFolder: see fold.h.
#include "fold.h"

#include <memory>
#include <utility>

#include "same.h"

namespace ptq::sensitivity {

namespace {

bool has_subgraph(const ir::Node& n) {
  for (const ir::Attribute& a : n.attributes) {
    if (a.type == ir::AttrType::kGraph || a.type == ir::AttrType::kGraphs) return true;
  }
  return false;
}

// A node whose output is the same on every run when its inputs are.
bool deterministic(const ir::Node& n) {
  return n.in_default_domain() && !n.op_type.starts_with("Random") && n.op_type != "Multinomial" &&
         n.op_type != "Bernoulli" && !has_subgraph(n);
}

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.size() != 1 || g.is_graph_output(n.outputs.front()) || !deterministic(n))
    return false;
  if (n.op_type == "Constant") return n.inputs.empty();
  bool any = false;
  for (const std::string& in : n.inputs) {
    if (in.empty()) continue;
    if (g.initializer(in) == nullptr) return false;
    any = true;
  }
  return any;
}

bool same_op(const ir::Node& a, const ir::Node& b) {
  if (a.op_type != b.op_type || a.domain != b.domain ||
      a.attributes.size() != b.attributes.size() || a.inputs.size() != b.inputs.size()) {
    return false;
  }
  for (size_t i = 0; i < a.attributes.size(); ++i) {
    if (!same_attribute(a.attributes[i], b.attributes[i])) return false;
  }
  return true;
}

}  // namespace

const ConstantFolder::Entry* ConstantFolder::find(const ir::Model& m, const ir::Node& node) const {
  for (const auto& e : entries_) {
    if (!same_op(e->node, node)) continue;
    bool same = true;
    for (size_t i = 0; same && i < node.inputs.size(); ++i) {
      const ir::Tensor* t = node.inputs[i].empty() ? nullptr : m.graph.initializer(node.inputs[i]);
      same =
          (t == nullptr) == e->inputs[i].empty() && (t == nullptr || same_tensor(*t, e->inputs[i]));
    }
    if (same) return e.get();
  }
  return nullptr;
}

// The nodes' outputs, by one run of an executor from the sweep's factory.
Expected<runtime::NamedTensors> ConstantFolder::run_nodes(
    const ir::Model& m, const std::vector<const ir::Node*>& nodes) {
  ir::Model part;
  part.ir_version = m.ir_version;
  part.opset_imports = m.opset_imports;
  part.graph.name = "fold";
  for (const ir::Node* node : nodes) {
    for (const std::string& in : node->inputs) {
      if (!in.empty()) part.graph.set_initializer(in, m.graph.initializer(in)->view());
    }
    part.graph.nodes.push_back(*node);
    const std::string& out = node->outputs.front();
    const ir::ValueInfo* info = m.graph.find_value_info(out);
    part.graph.outputs.push_back({out, info ? info->type : ir::TypeInfo{}, ""});
  }
  PTQ_ASSIGN_OR_RETURN(auto exec, executors_(part, 1));
  PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out, exec->run({}));
  if (out.size() != nodes.size())
    return runtime_error("folding gave {} of {} values", out.size(), nodes.size());
  return out;
}

void ConstantFolder::remember(const ir::Model& m, const ir::Node& node, ir::Tensor value) {
  auto e = std::make_unique<Entry>();
  e->node = node;
  for (const std::string& in : node.inputs) {
    e->inputs.push_back(in.empty() ? ir::Tensor() : m.graph.initializer(in)->view());
  }
  e->value = std::move(value);
  entries_.push_back(std::move(e));
}

Expected<bool> ConstantFolder::fold_round(ir::Model& m, int64_t& folded) {
  std::vector<ir::Node> kept;
  std::vector<ir::Node> fresh;  // not folded before: computed in this round
  std::vector<std::pair<std::string, ir::Tensor>> known;
  std::lock_guard<std::mutex> lock(mutex_);
  for (ir::Node& node : m.graph.nodes) {
    if (!foldable(m.graph, node)) {
      kept.push_back(std::move(node));
    } else if (const Entry* e = find(m, node)) {
      known.emplace_back(node.outputs.front(), e->value.view());
    } else {
      fresh.push_back(std::move(node));
    }
  }
  const bool any = !known.empty() || !fresh.empty();
  if (!fresh.empty()) {
    std::vector<const ir::Node*> nodes;
    for (const ir::Node& n : fresh) nodes.push_back(&n);
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors values, run_nodes(m, nodes));
    for (size_t i = 0; i < fresh.size(); ++i) {
      remember(m, fresh[i], std::move(values[i].second));
      known.emplace_back(fresh[i].outputs.front(), entries_.back()->value.view());
    }
  }
  // Set after the lookups: a node reading another's output folds in the next round.
  for (auto& [name, t] : known) m.graph.set_initializer(name, std::move(t));
  folded += static_cast<int64_t>(known.size());
  m.graph.nodes = std::move(kept);
  return any;
}

Expected<int64_t> ConstantFolder::fold(ir::Model& m) {
  int64_t folded = 0;
  while (true) {
    PTQ_ASSIGN_OR_RETURN(bool any, fold_round(m, folded));
    if (!any) return folded;
  }
}

}  // namespace ptq::sensitivity
