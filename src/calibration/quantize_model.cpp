// The steps around planner::quantize that every front end takes in the same order (`ptq
// quantize`, the Python module's quantize_static): the model made plannable, then planned
// with concrete shapes, quantized, its clipped ranges reported and the result checked.
#include <fmt/format.h>

#include <algorithm>

#include "ptq/calibration.h"
#include "ptq/report.h"

namespace ptq::calibration {

namespace {

int64_t count_op(const ir::Model& model, std::string_view op) {
  return std::count_if(model.graph.nodes.begin(), model.graph.nodes.end(),
                       [&](const ir::Node& n) { return n.op_type == op; });
}

}  // namespace

Status prepare_for_planning(ir::Model& model, std::string_view name, bool requantize,
                            ModelForms& forms, std::vector<std::string>& notes) {
  if (planner::has_quantization(model)) {
    if (!requantize) {
      return invalid_input(
          "{} is already quantized ({} QuantizeLinear, {} DequantizeLinear); "
          "--requantize strips its Q/DQ and quantizes it again",
          name, count_op(model, "QuantizeLinear"), count_op(model, "DequantizeLinear"));
    }
    PTQ_ASSIGN_OR_RETURN(int64_t removed, planner::strip_qdq(model));
    notes.push_back(
        fmt::format("--requantize: removed {} quantization node(s) from {}", removed, name));
    forms.add(model);
  }
  const int64_t opset = model.opset();
  if (opset < 13 && !planner::check_opset_upgradable(model).is_ok()) {
    PTQ_RETURN_IF_ERROR(onnx::convert_opset(model, 13));
    notes.push_back(
        fmt::format("converted {} from opset {} to 13 (libonnx version converter)", name, opset));
    forms.add(model);
  }
  return Status::ok();
}

Expected<planner::QuantizeResult> quantize_model(ir::Model& model,
                                                 const calib::CalibrationTable& table,
                                                 const std::vector<ShapeSource>& shapes,
                                                 runtime::Backend& backend, int threads,
                                                 planner::PlanOptions plan) {
  plan.method = table.method;
  plan.cache_hash = onnx::sha256_hex(calib::json_cache_string(table));
  PTQ_RETURN_IF_ERROR(resolve_plan_shapes(model, shapes, backend, threads, plan));
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult result, planner::quantize(model, table, plan));
  for (std::string& w : report::clipping_warnings(model, table)) {
    result.warnings.push_back(std::move(w));
  }
  if (Status s = onnx::check_model(model); !s.is_ok()) {
    return runtime_error("the quantized model fails the ONNX check (a ptqkit bug): {}",
                         s.message());
  }
  return result;
}

}  // namespace ptq::calibration
