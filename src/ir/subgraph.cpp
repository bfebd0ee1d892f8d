#include "ptq/ir/subgraph.h"

#include <algorithm>
#include <unordered_set>

namespace ptq::ir {

namespace {

template <typename Fn>
void for_each_subgraph(const Node& node, Fn&& fn) {
  for (const Attribute& a : node.attributes) {
    if (a.g) fn(*a.g);
    for (const auto& g : a.graphs) {
      if (g) fn(*g);
    }
  }
}

void add_once(std::vector<std::string>& list, std::unordered_set<std::string>& seen,
              const std::string& name) {
  if (!name.empty() && seen.insert(name).second) list.push_back(name);
}

}  // namespace

std::vector<std::string> outer_scope_values(const Graph& graph) {
  std::unordered_set<std::string> defined;
  for (const ValueInfo& v : graph.inputs) defined.insert(v.name);
  for (const Initializer& i : graph.initializers()) defined.insert(i.name);
  for (const Node& n : graph.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  std::vector<std::string> free;
  std::unordered_set<std::string> seen;
  auto read = [&](const std::string& name) {
    if (!defined.count(name)) add_once(free, seen, name);
  };
  for (const Node& n : graph.nodes) {
    for (const std::string& in : n.inputs) read(in);
    for (const std::string& name : outer_scope_values(n)) read(name);
  }
  for (const ValueInfo& v : graph.outputs) read(v.name);
  return free;
}

std::vector<std::string> outer_scope_values(const Node& node) {
  std::vector<std::string> free;
  if (!has_subgraph(node)) return free;
  std::unordered_set<std::string> seen(node.inputs.begin(), node.inputs.end());
  for_each_subgraph(node, [&](const Graph& g) {
    for (const std::string& name : outer_scope_values(g)) add_once(free, seen, name);
  });
  return free;
}

bool has_subgraph(const Node& node) {
  return std::any_of(node.attributes.begin(), node.attributes.end(),
                     [](const Attribute& a) { return a.g != nullptr || !a.graphs.empty(); });
}

}  // namespace ptq::ir
