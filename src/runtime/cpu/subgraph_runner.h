// Runs one subgraph of a node (If's branch, Loop's or Scan's body) on an executor of its own,
// with the values it reads from the enclosing graphs taken from the node's kernel inputs.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::runtime::cpu {

class SubgraphRunner {
 public:
  // The graph attribute `attr` of ctx.node, prepared once: its own inputs keep their declared
  // element types but not their dims (a loop-carried value may change shape), and each value it
  // reads from outside becomes one more input, fed from the kernel input of that name
  // (ctx.node's inputs, then ir::outer_scope_values(ctx.node)).
  static Expected<std::unique_ptr<SubgraphRunner>> make(const KernelContext& ctx,
                                                        std::string_view attr);

  const ir::Graph& graph() const { return model_->graph; }
  size_t num_inputs() const { return formal_inputs_; }
  size_t num_outputs() const { return model_->graph.outputs.size(); }
  // Runs on `formals` (one per subgraph input, in order) and the outer values found in
  // `node_inputs`; returns the subgraph's outputs in order, owning their bytes.
  Expected<std::vector<ir::Tensor>> run(std::span<const ir::Tensor> formals,
                                        std::span<const ir::Tensor* const> node_inputs);

 private:
  const ir::Node* node_ = nullptr;
  std::unique_ptr<ir::Model> model_;
  std::unique_ptr<Backend> own_backend_;  // when the context names none
  std::unique_ptr<Executor> executor_;
  size_t formal_inputs_ = 0;
  std::vector<std::pair<std::string, size_t>> outer_;  // outer value -> kernel input slot
};

}  // namespace ptq::runtime::cpu
