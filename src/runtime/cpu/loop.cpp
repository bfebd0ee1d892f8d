// Loop: runs its body on an executor of its own (subgraph_runner.h) while the trip count and
// the condition allow; loop-carried values feed the next iteration, scan outputs are stacked.
#include <limits>

#include "kernel_util.h"
#include "scan_slices.h"
#include "subgraph_runner.h"

namespace ptq::runtime::cpu {

namespace {

class LoopKernel final : public Kernel {
 public:
  LoopKernel(const ir::Node& node, std::unique_ptr<SubgraphRunner> body)
      : node_(node), body_(std::move(body)), carried_(node.inputs.size() - 2) {}

  Status run(Inputs inputs, Outputs outputs, Allocator& /*alloc*/) override {
    const ir::Tensor* trips = input_or_null(inputs, 0);
    const ir::Tensor* cond_in = input_or_null(inputs, 1);
    if (trips == nullptr && cond_in == nullptr) {
      return node_error(node_, "has neither a trip count nor a condition: it would never end");
    }
    PTQ_RETURN_IF_ERROR(check_scalar(trips, "trip count M"));
    PTQ_RETURN_IF_ERROR(check_scalar(cond_in, "cond"));
    const int64_t max_trips =
        trips != nullptr ? trips->as_int64(0) : std::numeric_limits<int64_t>::max();
    bool cond = cond_in == nullptr || cond_in->as_double(0) != 0.0;
    std::vector<ir::Tensor> state(carried_);
    for (size_t j = 0; j < carried_; ++j) {
      const ir::Tensor* initial = input_or_null(inputs, 2 + j);
      if (initial == nullptr) return node_error(node_, "input {} is missing", 2 + j);
      state[j] = initial->view();
    }
    const size_t scans = outputs.size() - carried_;
    std::vector<std::vector<ir::Tensor>> scanned(scans);
    for (int64_t i = 0; i < max_trips && cond; ++i) {
      std::vector<ir::Tensor> formals;
      formals.push_back(ir::make_tensor<int64_t>({}, {i}));
      formals.push_back(ir::make_tensor<bool>({}, {cond}));
      for (ir::Tensor& s : state) formals.push_back(std::move(s));
      PTQ_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, body_->run(formals, inputs));
      if (cond_in != nullptr) {
        PTQ_RETURN_IF_ERROR(check_scalar(&results[0], "the body's condition output"));
        cond = results[0].as_double(0) != 0.0;
      }
      for (size_t j = 0; j < carried_; ++j) state[j] = std::move(results[1 + j]);
      for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(results[1 + carried_ + k]));
    }
    for (size_t j = 0; j < carried_; ++j) outputs[j] = std::move(state[j]);
    for (size_t k = 0; k < scans; ++k) {
      const size_t out = 1 + carried_ + k;
      if (scanned[k].empty()) {
        outputs[carried_ + k] = empty_scan(body_->graph().outputs[out]);
        continue;
      }
      const std::string what = fmt::format("{}: scan output '{}'", node_.label(),
                                           body_->graph().outputs[out].name);
      PTQ_ASSIGN_OR_RETURN(outputs[carried_ + k], stack(scanned[k], 0, false, what));
    }
    return Status::ok();
  }

 private:
  Status check_scalar(const ir::Tensor* t, const char* what) const {
    if (t == nullptr || t->size() == 1) return Status::ok();
    return node_error(node_, "{} has shape {}: one element expected", what,
                      ir::shape_str(t->shape()));
  }

  // No iteration ran: [0, dims...] where the body declares every dim, else [0].
  static ir::Tensor empty_scan(const ir::ValueInfo& declared) {
    ir::Shape shape{0};
    if (std::optional<ir::Shape> dims = declared.type.concrete()) {
      shape.insert(shape.end(), dims->begin(), dims->end());
    }
    const ir::DType dtype = declared.type.dtype == ir::DType::kUndefined ? ir::DType::kFloat32
                                                                         : declared.type.dtype;
    return ir::Tensor(dtype, shape);
  }

  const ir::Node& node_;
  std::unique_ptr<SubgraphRunner> body_;
  size_t carried_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_loop(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  if (node.inputs.size() < 2)
    return node_error(node, "needs inputs M and cond (either may be \"\")");
  PTQ_ASSIGN_OR_RETURN(auto body, SubgraphRunner::make(ctx, "body"));
  const size_t carried = node.inputs.size() - 2;
  if (body->num_inputs() != 2 + carried) {
    return node_error(node, "its body takes {} inputs but the Loop's {} loop-carried values need "
                      "{} (iteration number, condition, then those)", body->num_inputs(),
                      carried, 2 + carried);
  }
  if (node.outputs.size() < carried || body->num_outputs() != 1 + node.outputs.size()) {
    return node_error(node, "its body gives {} outputs but the Loop's {} outputs ({} loop-carried) "
                      "need {} (the condition, then those)", body->num_outputs(),
                      node.outputs.size(), carried, 1 + node.outputs.size());
  }
  return std::unique_ptr<Kernel>(std::make_unique<LoopKernel>(node, std::move(body)));
}

}  // namespace ptq::runtime::cpu
