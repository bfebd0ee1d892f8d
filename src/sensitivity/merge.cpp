// merge_models(): see merge.h.
#include "merge.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

namespace ptq::sensitivity {

namespace {

// Names of one part's values in the merged graph.
class Renamer {
 public:
  Renamer(size_t part, const ir::Graph& g, ir::Graph& merged,
          std::unordered_map<std::string, const void*>& shared_inits)
      : prefix_(fmt::format("{}|", part)), graph_(g), merged_(merged), shared_(shared_inits) {
    for (const ir::ValueInfo& v : g.inputs) {
      if (g.initializer(v.name) == nullptr) inputs_.insert(v.name);
    }
  }

  std::string operator()(const std::string& name) {
    if (name.empty() || inputs_.contains(name)) return name;
    const ir::Tensor* t = graph_.initializer(name);
    if (t == nullptr) return prefix_ + name;
    // Keep one copy of an initializer several parts borrow from the same memory.
    auto [it, fresh] = shared_.emplace(name, t->raw());
    if (fresh) merged_.set_initializer(name, t->view());
    if (it->second == t->raw()) return name;
    merged_.set_initializer(prefix_ + name, t->view());
    return prefix_ + name;
  }

 private:
  std::string prefix_;
  const ir::Graph& graph_;
  ir::Graph& merged_;
  std::unordered_map<std::string, const void*>& shared_;
  std::unordered_set<std::string> inputs_;
};

}  // namespace

Expected<Merged> merge_models(std::span<ir::Model* const> parts) {
  Merged m;
  if (parts.empty()) return m;
  m.model.ir_version = parts.front()->ir_version;
  m.model.opset_imports = parts.front()->opset_imports;
  m.model.graph.name = "sensitivity_merged";
  std::unordered_map<std::string, const void*> shared_inits;
  std::unordered_set<std::string> inputs;
  for (size_t i = 0; i < parts.size(); ++i) {
    ir::Graph& g = parts[i]->graph;
    Renamer rename(i, g, m.model.graph, shared_inits);
    for (const ir::ValueInfo& v : g.inputs) {
      if (g.initializer(v.name) != nullptr) continue;
      if (inputs.insert(v.name).second) m.model.graph.inputs.push_back(v);
    }
    for (ir::Node& n : g.nodes) {
      n.name = fmt::format("{}|{}", i, n.name);
      for (std::string& in : n.inputs) in = rename(in);
      for (std::string& out : n.outputs) out = rename(out);
      m.model.graph.nodes.push_back(std::move(n));
    }
    g.nodes.clear();
    std::vector<size_t>& outs = m.outputs.emplace_back();
    for (const ir::ValueInfo& v : g.outputs) {
      if (g.initializer(v.name) != nullptr || g.is_graph_input(v.name)) {
        return runtime_error("part {}: output '{}' is not computed by a node", i, v.name);
      }
      outs.push_back(m.model.graph.outputs.size());
      m.model.graph.outputs.push_back({rename(v.name), v.type, ""});
    }
  }
  return m;
}

}  // namespace ptq::sensitivity
