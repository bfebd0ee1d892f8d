// make_cut(): the subgraph of a variant that differs from its base model. Quantizing one unit
// adds Q/DQ on its inputs and changes its weights; every value upstream keeps the base's bytes,
// so those nodes need not run again: their outputs at the cut are taken from the base run.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cut.h"
#include "initializers.h"
#include "rewire.h"
#include "ptq/sensitivity.h"
#include "same.h"

namespace ptq::sensitivity {

namespace {

// A variant graph's values by name, numbered (inputs, initializers, node outputs): the cut's
// sets of values are flags by number instead of sets of strings.
class Values {
 public:
  explicit Values(const ir::Graph& g) {
    ids_.reserve(g.inputs.size() + g.initializers().size() + 2 * g.nodes.size());
    for (const ir::ValueInfo& v : g.inputs) add(v.name, nullptr, -1);
    for (const ir::Initializer& i : g.initializers()) add(i.name, &i.tensor, -1);
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (const std::string& out : g.nodes[n].outputs) add(out, nullptr, static_cast<int64_t>(n));
    }
  }
  size_t size() const { return initializer_.size(); }
  // The value's number, or -1 for a name the graph does not hold.
  int64_t id(std::string_view name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : static_cast<int64_t>(it->second);
  }
  const ir::Tensor* initializer(std::string_view name) const {
    const int64_t i = id(name);
    return i < 0 ? nullptr : initializer_[static_cast<size_t>(i)];
  }
  int64_t producer(size_t id) const { return producer_[id]; }
  // The nodes of `g` (the graph numbered) in a topological order: the file order when it is
  // one (apply() and the folder keep a sorted model so), else ir::topological_order()'s, which
  // also names the fault of a broken graph.
  Expected<std::vector<size_t>> node_order(const ir::Graph& g) const {
    if (!sorted(g)) return ir::topological_order(g);
    std::vector<size_t> order(g.nodes.size());
    std::iota(order.begin(), order.end(), size_t{0});
    return order;
  }

 private:
  // Whether every node reads only values given before it, each value given once.
  bool sorted(const ir::Graph& g) const {
    if (clash_) return false;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (const std::string& in : g.nodes[n].inputs) {
        if (in.empty()) continue;
        const int64_t i = id(in);
        if (i < 0 || producer_[static_cast<size_t>(i)] >= static_cast<int64_t>(n)) return false;
      }
    }
    return true;
  }

  void add(std::string_view name, const ir::Tensor* init, int64_t node) {
    if (name.empty()) return;
    auto [it, fresh] = ids_.emplace(name, initializer_.size());
    if (!fresh) {
      clash_ = clash_ || node >= 0;  // a second producer, or a node output named as an input
      if (init != nullptr) initializer_[it->second] = init;
      if (node >= 0) producer_[it->second] = node;
      return;
    }
    initializer_.push_back(init);
    producer_.push_back(node);
  }

  std::unordered_map<std::string_view, size_t> ids_;
  std::vector<const ir::Tensor*> initializer_;  // by id; null when not an initializer
  std::vector<int64_t> producer_;               // by id; -1 when no node produces it
  bool clash_ = false;
};

// Flags by value number; a name the graph does not hold reads false.
struct ValueFlags {
  const Values& values;
  std::vector<char> on = std::vector<char>(values.size(), 0);
  bool get(std::string_view name) const {
    const int64_t i = values.id(name);
    return i >= 0 && on[static_cast<size_t>(i)] != 0;
  }
  // Sets the flag; false when it was set already (or the name is unknown).
  bool set(std::string_view name) {
    const int64_t i = values.id(name);
    if (i < 0 || on[static_cast<size_t>(i)] != 0) return false;
    on[static_cast<size_t>(i)] = 1;
    return true;
  }
};

// Same op on the same values with the same attributes and the same constant inputs.
bool same_node(const ir::Node& v, const Values& variant, const ir::Node& b,
               const InitializerMap& base) {
  if (v.op_type != b.op_type || v.domain != b.domain || v.inputs != b.inputs ||
      v.outputs != b.outputs || v.attributes.size() != b.attributes.size()) {
    return false;
  }
  for (size_t i = 0; i < v.attributes.size(); ++i) {
    if (!same_attribute(v.attributes[i], b.attributes[i])) return false;
  }
  for (const std::string& in : v.inputs) {
    if (in.empty()) continue;
    const ir::Tensor* vi = variant.initializer(in);
    const ir::Tensor* bi = base.find(in);
    if ((vi == nullptr) != (bi == nullptr)) return false;
    if (vi != nullptr && !same_tensor(*vi, *bi)) return false;
  }
  return true;
}

ir::TypeInfo type_of(const ir::Model& base, const ir::Model& variant, const std::string& name) {
  if (const ir::ValueInfo* vi = base.graph.find_value_info(name)) return vi->type;
  if (const ir::ValueInfo* vi = variant.graph.find_value_info(name)) return vi->type;
  ir::TypeInfo t;
  t.dtype = base.graph.value_dtype(name);
  return t;
}

// Values computable from constants and shapes alone. The Vulkan executor needs an op's shape
// inputs (Reshape's shape, …) to be such values of its own graph, so a cut recomputes them
// (Shape, Gather, Concat on a few integers) instead of reading them at its boundary.
ValueFlags shape_values(const ir::Graph& g, const Values& values,
                        const std::vector<size_t>& order) {
  ValueFlags s{values};
  for (const ir::Initializer& i : g.initializers()) s.set(i.name);
  for (size_t n : order) {
    const ir::Node& node = g.nodes[n];
    bool all = !node.inputs.empty() || node.op_type == "Constant";
    for (const std::string& in : node.inputs) all = all && (in.empty() || s.get(in));
    const bool of_shape =
        node.in_default_domain() && (node.op_type == "Shape" || node.op_type == "Size");
    if (!all && !of_shape) continue;
    for (const std::string& out : node.outputs) s.set(out);
  }
  return s;
}

// Adds to `in_cut` the producers of the shape values the cut's nodes read, and theirs in turn.
void add_shape_producers(const ir::Graph& g, const Values& values, const ValueFlags& statics,
                         std::vector<bool>& in_cut) {
  std::vector<size_t> work;
  for (size_t n = 0; n < in_cut.size(); ++n) {
    if (in_cut[n]) work.push_back(n);
  }
  while (!work.empty()) {
    const ir::Node& node = g.nodes[work.back()];
    work.pop_back();
    for (const std::string& in : node.inputs) {
      if (in.empty() || !statics.get(in)) continue;
      const int64_t p = values.producer(static_cast<size_t>(values.id(in)));
      if (p < 0 || in_cut[static_cast<size_t>(p)]) continue;
      in_cut[static_cast<size_t>(p)] = true;
      work.push_back(static_cast<size_t>(p));
    }
  }
}

}  // namespace

// The base's values numbered, its nodes' inputs and outputs by number, a topological order and
// its shape values: what cut(Rewiring) walks instead of the names.
struct BaseNumbers {
  explicit BaseNumbers(const ir::Graph& g) : values(g) {
    Expected<std::vector<size_t>> sorted = values.node_order(g);
    if (!sorted) {
      fault = sorted.status();
      return;
    }
    order = std::move(*sorted);
    statics = shape_values(g, values, order).on;
    auto ids = [&](const std::vector<std::string>& names) {
      std::vector<int64_t> out;
      for (const std::string& n : names) out.push_back(n.empty() ? -1 : values.id(n));
      return out;
    };
    for (const ir::Node& n : g.nodes) {
      inputs.push_back(ids(n.inputs));
      outputs.push_back(ids(n.outputs));
    }
  }
  Values values;
  std::vector<char> statics;  // by number: a shape value (shape_values())
  std::vector<size_t> order;
  std::vector<std::vector<int64_t>> inputs, outputs;  // by node: value numbers (-1: none)
  Status fault;  // the base's nodes could not be ordered
};

struct CutMaker::Index {
  explicit Index(const ir::Graph& g) : producers(g), initializers(g), numbers(g) {}
  ir::GraphIndex producers;
  InitializerMap initializers;
  BaseNumbers numbers;
};

CutMaker::CutMaker(const ir::Model& base)
    : base_(base), index_(std::make_unique<Index>(base.graph)) {}
CutMaker::~CutMaker() = default;

const ir::GraphIndex& CutMaker::base_index() const { return index_->producers; }

Expected<Cut> make_cut(const ir::Model& base, const ir::Model& variant) {
  return CutMaker(base).cut(variant);
}

Expected<Cut> CutMaker::cut(const ir::Model& variant) const {
  const ir::Model& base = base_;
  const ir::GraphIndex& base_index = index_->producers;
  const InitializerMap& base_inits = index_->initializers;
  const Values values(variant.graph);
  PTQ_ASSIGN_OR_RETURN(const std::vector<size_t> order, values.node_order(variant.graph));

  ValueFlags changed{values};  // values that differ from the base's
  std::vector<bool> in_cut(variant.graph.nodes.size(), false);
  for (size_t n : order) {
    const ir::Node& v = variant.graph.nodes[n];
    bool same = false;
    if (!v.outputs.empty()) {
      const int64_t b = base_index.producer(v.outputs.front());
      same = b >= 0 && same_node(v, values, base.graph.nodes[static_cast<size_t>(b)], base_inits);
    }
    for (const std::string& in : v.inputs) same = same && !changed.get(in);
    if (same) continue;
    in_cut[n] = true;
    for (const std::string& out : v.outputs) changed.set(out);
  }
  add_shape_producers(variant.graph, values, shape_values(variant.graph, values, order), in_cut);

  Cut cut;
  cut.sub.ir_version = variant.ir_version;
  cut.sub.opset_imports = variant.opset_imports;
  cut.sub.graph.name = variant.graph.name + "_cut";
  ValueFlags produced{values};
  for (size_t n : order) {
    if (!in_cut[n]) continue;
    for (const std::string& out : variant.graph.nodes[n].outputs) produced.set(out);
  }
  ValueFlags seen{values};
  for (size_t n : order) {
    if (!in_cut[n]) continue;
    const ir::Node& v = variant.graph.nodes[n];
    for (const std::string& in : v.inputs) {
      if (in.empty() || produced.get(in) || !seen.set(in)) continue;
      if (const ir::Tensor* t = values.initializer(in)) {
        cut.sub.graph.add_initializer(in, t->view());  // first sight (`seen`)
        continue;
      }
      cut.boundary.push_back(in);
      cut.sub.graph.inputs.push_back({in, type_of(base, variant, in), ""});
    }
    cut.sub.graph.nodes.push_back(v);
  }
  cut.nodes = static_cast<int64_t>(cut.sub.graph.nodes.size());
  for (const ir::ValueInfo& out : variant.graph.outputs) {
    if (changed.get(out.name)) {
      cut.sub_output.push_back(static_cast<int64_t>(cut.sub.graph.outputs.size()));
      cut.sub.graph.outputs.push_back(out);
      continue;
    }
    if (!base.graph.is_graph_output(out.name)) {
      return runtime_error("variant output '{}' is unchanged but not an output of the base model",
                           out.name);
    }
    cut.sub_output.push_back(-1);
  }
  return cut;
}

namespace {

// The base nodes a rewiring's variant runs anew: the nodes it rewires, every node reading a
// value one of those computes (in order), then the producers of the shape values they read.
std::vector<bool> rewired_nodes(const BaseNumbers& b, const Rewiring& r,
                                std::vector<char>& changed) {
  std::vector<bool> in_cut(b.inputs.size(), false);
  for (const Rewiring::Read& read : r.reads) in_cut[read.node] = true;
  for (size_t n : b.order) {
    for (size_t i = 0; !in_cut[n] && i < b.inputs[n].size(); ++i) {
      const int64_t id = b.inputs[n][i];
      in_cut[n] = id >= 0 && changed[static_cast<size_t>(id)] != 0;
    }
    if (!in_cut[n]) continue;
    for (int64_t id : b.outputs[n]) {
      if (id >= 0) changed[static_cast<size_t>(id)] = 1;
    }
  }
  std::vector<size_t> work;
  for (size_t n = 0; n < in_cut.size(); ++n) {
    if (in_cut[n]) work.push_back(n);
  }
  while (!work.empty()) {
    const size_t n = work.back();
    work.pop_back();
    for (size_t i = 0; i < b.inputs[n].size(); ++i) {
      const int64_t id = b.inputs[n][i];
      if (id < 0 || b.statics[static_cast<size_t>(id)] == 0) continue;
      const bool reread = std::any_of(r.reads.begin(), r.reads.end(), [&](const Rewiring::Read& x) {
        return x.node == n && x.slot == i;
      });
      const int64_t p = b.values.producer(static_cast<size_t>(id));
      if (reread || p < 0 || in_cut[static_cast<size_t>(p)]) continue;
      in_cut[static_cast<size_t>(p)] = true;
      work.push_back(static_cast<size_t>(p));
    }
  }
  return in_cut;
}

// Builds a rewired cut's subgraph node by node: each input not computed inside is taken once,
// as a borrowed initializer or as a boundary value the base run hands over.
class CutBuilder {
 public:
  CutBuilder(const ir::Model& base, const BaseNumbers& b, const Rewiring& r,
             const std::vector<bool>& in_cut, Cut& cut)
      : base_(base), b_(b), r_(r), in_cut_(in_cut), cut_(cut), seen_(b.values.size(), 0) {
    for (const auto& [before, node] : r.inserted)
      made_.insert(node.outputs.begin(), node.outputs.end());
  }

  // Adds `node` (a copy of base node `n`, rewired, or a node brought in: n < 0).
  Status add(ir::Node node, int64_t n) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const bool as_base =
          n >= 0 && node.inputs[i] == base_.graph.nodes[static_cast<size_t>(n)].inputs[i];
      const int64_t id =
          as_base ? b_.inputs[static_cast<size_t>(n)][i] : b_.values.id(node.inputs[i]);
      PTQ_RETURN_IF_ERROR(take(node.inputs[i], id));
    }
    cut_.sub.graph.nodes.push_back(std::move(node));
    return Status::ok();
  }

 private:
  Status take(const std::string& name, int64_t id) {
    if (name.empty()) return Status::ok();
    if (id < 0) {  // a value the rewiring brings: a node's output or a borrowed initializer
      if (made_.contains(name) || !taken_.insert(name).second) return Status::ok();
      for (const ir::Initializer& i : r_.initializers) {
        if (i.name == name) {
          cut_.sub.graph.add_initializer(name, i.tensor.view());
          return Status::ok();
        }
      }
      return runtime_error("rewired value '{}' is neither computed nor an initializer", name);
    }
    const size_t v = static_cast<size_t>(id);
    const int64_t p = b_.values.producer(v);
    if ((p >= 0 && in_cut_[static_cast<size_t>(p)]) || seen_[v] != 0) return Status::ok();
    seen_[v] = 1;
    if (const ir::Tensor* t = b_.values.initializer(name)) {
      cut_.sub.graph.add_initializer(name, t->view());
      return Status::ok();
    }
    cut_.boundary.push_back(name);
    cut_.sub.graph.inputs.push_back({name, type_of(base_, base_, name), ""});
    return Status::ok();
  }

  const ir::Model& base_;
  const BaseNumbers& b_;
  const Rewiring& r_;
  const std::vector<bool>& in_cut_;
  Cut& cut_;
  std::vector<char> seen_;                    // base values taken
  std::unordered_set<std::string> made_, taken_;  // the rewiring's own values
};

}  // namespace

Expected<Cut> CutMaker::cut(const Rewiring& r) const {
  const BaseNumbers& b = index_->numbers;
  PTQ_RETURN_IF_ERROR(b.fault);
  const ir::Graph& g = base_.graph;
  for (const Rewiring::Read& read : r.reads) {
    if (read.node >= g.nodes.size() || read.slot >= g.nodes[read.node].inputs.size()) {
      return runtime_error("a rewiring reads at node {} input {}, which the base lacks", read.node,
                           read.slot);
    }
  }
  std::vector<char> changed(b.values.size(), 0);
  const std::vector<bool> in_cut = rewired_nodes(b, r, changed);
  Cut cut;
  cut.sub.ir_version = base_.ir_version;
  cut.sub.opset_imports = base_.opset_imports;
  cut.sub.graph.name = g.name + "_cut";
  CutBuilder builder(base_, b, r, in_cut, cut);
  auto inserted = r.inserted.begin();
  for (size_t n : b.order) {
    for (; inserted != r.inserted.end() && inserted->first == n; ++inserted) {
      PTQ_RETURN_IF_ERROR(builder.add(inserted->second, -1));
    }
    if (!in_cut[n]) continue;
    ir::Node node = g.nodes[n];
    for (const Rewiring::Read& read : r.reads) {
      if (read.node == n) node.inputs[read.slot] = read.value;
    }
    PTQ_RETURN_IF_ERROR(builder.add(std::move(node), static_cast<int64_t>(n)));
  }
  if (inserted != r.inserted.end())
    return runtime_error("a rewiring inserts nodes before no node of the base");
  cut.nodes = static_cast<int64_t>(cut.sub.graph.nodes.size());
  for (const ir::ValueInfo& out : g.outputs) {
    const int64_t id = b.values.id(out.name);
    if (id < 0 || changed[static_cast<size_t>(id)] == 0) {
      cut.sub_output.push_back(-1);
      continue;
    }
    cut.sub_output.push_back(static_cast<int64_t>(cut.sub.graph.outputs.size()));
    cut.sub.graph.outputs.push_back(out);
  }
  return cut;
}

ir::Model borrowing_copy(const ir::Model& model) {
  ir::Model copy = model;
  std::vector<ir::Initializer>& inits = copy.graph.mutable_initializers();
  for (size_t i = 0; i < inits.size(); ++i) {
    inits[i].tensor = model.graph.initializers()[i].tensor.view();
  }
  // Constant nodes' tensors too: copies of the copy then share them, and the folder and the
  // cut recognise them by address instead of comparing their bytes.
  for (size_t n = 0; n < copy.graph.nodes.size(); ++n) {
    std::vector<ir::Attribute>& attrs = copy.graph.nodes[n].attributes;
    for (size_t a = 0; a < attrs.size(); ++a) {
      const ir::Attribute& from = model.graph.nodes[n].attributes[a];
      attrs[a].t = from.t.view();
      for (size_t i = 0; i < attrs[a].tensors.size(); ++i)
        attrs[a].tensors[i] = from.tensors[i].view();
    }
  }
  return copy;
}

ir::Model with_outputs(const ir::Model& base, const std::vector<std::string>& values) {
  ir::Model m = borrowing_copy(base);
  std::unordered_set<std::string> have;
  for (const ir::ValueInfo& v : m.graph.outputs) have.insert(v.name);
  for (const ir::ValueInfo& v : m.graph.inputs) have.insert(v.name);
  for (const std::string& name : values) {
    if (base.graph.initializer(name) != nullptr || !have.insert(name).second) continue;
    m.graph.outputs.push_back({name, type_of(base, base, name), ""});
  }
  return m;
}

}  // namespace ptq::sensitivity
