#include "ptq/ir/graph.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ptq/ir/subgraph.h"

namespace ptq::ir {

std::optional<Shape> TypeInfo::concrete() const {
  if (!dims) return std::nullopt;
  Shape s;
  s.reserve(dims->size());
  for (const Dim& d : *dims) {
    if (!d.known()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

std::string dims_str(const std::optional<std::vector<Dim>>& dims) {
  if (!dims) return "unknown rank";
  std::string out = "[";
  for (size_t i = 0; i < dims->size(); ++i) {
    const Dim& d = (*dims)[i];
    if (i) out += ", ";
    out += d.known() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  return out + "]";
}

// ---- Node -------------------------------------------------------------------------------------

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

int64_t Node::attr_int(std::string_view attr_name, int64_t fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kInt ? a->i : fallback;
}

float Node::attr_float(std::string_view attr_name, float fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kFloat ? a->f : fallback;
}

std::string Node::attr_string(std::string_view attr_name, std::string fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kString ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view attr_name,
                                     std::vector<int64_t> fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kInts ? a->ints : fallback;
}

std::vector<float> Node::attr_floats(std::string_view attr_name,
                                     std::vector<float> fallback) const {
  const Attribute* a = attr(attr_name);
  return a && a->type == AttrType::kFloats ? a->floats : fallback;
}

void Node::set_attr(Attribute a) {
  for (Attribute& existing : attributes) {
    if (existing.name == a.name) {
      existing = std::move(a);
      return;
    }
  }
  attributes.push_back(std::move(a));
}

const std::string& Node::input(size_t i) const {
  static const std::string kEmpty;
  return i < inputs.size() ? inputs[i] : kEmpty;
}

std::string Node::label() const {
  if (name.empty())
    return fmt::format("{} node (output '{}')", op_type, outputs.empty() ? "" : outputs[0]);
  return fmt::format("{} node '{}'", op_type, name);
}

// ---- Graph ------------------------------------------------------------------------------------

const Tensor* Graph::initializer(std::string_view value_name) const {
  for (const Initializer& i : initializers_) {
    if (i.name == value_name) return &i.tensor;
  }
  return nullptr;
}

Tensor* Graph::mutable_initializer(std::string_view value_name) {
  for (Initializer& i : initializers_) {
    if (i.name == value_name) return &i.tensor;
  }
  return nullptr;
}

void Graph::set_initializer(std::string value_name, Tensor tensor) {
  if (Tensor* t = mutable_initializer(value_name)) {
    *t = std::move(tensor);
    return;
  }
  initializers_.push_back({std::move(value_name), std::move(tensor), {}});
}

void Graph::add_initializer(std::string value_name, Tensor tensor) {
  initializers_.push_back({std::move(value_name), std::move(tensor), {}});
}

bool Graph::remove_initializer(std::string_view value_name) {
  auto it = std::find_if(initializers_.begin(), initializers_.end(),
                         [&](const Initializer& i) { return i.name == value_name; });
  if (it == initializers_.end()) return false;
  initializers_.erase(it);
  return true;
}

const ValueInfo* Graph::find_value_info(std::string_view value_name) const {
  for (const auto* list : {&inputs, &outputs, &value_info, &inferred}) {
    for (const ValueInfo& v : *list) {
      if (v.name == value_name) return &v;
    }
  }
  return nullptr;
}

DType Graph::value_dtype(std::string_view value_name) const {
  if (const Tensor* t = initializer(value_name)) return t->dtype();
  const ValueInfo* v = find_value_info(value_name);
  return v ? v->type.dtype : DType::kUndefined;
}

bool Graph::is_graph_input(std::string_view value_name) const {
  return std::any_of(inputs.begin(), inputs.end(),
                     [&](const ValueInfo& v) { return v.name == value_name; });
}

bool Graph::is_graph_output(std::string_view value_name) const {
  return std::any_of(outputs.begin(), outputs.end(),
                     [&](const ValueInfo& v) { return v.name == value_name; });
}

std::vector<const ValueInfo*> Graph::real_inputs() const {
  std::unordered_set<std::string_view> inits;
  for (const Initializer& i : initializers_) inits.insert(i.name);
  std::vector<const ValueInfo*> out;
  for (const ValueInfo& v : inputs) {
    if (!inits.count(v.name)) out.push_back(&v);
  }
  return out;
}

// ---- Model ------------------------------------------------------------------------------------

int64_t Model::opset(std::string_view domain) const {
  const bool want_default = domain.empty() || domain == "ai.onnx";
  for (const OpsetImport& o : opset_imports) {
    const bool is_default = o.domain.empty() || o.domain == "ai.onnx";
    if (want_default ? is_default : o.domain == domain) return o.version;
  }
  return 0;
}

void Model::set_opset(std::string_view domain, int64_t version) {
  for (OpsetImport& o : opset_imports) {
    if (o.domain == domain) {
      o.version = version;
      return;
    }
  }
  opset_imports.push_back({std::string(domain), version});
}

const std::string* Model::metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata_props) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Model::set_metadata(std::string key, std::string value) {
  for (auto& [k, v] : metadata_props) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_props.emplace_back(std::move(key), std::move(value));
}

// ---- GraphIndex -------------------------------------------------------------------------------

GraphIndex::GraphIndex(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (const std::string& out : node.outputs) {
      if (!out.empty()) producer_.emplace(out, n);
    }
    auto consume = [&](const std::string& in) {
      if (in.empty()) return;
      auto& list = consumers_[in];
      if (list.empty() || list.back() != n) list.push_back(n);
    };
    for (const std::string& in : node.inputs) consume(in);
    // A value a subgraph reads is read by the node holding it.
    for (const std::string& in : outer_scope_values(node)) consume(in);
  }
}

int64_t GraphIndex::producer(std::string_view value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : static_cast<int64_t>(it->second);
}

const std::vector<size_t>& GraphIndex::consumers(std::string_view value) const {
  static const std::vector<size_t> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

// ---- Topological order ------------------------------------------------------------------------

Expected<std::vector<size_t>> topological_order(const Graph& graph) {
  // Each value's producing node, or kAvailable for graph inputs and initializers: one map.
  constexpr size_t kAvailable = static_cast<size_t>(-1);
  std::unordered_map<std::string_view, size_t> producer;
  producer.reserve(graph.inputs.size() + graph.initializers().size() + 2 * graph.nodes.size());
  for (const ValueInfo& v : graph.inputs) producer.emplace(v.name, kAvailable);
  for (const Initializer& i : graph.initializers()) producer.emplace(i.name, kAvailable);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& out : graph.nodes[n].outputs) {
      if (out.empty()) continue;
      if (!producer.emplace(out, n).second) {
        return invalid_input("value '{}' has two producers (second: {})", out,
                             graph.nodes[n].label());
      }
    }
  }
  // Kahn's algorithm; ties keep the file order so a sorted graph keeps its order.
  std::vector<size_t> pending(graph.nodes.size(), 0);
  std::vector<std::vector<size_t>> users(graph.nodes.size());
  std::vector<size_t> deps;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    deps.clear();
    const Node& node = graph.nodes[n];
    auto depend = [&](const std::string& in) -> Status {
      if (in.empty()) return {};
      auto it = producer.find(in);
      if (it == producer.end()) {
        return invalid_input("input '{}' of {} is produced by no node and is not a graph input "
                             "or initializer", in, node.label());
      }
      const size_t p = it->second;
      if (p == kAvailable || std::find(deps.begin(), deps.end(), p) != deps.end()) return {};
      deps.push_back(p);
      users[p].push_back(n);
      return {};
    };
    for (const std::string& in : node.inputs) PTQ_RETURN_IF_ERROR(depend(in));
    // A value a subgraph reads must exist before the node holding it runs.
    for (const std::string& in : outer_scope_values(node)) PTQ_RETURN_IF_ERROR(depend(in));
    pending[n] = deps.size();
  }
  std::vector<size_t> order;
  order.reserve(graph.nodes.size());
  std::vector<size_t> ready;
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    if (pending[n] == 0) ready.push_back(n);
  }
  // `ready` is a stack holding the smallest index on top.
  while (!ready.empty()) {
    size_t n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (size_t u : users[n]) {
      if (--pending[u] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), u, std::greater<>()), u);
      }
    }
  }
  if (order.size() != graph.nodes.size()) {
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (pending[n] != 0)
        return invalid_input("graph has a cycle through {}", graph.nodes[n].label());
    }
  }
  return order;
}

}  // namespace ptq::ir
