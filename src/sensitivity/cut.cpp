// make_cut(): the subgraph of a variant that differs from its base model. Quantizing one unit
// adds Q/DQ on its inputs and changes its weights; every value upstream keeps the base's bytes,
// so those nodes need not run again: their outputs at the cut are taken from the base run.
#include <memory>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "initializers.h"
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
  // The nodes in file order when that is a topological order (apply() and the folder keep a
  // sorted model so), else empty: ir::topological_order() then sorts them or names the fault.
  std::vector<size_t> file_order(const ir::Graph& g) const {
    if (clash_) return {};
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (const std::string& in : g.nodes[n].inputs) {
        if (in.empty()) continue;
        const int64_t i = id(in);
        if (i < 0 || producer_[static_cast<size_t>(i)] >= static_cast<int64_t>(n)) return {};
      }
    }
    std::vector<size_t> order(g.nodes.size());
    std::iota(order.begin(), order.end(), size_t{0});
    return order;
  }

 private:
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
ValueFlags shape_values(const ir::Graph& g, const Values& values, const std::vector<size_t>& order) {
  ValueFlags s{values};
  for (const ir::Initializer& i : g.initializers()) s.set(i.name);
  for (size_t n : order) {
    const ir::Node& node = g.nodes[n];
    bool all = !node.inputs.empty() || node.op_type == "Constant";
    for (const std::string& in : node.inputs) all = all && (in.empty() || s.get(in));
    const bool of_shape = node.in_default_domain() && (node.op_type == "Shape" || node.op_type == "Size");
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

struct CutMaker::Index {
  explicit Index(const ir::Graph& g) : producers(g), initializers(g) {}
  ir::GraphIndex producers;
  InitializerMap initializers;
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
  std::vector<size_t> order = values.file_order(variant.graph);
  if (order.empty() && !variant.graph.nodes.empty()) {
    PTQ_ASSIGN_OR_RETURN(order, ir::topological_order(variant.graph));
  }

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
      for (size_t i = 0; i < attrs[a].tensors.size(); ++i) attrs[a].tensors[i] = from.tensors[i].view();
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
