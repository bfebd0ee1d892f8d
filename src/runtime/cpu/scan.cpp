// Scan: runs its body on an executor of its own (subgraph_runner.h) once per slice of the scan
// inputs; states feed the next iteration, scan outputs are stacked. Opset 8's form (a batch
// axis first, optional sequence_lens) runs the opset-9 form on each batch item.
#include "kernel_util.h"
#include "scan_slices.h"
#include "subgraph_runner.h"

namespace ptq::runtime::cpu {

namespace {

struct ScanAxes {
  std::vector<int64_t> in_axes, in_reversed, out_axes, out_reversed;
};

class ScanKernel final : public Kernel {
 public:
  ScanKernel(const ir::Node& node, std::unique_ptr<SubgraphRunner> body, size_t scan_inputs,
             ScanAxes axes, bool batched)
      : node_(node), body_(std::move(body)), scan_inputs_(scan_inputs), axes_(std::move(axes)),
        batched_(batched) {}

  Status run(Inputs inputs, Outputs outputs, Allocator& /*alloc*/) override {
    const size_t first = batched_ ? 1 : 0;  // opset 8's sequence_lens comes first
    const size_t given = node_.inputs.size() - first;
    PTQ_RETURN_IF_ERROR(require_inputs(node_, inputs.subspan(first), given));
    std::vector<ir::Tensor> values;
    for (size_t i = 0; i < given; ++i) values.push_back(inputs[first + i]->view());
    std::vector<ir::Tensor> results;
    if (batched_) {
      PTQ_ASSIGN_OR_RETURN(results, run_batched(values, input_or_null(inputs, 0), inputs));
    } else {
      PTQ_ASSIGN_OR_RETURN(results, run_scan(values, inputs));
    }
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(results[i]);
    return Status::ok();
  }

 private:
  size_t states() const { return body_->num_inputs() - scan_inputs_; }

  // Opset 9 on one set of values: states first, then scan inputs.
  Expected<std::vector<ir::Tensor>> run_scan(std::vector<ir::Tensor> values, Inputs inputs) {
    const size_t n = states();
    PTQ_ASSIGN_OR_RETURN(int64_t length, sequence_length(values));
    const size_t outs = body_->num_outputs() - n;
    std::vector<std::vector<ir::Tensor>> scanned(outs);
    std::vector<ir::Tensor> formals(values.size());
    for (size_t j = 0; j < n; ++j) formals[j] = std::move(values[j]);
    for (int64_t t = 0; t < length; ++t) {
      for (size_t j = 0; j < scan_inputs_; ++j) {
        const int64_t at = axes_.in_reversed[j] ? length - 1 - t : t;
        formals[n + j] = slice_at(values[n + j], axes_.in_axes[j], at);
      }
      PTQ_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, body_->run(formals, inputs));
      for (size_t j = 0; j < n; ++j) formals[j] = std::move(results[j]);
      for (size_t k = 0; k < outs; ++k) scanned[k].push_back(std::move(results[n + k]));
    }
    std::vector<ir::Tensor> results;
    for (size_t j = 0; j < n; ++j) results.push_back(std::move(formals[j]));
    for (size_t k = 0; k < outs; ++k) {
      if (scanned[k].empty()) {
        return node_error(node_, "the scan axis has length 0: scan outputs have no shape");
      }
      const int64_t rank = scanned[k][0].rank() + 1;
      PTQ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node_, axes_.out_axes[k], rank));
      const std::string what = fmt::format("{}: scan output '{}'", node_.label(),
                                           body_->graph().outputs[n + k].name);
      PTQ_ASSIGN_OR_RETURN(ir::Tensor stacked,
                           stack(scanned[k], axis, axes_.out_reversed[k] != 0, what));
      results.push_back(std::move(stacked));
    }
    return results;
  }

  // The common length of the scan inputs along their axes (normalised here).
  Expected<int64_t> sequence_length(const std::vector<ir::Tensor>& values) {
    int64_t length = -1;
    for (size_t j = 0; j < scan_inputs_; ++j) {
      const ir::Tensor& t = values[states() + j];
      PTQ_ASSIGN_OR_RETURN(axes_.in_axes[j], normalize_axis(node_, axes_.in_axes[j], t.rank()));
      const int64_t len = t.dim(axes_.in_axes[j]);
      if (length >= 0 && len != length) {
        return node_error(node_, "scan input {} has length {} on its scan axis, scan input 0 {}",
                          j, len, length);
      }
      length = len;
    }
    return length;
  }

  // Opset 8: every value has a batch axis 0; each item is scanned alone, results restacked.
  Expected<std::vector<ir::Tensor>> run_batched(const std::vector<ir::Tensor>& values,
                                                const ir::Tensor* lens, Inputs inputs) {
    const int64_t batch = values.front().rank() > 0 ? values.front().dim(0) : 0;
    std::vector<std::vector<ir::Tensor>> per_output(body_->num_outputs());
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<ir::Tensor> item;
      for (const ir::Tensor& v : values) {
        if (v.rank() == 0 || v.dim(0) != batch) {
          return node_error(node_, "inputs have different batch sizes ({} and {})", batch,
                            v.rank() == 0 ? 0 : v.dim(0));
        }
        item.push_back(slice_at(v, 0, b));
      }
      PTQ_RETURN_IF_ERROR(check_length(lens, b, item));
      PTQ_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, run_scan(std::move(item), inputs));
      for (size_t k = 0; k < results.size(); ++k) per_output[k].push_back(std::move(results[k]));
    }
    std::vector<ir::Tensor> results;
    for (size_t k = 0; k < per_output.size(); ++k) {
      if (per_output[k].empty()) return node_error(node_, "the batch is empty");
      const std::string what = fmt::format("{}: output {}", node_.label(), k);
      PTQ_ASSIGN_OR_RETURN(ir::Tensor stacked, stack(per_output[k], 0, false, what));
      results.push_back(std::move(stacked));
    }
    return results;
  }

  // Sequences shorter than the scan axis would need padded outputs: refused.
  Status check_length(const ir::Tensor* lens, int64_t b, const std::vector<ir::Tensor>& item) {
    if (lens == nullptr || scan_inputs_ == 0) return Status::ok();
    const ir::Tensor& first_scan = item[states()];
    if (b < lens->size() && lens->as_int64(b) == first_scan.dim(0)) return Status::ok();
    return node_error(node_, "sequence_lens[{}] differs from the scan length {}: only full-length "
                      "sequences are supported", b, first_scan.dim(0));
  }

  const ir::Node& node_;
  std::unique_ptr<SubgraphRunner> body_;
  size_t scan_inputs_;
  ScanAxes axes_;
  bool batched_;
};

std::vector<int64_t> attr_or_zeros(const ir::Node& node, const char* name, size_t n) {
  std::vector<int64_t> v = node.attr_ints(name, {});
  if (v.empty()) v.assign(n, 0);
  return v;
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_scan(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool batched = ctx.opset < 9;
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  PTQ_ASSIGN_OR_RETURN(auto body, SubgraphRunner::make(ctx, "body"));
  const size_t given = node.inputs.size() - (batched ? 1 : 0);
  if (m < 1 || static_cast<size_t>(m) > given) {
    return node_error(node, "num_scan_inputs is {} but the Scan has {} state and scan inputs", m,
                      given);
  }
  const auto scans = static_cast<size_t>(m);
  const size_t states = given - scans;
  if (body->num_inputs() != given || body->num_outputs() != node.outputs.size() ||
      node.outputs.size() < states) {
    return node_error(node, "its body takes {} inputs and gives {} outputs, but the Scan's {} "
                      "states, {} scan inputs and {} outputs need {} and {}", body->num_inputs(),
                      body->num_outputs(), states, scans, node.outputs.size(), given,
                      node.outputs.size());
  }
  const size_t outs = node.outputs.size() - states;
  ScanAxes axes;
  axes.in_axes = attr_or_zeros(node, "scan_input_axes", scans);
  axes.in_reversed = attr_or_zeros(node, batched ? "directions" : "scan_input_directions", scans);
  axes.out_axes = attr_or_zeros(node, "scan_output_axes", outs);
  axes.out_reversed = attr_or_zeros(node, "scan_output_directions", outs);
  if (axes.in_axes.size() != scans || axes.in_reversed.size() != scans ||
      axes.out_axes.size() != outs || axes.out_reversed.size() != outs) {
    return node_error(node, "scan axes and directions must list one entry per scan input ({}) "
                      "and scan output ({})", scans, outs);
  }
  return std::unique_ptr<Kernel>(
      std::make_unique<ScanKernel>(node, std::move(body), scans, std::move(axes), batched));
}

}  // namespace ptq::runtime::cpu
