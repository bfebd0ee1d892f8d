// Constant folding for the executor (optimizer.h): nodes computed from constants alone run once,
// when the executor is made, instead of once per batch (a quantized weight's DequantizeLinear,
// shape arithmetic on initializers); the values become initializers of the graph the executor
// plans from.
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "optimizer.h"
#include "ptq/ir/constant_attr.h"
#include "ptq/ir/owned_copy.h"

namespace ptq::runtime {

namespace {

constexpr int64_t kSmallOutput = 64 * 1024;  // bytes a folded value may take whatever its inputs
constexpr int64_t kMostGrowth = 4;           // float from int8 (DequantizeLinear) still folds

class OwningAllocator final : public Allocator {
 public:
  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override {
    return ir::Tensor(dtype, shape);
  }
};

bool deterministic(const ir::Node& node) {
  static const std::unordered_set<std::string_view> random = {
      "RandomNormal",      "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial",   "Bernoulli"};
  if (!node.in_default_domain() || random.count(node.op_type) != 0) return false;
  return std::none_of(node.attributes.begin(), node.attributes.end(), [](const ir::Attribute& a) {
    return a.type == ir::AttrType::kGraph || a.type == ir::AttrType::kGraphs;
  });
}

// Folds nodes in topological order, knowing every constant by name.
class Folder {
 public:
  Folder(const ir::Model& model, Backend& backend, int threads)
      : model_(model), graph_(model.graph), backend_(backend), threads_(threads) {
    for (const ir::Initializer& init : graph_.initializers()) known_[init.name] = &init.tensor;
  }

  // Folds `node` when it qualifies; true when it did.
  bool visit(const ir::Node& node) {
    if (node.op_type == "Constant" && node.in_default_domain() && node.outputs.size() == 1) {
      if (std::optional<ir::Tensor> v = ir::constant_node_value(node)) {
        constants_.push_back(std::make_unique<ir::Tensor>(std::move(*v)));
        known_[node.outputs[0]] = constants_.back().get();
      }
      return false;  // the plan holds Constant nodes' values already
    }
    std::vector<const ir::Tensor*> ins;
    if (!foldable(node, ins)) return false;
    std::optional<std::vector<ir::Tensor>> outs = run(node, ins);
    if (!outs || !small_enough(ins, *outs)) return false;
    for (size_t i = 0; i < outs->size(); ++i) {
      folded_.emplace_back(node.outputs[i], std::make_unique<ir::Tensor>(std::move((*outs)[i])));
      known_[node.outputs[i]] = folded_.back().second.get();
    }
    return true;
  }

  std::vector<std::pair<std::string, std::unique_ptr<ir::Tensor>>> take() {
    return std::move(folded_);
  }

 private:
  bool foldable(const ir::Node& node, std::vector<const ir::Tensor*>& ins) const {
    if (!deterministic(node) || node.inputs.empty() || node.outputs.empty()) return false;
    for (const std::string& out : node.outputs) {
      if (out.empty() || graph_.is_graph_output(out)) return false;
    }
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = known_.find(in);
      if (it == known_.end()) return false;
      ins.push_back(it->second);
    }
    return std::any_of(ins.begin(), ins.end(), [](const ir::Tensor* t) { return t != nullptr; });
  }

  std::optional<std::vector<ir::Tensor>> run(const ir::Node& node,
                                             const std::vector<const ir::Tensor*>& ins) {
    if (!backend_.supports(node, model_.opset(""))) return std::nullopt;
    KernelContext ctx{node, model_.opset(""), threads_, &graph_};
    Expected<std::unique_ptr<Kernel>> kernel = backend_.create_kernel(ctx);
    if (!kernel) return std::nullopt;
    std::vector<ir::Tensor> outs(node.outputs.size());
    OwningAllocator alloc;
    if (!(*kernel)->run(ins, outs, alloc).is_ok()) return std::nullopt;
    for (ir::Tensor& t : outs) {
      if (t.dtype() == ir::DType::kUndefined) return std::nullopt;
      // A view (Reshape) of a model initializer may stay one: those outlive the executor.
      if (!t.owns_data() && !views_an_initializer(t)) t = ir::owned_copy(t);
    }
    return outs;
  }

  bool views_an_initializer(const ir::Tensor& t) const {
    const auto* p = static_cast<const std::byte*>(t.raw());
    const auto& inits = graph_.initializers();
    return p != nullptr && std::any_of(inits.begin(), inits.end(), [&](const ir::Initializer& i) {
             const auto* b = static_cast<const std::byte*>(i.tensor.raw());
             return b != nullptr && p >= b && p + t.nbytes() <= b + i.tensor.nbytes();
           });
  }

  static bool small_enough(const std::vector<const ir::Tensor*>& ins,
                           const std::vector<ir::Tensor>& outs) {
    int64_t in_bytes = 0, out_bytes = 0;
    for (const ir::Tensor* t : ins)
      in_bytes += t != nullptr ? static_cast<int64_t>(t->nbytes()) : 0;
    for (const ir::Tensor& t : outs)
      out_bytes += t.owns_data() ? static_cast<int64_t>(t.nbytes()) : 0;
    return out_bytes <= std::max(kSmallOutput, kMostGrowth * in_bytes);
  }

  const ir::Model& model_;
  const ir::Graph& graph_;
  Backend& backend_;
  int threads_;
  std::unordered_map<std::string, const ir::Tensor*> known_;
  std::vector<std::unique_ptr<ir::Tensor>> constants_;  // Constant nodes' values, while folding
  // Moved into the graph at the end: owned storage stays where it is when its Tensor moves.
  std::vector<std::pair<std::string, std::unique_ptr<ir::Tensor>>> folded_;
};

// A copy of `graph` without the nodes in `drop`, its initializers borrowing the model's.
std::unique_ptr<ir::Graph> graph_without(const ir::Graph& graph, const std::vector<bool>& drop) {
  auto g = std::make_unique<ir::Graph>();
  g->name = graph.name;
  g->inputs = graph.inputs;
  g->outputs = graph.outputs;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!drop[i]) g->nodes.push_back(graph.nodes[i]);
  }
  for (const ir::Initializer& init : graph.initializers())
    g->add_initializer(init.name, init.tensor.view());
  return g;
}

}  // namespace

ExecGraph fold_constants(const ir::Model& model, Backend& backend, int threads) {
  ExecGraph out;
  out.graph = &model.graph;
  Expected<std::vector<size_t>> order = ir::topological_order(model.graph);
  if (!order) return out;  // the plan names the fault
  Folder folder(model, backend, threads);
  std::vector<bool> drop(model.graph.nodes.size(), false);
  for (size_t i : *order) {
    if (folder.visit(model.graph.nodes[i])) {
      drop[i] = true;
      ++out.folded_nodes;
    }
  }
  if (out.folded_nodes == 0) return out;
  out.owned = graph_without(model.graph, drop);
  for (auto& [name, tensor] : folder.take()) {
    out.folded.push_back(name);
    out.owned->add_initializer(name, std::move(*tensor));
  }
  out.graph = out.owned.get();
  return out;
}

}  // namespace ptq::runtime
