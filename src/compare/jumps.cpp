// Where a traced tensor's error comes from and whether it jumps there (trace.h, mark_jumps):
// the rule is in include/ptq/compare.h (TensorTrace) and docs/COMPARE.md.
#include <algorithm>
#include <unordered_map>

#include "trace.h"

namespace ptq::compare {

namespace {

using Names = std::vector<std::string>;

void add_unique(Names& to, const Names& from) {
  for (const std::string& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

// For every value of the graph, the traced tensors it is computed from without passing through
// another traced tensor: itself when traced. Values are visited in topological order, so a
// node's inputs are known before its outputs.
std::unordered_map<std::string, Names> traced_sources(
    const ir::Graph& g, const std::unordered_map<std::string, size_t>& traced) {
  std::unordered_map<std::string, Names> sources;
  for (const ir::ValueInfo& v : g.inputs) {
    if (traced.count(v.name)) sources[v.name] = {v.name};
  }
  Expected<std::vector<size_t>> order = ir::topological_order(g);
  if (!order) return sources;  // match_tensors() sorted this graph already
  for (size_t n : *order) {
    const ir::Node& node = g.nodes[n];
    Names from;
    for (const std::string& in : node.inputs) {
      if (auto it = sources.find(in); it != sources.end()) add_unique(from, it->second);
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      sources[out] = traced.count(out) ? Names{out} : from;
    }
  }
  return sources;
}

}  // namespace

void mark_jumps(const ir::Graph& reference, double jump_db, std::vector<TensorTrace>& traces) {
  std::unordered_map<std::string, size_t> traced;
  for (size_t i = 0; i < traces.size(); ++i) traced.emplace(traces[i].pair.reference, i);
  const std::unordered_map<std::string, Names> sources = traced_sources(reference, traced);
  std::unordered_map<std::string, const ir::Node*> producer;
  for (const ir::Node& n : reference.nodes) {
    for (const std::string& o : n.outputs) producer.emplace(o, &n);
  }
  for (TensorTrace& t : traces) {
    auto p = producer.find(t.pair.reference);
    if (p != producer.end()) {
      t.node = p->second->name;
      t.op_type = p->second->op_type;
      for (const std::string& in : p->second->inputs) {
        if (auto it = sources.find(in); it != sources.end()) add_unique(t.inputs, it->second);
      }
    }
    t.reference_db = kCleanDb;
    for (const std::string& in : t.inputs) {
      t.reference_db = std::min(t.reference_db, traces[traced.at(in)].agreement.sqnr_db());
    }
    t.jump = t.agreement.sqnr_db() < t.reference_db - jump_db;
  }
}

}  // namespace ptq::compare
