// If: runs then_branch or else_branch on an executor of its own (subgraph_runner.h).
#include "kernel_util.h"
#include "subgraph_runner.h"

namespace ptq::runtime::cpu {

namespace {

class IfKernel final : public Kernel {
 public:
  IfKernel(const ir::Node& node, std::unique_ptr<SubgraphRunner> then_branch,
           std::unique_ptr<SubgraphRunner> else_branch)
      : node_(node), then_(std::move(then_branch)), else_(std::move(else_branch)) {}

  Status run(Inputs inputs, Outputs outputs, Allocator& /*alloc*/) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, inputs, 1));
    const ir::Tensor& cond = *inputs[0];
    if (cond.size() != 1) {
      return node_error(node_, "cond has shape {}: one element expected",
                        ir::shape_str(cond.shape()));
    }
    SubgraphRunner& branch = cond.as_double(0) != 0.0 ? *then_ : *else_;
    PTQ_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, branch.run({}, inputs));
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(results[i]);
    return Status::ok();
  }

 private:
  const ir::Node& node_;
  std::unique_ptr<SubgraphRunner> then_;
  std::unique_ptr<SubgraphRunner> else_;
};

Status check_branch(const ir::Node& node, const SubgraphRunner& branch, const char* name) {
  if (branch.num_inputs() != 0) {
    return node_error(node, "{} takes {} inputs; an If branch takes none", name,
                      branch.num_inputs());
  }
  if (branch.num_outputs() != node.outputs.size()) {
    return node_error(node, "{} has {} outputs but the If has {}", name, branch.num_outputs(),
                      node.outputs.size());
  }
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_if(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(auto then_branch, SubgraphRunner::make(ctx, "then_branch"));
  PTQ_ASSIGN_OR_RETURN(auto else_branch, SubgraphRunner::make(ctx, "else_branch"));
  PTQ_RETURN_IF_ERROR(check_branch(ctx.node, *then_branch, "then_branch"));
  PTQ_RETURN_IF_ERROR(check_branch(ctx.node, *else_branch, "else_branch"));
  return std::unique_ptr<Kernel>(
      std::make_unique<IfKernel>(ctx.node, std::move(then_branch), std::move(else_branch)));
}

}  // namespace ptq::runtime::cpu
