// `ptq quantize`: the input shapes the planner decides with (as TensorRT's calibration profile
// fixes them). Sources, in order: the batches --data fed, the input shapes a ptqkit JSON cache
// recorded, --input-shape NAME=dims. A TensorRT text cache records none.
#pragma once

#include <string>
#include <vector>

#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"
#include "ptq/status.h"

namespace ptq::apps {

// The input shapes from one source, named for messages ("--data", "cache c.json").
struct ShapeSource {
  std::string label;
  onnx::InputShapes shapes;
  // A name that is no input of the model is an error; when false it is dropped (a cache
  // calibrated for another graph, used with --force).
  bool checked = true;
};

// The shape of a full batch of each input of `dataset` (its first batch; a shorter dataset
// is one batch): what calibration or evaluation feeds, and what planning binds.
onnx::InputShapes fed_shapes(const data::Dataset& dataset);

// --input-shape values: "NAME=1,128", several joined by ';' or the option repeated. Usage
// errors name the value at fault.
Expected<onnx::InputShapes> parse_input_shapes(const std::vector<std::string>& values);

// Sets plan.value_dims so the planner sees concrete dims where its decisions need them: only
// when some decision needs a dim the model leaves open, binds the sources' shapes (a later
// source fills dims an earlier one left open; a disagreement is an error) and re-runs shape
// inference; dims that inference cannot follow are measured by running the model once on zero
// inputs of the bound shapes. Also sets require_shapes and the remedy naming the flags, so a
// dim still open fails planning with one line.
Status resolve_plan_shapes(const ir::Model& model, const std::vector<ShapeSource>& sources,
                           int threads, planner::PlanOptions& plan);

}  // namespace ptq::apps
