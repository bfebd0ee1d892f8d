// dropped_edges(), added_edges(), rewiring_dropping(), rewiring_adding(), rewired(): see rewire.h.
#include "rewire.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

namespace {

using planner::Plan;
using planner::QuantEdge;
using planner::Role;
using Slot = std::pair<size_t, size_t>;  // (node, input)

bool same_edge(const QuantEdge& a, const QuantEdge& b) {
  return a.node == b.node && a.input == b.input && a.tensor == b.tensor && a.role == b.role &&
         a.axis == b.axis && a.bias_input_slot == b.bias_input_slot &&
         a.bias_weight_slot == b.bias_weight_slot;
}

// The scale group whose scale the activation `tensor` takes under `plan` (null when none).
const planner::ScaleGroup* scale_group(const Plan& plan, const std::string& tensor) {
  const planner::TensorPlan* t = plan.tensor(tensor);
  if (t == nullptr) return nullptr;
  for (const planner::ScaleGroup& g : plan.groups) {
    if (g.name == t->scale_group) return &g;
  }
  return nullptr;
}

// Same group and range (a NaN bound never compares equal: such plans are not rewired).
bool same_scale(const Plan& a, const Plan& b, const std::string& tensor) {
  const planner::ScaleGroup* ga = scale_group(a, tensor);
  const planner::ScaleGroup* gb = scale_group(b, tensor);
  return ga != nullptr && gb != nullptr && ga->name == gb->name && ga->has_range == gb->has_range &&
         ga->range.amax == gb->range.amax && ga->range.min == gb->range.min &&
         ga->range.max == gb->range.max;
}

// A bias's quantization reads its weight's scales: a bias and its weight are kept or dropped
// together.
bool biases_follow_weights(const std::vector<QuantEdge>& edges, const std::set<Slot>& kept) {
  for (const QuantEdge& e : edges) {
    if (e.role != Role::kBias) continue;
    if (kept.contains({e.node, e.input}) != kept.contains({e.node, e.bias_weight_slot}))
      return false;
  }
  return true;
}

// The edges of `full` that `variant` keeps and those it drops.
struct Split {
  std::vector<const QuantEdge*> kept, dropped;
};

// `full`'s edges split by `variant`, when every edge of `variant` is one of `full`'s with the
// same scale, neither plan folds a BatchNormalization nor corrects a bias, and no weight or bias is
// read by a kept edge and a dropped one (its scales may have been widened for the dropped one's
// bias); nullopt otherwise.
std::optional<Split> split_edges(const Plan& full, const Plan& variant) {
  if (!full.folds.empty() || !variant.folds.empty() || full.node_count != variant.node_count ||
      !full.options.bias_corrections.empty()) {  // corrected biases are no edges
    return std::nullopt;
  }
  std::map<Slot, const QuantEdge*> by_slot;
  for (const QuantEdge& e : full.edges) by_slot.emplace(Slot{e.node, e.input}, &e);
  std::set<Slot> kept;
  std::unordered_set<std::string_view> kept_constants;  // weights and biases still quantized
  Split split;
  for (const QuantEdge& e : variant.edges) {
    auto it = by_slot.find({e.node, e.input});
    if (it == by_slot.end() || !same_edge(*it->second, e)) return std::nullopt;
    if (e.role == Role::kActivation && !same_scale(full, variant, e.tensor)) return std::nullopt;
    if (e.role != Role::kActivation) kept_constants.insert(it->second->tensor);
    kept.insert({e.node, e.input});
    split.kept.push_back(it->second);
  }
  if (!biases_follow_weights(full.edges, kept)) return std::nullopt;
  for (const QuantEdge& e : full.edges) {
    if (kept.contains({e.node, e.input})) continue;
    if (e.role != Role::kActivation && kept_constants.contains(e.tensor)) return std::nullopt;
    split.dropped.push_back(&e);
  }
  return split;
}

// What of `base` a variant made from it is read for: its inputs, outputs, nodes and
// initializers (borrowed). Declarations are left out: the cut takes its boundary's types from
// the base, and copying them was most of a variant's making.
ir::Model runnable_copy(const ir::Model& base) {
  ir::Model m;
  m.ir_version = base.ir_version;
  m.opset_imports = base.opset_imports;
  m.graph.name = base.graph.name;
  m.graph.inputs = base.graph.inputs;
  m.graph.outputs = base.graph.outputs;
  m.graph.nodes = base.graph.nodes;
  std::vector<ir::Initializer>& inits = m.graph.mutable_initializers();
  inits.reserve(base.graph.initializers().size());
  for (const ir::Initializer& i : base.graph.initializers())
    inits.push_back({i.name, i.tensor.view(), {}});
  return m;
}

// Borrows `name` from `from` into `r` unless `base` or `r` has it; false when `from` lacks it.
bool borrow_initializer(Rewiring& r, const ir::Graph& base, const ir::Graph& from,
                        const std::string& name) {
  if (base.initializer(name) != nullptr) return true;
  for (const ir::Initializer& i : r.initializers) {
    if (i.name == name) return true;
  }
  const ir::Tensor* t = from.initializer(name);
  if (t == nullptr) return false;
  r.initializers.push_back({name, t->view(), {}});
  return true;
}

// The node of `made` (a model made from `source` by apply(), which keeps node outputs, and
// folding) that an edge of `source`'s plan names: found by its first output, of the planned op
// and with the edge's slot. -1 when not there.
int64_t planned_node(const ir::Model& made, const ir::GraphIndex& index, const ir::Model& source,
                     const QuantEdge& e) {
  if (e.node >= source.graph.nodes.size() || source.graph.nodes[e.node].outputs.empty()) return -1;
  const ir::Node& planned = source.graph.nodes[e.node];
  const int64_t n = index.producer(planned.outputs.front());
  if (n < 0) return -1;
  const ir::Node& node = made.graph.nodes[static_cast<size_t>(n)];
  return node.op_type == planned.op_type && e.input < node.inputs.size() ? n : -1;
}

}  // namespace

std::optional<std::vector<const QuantEdge*>> dropped_edges(const Plan& base, const Plan& variant) {
  std::optional<Split> split = split_edges(base, variant);
  if (!split) return std::nullopt;
  return std::move(split->dropped);
}

std::optional<std::vector<const QuantEdge*>> added_edges(const Plan& quantized,
                                                         const Plan& variant) {
  std::optional<Split> split = split_edges(quantized, variant);
  if (!split) return std::nullopt;
  return std::move(split->kept);
}

std::optional<Rewiring> rewiring_dropping(const ir::Model& base, const ir::GraphIndex& base_index,
                                          const ir::Model& source,
                                          const std::vector<const QuantEdge*>& dropped) {
  Rewiring r;
  for (const QuantEdge* e : dropped) {
    const int64_t n = planned_node(base, base_index, source, *e);
    if (n < 0) return std::nullopt;
    r.reads.push_back({static_cast<size_t>(n), e->input, e->tensor});
    // An activation is still computed by the base; a weight or bias apply() replaced is not.
    if (e->role == Role::kActivation) continue;
    if (!borrow_initializer(r, base.graph, source.graph, e->tensor)) return std::nullopt;
  }
  return r;
}

ir::Model rewired(const ir::Model& base, const Rewiring& r) {
  ir::Model m = runnable_copy(base);
  for (const Rewiring::Read& read : r.reads)
    m.graph.nodes[read.node].inputs[read.slot] = read.value;
  for (const ir::Initializer& i : r.initializers) m.graph.add_initializer(i.name, i.tensor.view());
  if (r.inserted.empty()) return m;
  std::vector<ir::Node> out;
  out.reserve(m.graph.nodes.size() + r.inserted.size());
  auto next = r.inserted.begin();
  for (size_t n = 0; n < m.graph.nodes.size(); ++n) {
    for (; next != r.inserted.end() && next->first == n; ++next) out.push_back(next->second);
    out.push_back(std::move(m.graph.nodes[n]));
  }
  m.graph.nodes = std::move(out);
  return m;
}

namespace {

// The Q -> DQ nodes of `quantized` giving `dq_out` from `tensor`, or null.
std::optional<std::pair<const ir::Node*, const ir::Node*>> qdq_chain(
    const ir::Model& quantized, const ir::GraphIndex& index, const std::string& dq_out,
    const std::string& tensor) {
  const int64_t d = index.producer(dq_out);
  if (d < 0) return std::nullopt;
  const ir::Node& dq = quantized.graph.nodes[static_cast<size_t>(d)];
  if (dq.op_type != "DequantizeLinear" || dq.inputs.empty()) return std::nullopt;
  const int64_t q = index.producer(dq.inputs[0]);
  if (q < 0) return std::nullopt;
  const ir::Node& qn = quantized.graph.nodes[static_cast<size_t>(q)];
  if (qn.op_type != "QuantizeLinear" || qn.inputs.empty() || qn.inputs[0] != tensor)
    return std::nullopt;
  return std::pair{&qn, &dq};
}

// An activation's Q -> DQ nodes brought in, and the index of their first reader.
struct Chain {
  size_t reader = 0;
  std::vector<ir::Node> nodes;
};

// Each chain's nodes to run right before its first reader (chains of one reader in the order
// of their values' names).
void insert_chains(Rewiring& r, std::map<std::string, Chain>& chains) {
  std::vector<Chain*> order;
  for (auto& [value, chain] : chains) order.push_back(&chain);
  std::stable_sort(order.begin(), order.end(),
                   [](const Chain* a, const Chain* b) { return a->reader < b->reader; });
  for (Chain* c : order) {
    for (ir::Node& n : c->nodes) r.inserted.emplace_back(c->reader, std::move(n));
  }
}

}  // namespace

std::optional<Rewiring> rewiring_adding(const ir::Model& base, const ir::GraphIndex& base_index,
                                        const ir::Model& quantized,
                                        const ir::GraphIndex& quantized_index,
                                        const ir::Model& source,
                                        const std::vector<const QuantEdge*>& added) {
  Rewiring r;
  std::map<std::string, Chain> chains;  // by DQ output
  for (const QuantEdge* e : added) {
    const int64_t n = planned_node(base, base_index, source, *e);
    const int64_t nq = planned_node(quantized, quantized_index, source, *e);
    if (n < 0 || nq < 0) return std::nullopt;
    const ir::Node& node = base.graph.nodes[static_cast<size_t>(n)];
    const ir::Node& qnode = quantized.graph.nodes[static_cast<size_t>(nq)];
    if (node.inputs[e->input] != e->tensor) return std::nullopt;
    const std::string& value = qnode.inputs[e->input];
    r.reads.push_back({static_cast<size_t>(n), e->input, value});
    if (e->role != Role::kActivation) {  // a dequantized weight or bias, folded
      if (!borrow_initializer(r, base.graph, quantized.graph, value)) return std::nullopt;
      continue;
    }
    auto [it, fresh] = chains.emplace(value, Chain{static_cast<size_t>(n), {}});
    if (!fresh) {
      it->second.reader = std::min(it->second.reader, static_cast<size_t>(n));
      continue;
    }
    const auto qdq = qdq_chain(quantized, quantized_index, value, e->tensor);
    if (!qdq) return std::nullopt;
    for (const ir::Node* c : {qdq->first, qdq->second}) {
      for (const std::string& in : c->inputs) {
        if (in.empty() || in == e->tensor || in == qdq->first->outputs.front()) continue;
        if (!borrow_initializer(r, base.graph, quantized.graph, in)) return std::nullopt;
      }
      it->second.nodes.push_back(*c);
    }
  }
  insert_chains(r, chains);
  return r;
}

}  // namespace ptq::sensitivity
