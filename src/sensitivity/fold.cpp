// ConstantFolder: see fold.h.
#include "fold.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>
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

bool foldable(const ir::Graph& g, const InitializerMap& inits, const ir::Node& n) {
  if (n.outputs.size() != 1 || g.is_graph_output(n.outputs.front()) || !deterministic(n))
    return false;
  if (n.op_type == "Constant") return n.inputs.empty();
  bool any = false;
  for (const std::string& in : n.inputs) {
    if (in.empty()) continue;
    if (inits.find(in) == nullptr) return false;
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

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// A hash of a tensor's type, shape and first and last bytes: equal tensors hash equal, and it
// costs the same for a scalar and a weight.
size_t tensor_key(const ir::Tensor& t) {
  constexpr size_t kEdge = 32;
  size_t h = mix(0, static_cast<size_t>(t.dtype()));
  for (int64_t d : t.shape()) h = mix(h, static_cast<size_t>(d));
  const size_t n = t.raw() == nullptr ? 0 : t.nbytes();
  if (n == 0) return h;
  const std::string_view bytes(static_cast<const char*>(t.raw()), n);
  const size_t edge = std::min(n, kEdge);
  const std::hash<std::string_view> hash;
  return mix(mix(h, hash(bytes.substr(0, edge))), hash(bytes.substr(n - edge)));
}

}  // namespace

// find() compares op, attributes and inputs: this hashes the op and the tensors among them.
size_t ConstantFolder::key(const InitializerMap& inits, const ir::Node& node) {
  size_t h = std::hash<std::string>{}(node.op_type);
  for (const ir::Attribute& a : node.attributes) {
    if (a.type == ir::AttrType::kTensor) h = mix(h, tensor_key(a.t));
  }
  for (const std::string& in : node.inputs) {
    const ir::Tensor* t = in.empty() ? nullptr : inits.find(in);
    h = mix(h, t == nullptr ? 0 : tensor_key(*t));
  }
  return h;
}

const ConstantFolder::Entry* ConstantFolder::find(const InitializerMap& inits,
                                                  const ir::Node& node, size_t key) const {
  auto [first, last] = index_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    const Entry* e = it->second;
    if (!same_op(e->node, node)) continue;
    bool same = true;
    for (size_t i = 0; same && i < node.inputs.size(); ++i) {
      const ir::Tensor* t = node.inputs[i].empty() ? nullptr : inits.find(node.inputs[i]);
      same =
          (t == nullptr) == e->inputs[i].empty() && (t == nullptr || same_tensor(*t, e->inputs[i]));
    }
    if (same) return e;
  }
  return nullptr;
}

// The nodes' outputs, by one run of an executor from the sweep's factory.
Expected<runtime::NamedTensors> ConstantFolder::run_nodes(
    const ir::Model& m, const InitializerMap& inits, const std::vector<const ir::Node*>& nodes) {
  ir::Model part;
  part.ir_version = m.ir_version;
  part.opset_imports = m.opset_imports;
  part.graph.name = "fold";
  for (const ir::Node* node : nodes) {
    for (const std::string& in : node->inputs) {
      if (!in.empty()) part.graph.set_initializer(in, inits.find(in)->view());
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

const ir::Tensor& ConstantFolder::remember(const InitializerMap& inits, const ir::Node& node,
                                          size_t key, ir::Tensor value) {
  if (const Entry* e = find(inits, node, key)) return e->value;  // another thread computed it too
  auto e = std::make_unique<Entry>();
  e->node = node;
  for (const std::string& in : node.inputs) {
    e->inputs.push_back(in.empty() ? ir::Tensor() : inits.find(in)->view());
  }
  e->value = std::move(value);
  index_.emplace(key, e.get());
  entries_.push_back(std::move(e));
  return entries_.back()->value;
}

// The lock is held for lookups only: other models fold while this one's new nodes run.
Expected<bool> ConstantFolder::fold_round(ir::Model& m, int64_t& folded) {
  std::vector<ir::Node> kept;
  std::vector<ir::Node> fresh;  // not folded before: computed in this round
  std::vector<size_t> fresh_keys;
  std::vector<std::pair<std::string, ir::Tensor>> known;
  const InitializerMap inits(m.graph);  // valid until the round sets its values below
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (ir::Node& node : m.graph.nodes) {
      if (!foldable(m.graph, inits, node)) {
        kept.push_back(std::move(node));
        continue;
      }
      const size_t k = key(inits, node);
      if (const Entry* e = find(inits, node, k)) {
        known.emplace_back(node.outputs.front(), e->value.view());
      } else {
        fresh.push_back(std::move(node));
        fresh_keys.push_back(k);
      }
    }
  }
  const bool any = !known.empty() || !fresh.empty();
  if (!fresh.empty()) {
    std::vector<const ir::Node*> nodes;
    for (const ir::Node& n : fresh) nodes.push_back(&n);
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors values, run_nodes(m, inits, nodes));
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < fresh.size(); ++i) {
      const ir::Tensor& v = remember(inits, fresh[i], fresh_keys[i], std::move(values[i].second));
      known.emplace_back(fresh[i].outputs.front(), v.view());
    }
  }
  // Set after the lookups: a node reading another's output folds in the next round. Each is
  // a node's output, so no initializer has its name yet.
  std::vector<ir::Initializer>& all = m.graph.mutable_initializers();
  for (auto& [name, t] : known) all.push_back({std::move(name), std::move(t), ""});
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
