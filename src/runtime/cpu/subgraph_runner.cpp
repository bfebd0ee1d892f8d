#include "subgraph_runner.h"

#include <algorithm>

#include "ptq/ir/subgraph.h"
#include "ptq/runtime/op_attrs.h"

namespace ptq::runtime::cpu {

namespace {

// The subgraph as a model of its own: its inputs without dims, then one input per outer value.
std::unique_ptr<ir::Model> closed_model(const ir::Graph& body, int64_t opset,
                                        const std::vector<std::string>& outer) {
  auto model = std::make_unique<ir::Model>();
  model->set_opset("", opset);
  model->graph = body;
  for (ir::ValueInfo& in : model->graph.inputs) in.type.dims.reset();
  for (const std::string& name : outer) model->graph.inputs.push_back(ir::ValueInfo{name, {}, {}});
  return model;
}

// Kernel input slot of every name the node's kernel is given.
size_t slot_of(const ir::Node& node, const std::vector<std::string>& implicit,
               const std::string& name) {
  auto it = std::find(node.inputs.begin(), node.inputs.end(), name);
  if (it != node.inputs.end()) return static_cast<size_t>(it - node.inputs.begin());
  auto jt = std::find(implicit.begin(), implicit.end(), name);
  return node.inputs.size() + static_cast<size_t>(jt - implicit.begin());
}

}  // namespace

Expected<std::unique_ptr<SubgraphRunner>> SubgraphRunner::make(const KernelContext& ctx,
                                                               std::string_view attr) {
  const ir::Attribute* a = ctx.node.attr(attr);
  if (a == nullptr || a->g == nullptr) {
    return node_error(ctx.node, "has no graph attribute '{}'", attr);
  }
  auto runner = std::make_unique<SubgraphRunner>();
  runner->node_ = &ctx.node;
  const std::vector<std::string> outer = ir::outer_scope_values(*a->g);
  const std::vector<std::string> implicit = ir::outer_scope_values(ctx.node);
  runner->model_ = closed_model(*a->g, ctx.opset, outer);
  runner->formal_inputs_ = a->g->inputs.size();
  for (const std::string& name : outer) {
    runner->outer_.emplace_back(name, slot_of(ctx.node, implicit, name));
  }
  Backend* backend = ctx.backend;
  if (backend == nullptr) {
    runner->own_backend_ = make_cpu_backend({.reference = ctx.reference, .winograd = ctx.winograd});
    backend = runner->own_backend_.get();
  }
  ExecutorOptions options;
  options.threads = ctx.threads;
  auto executor = Executor::create(*runner->model_, *backend, options);
  if (!executor) {
    return node_error(ctx.node, "subgraph '{}': {}", attr, executor.status().message());
  }
  runner->executor_ = std::move(*executor);
  return runner;
}

Expected<std::vector<ir::Tensor>> SubgraphRunner::run(
    std::span<const ir::Tensor> formals, std::span<const ir::Tensor* const> node_inputs) {
  const ir::Graph& g = model_->graph;
  NamedTensors feed;
  feed.reserve(formals.size() + outer_.size());
  for (size_t i = 0; i < formals.size(); ++i)
    feed.emplace_back(g.inputs[i].name, formals[i].view());
  for (const auto& [name, slot] : outer_) {
    if (slot >= node_inputs.size() || node_inputs[slot] == nullptr) {
      return node_error(*node_, "its subgraph reads '{}' from the enclosing graph, which was not "
                        "given to the kernel", name);
    }
    feed.emplace_back(name, node_inputs[slot]->view());
  }
  auto outputs = executor_->run(feed);
  if (!outputs) return node_error(*node_, "subgraph: {}", outputs.status().message());
  std::vector<ir::Tensor> result;
  result.reserve(outputs->size());
  for (auto& [name, t] : *outputs) result.push_back(std::move(t));
  return result;
}

}  // namespace ptq::runtime::cpu
