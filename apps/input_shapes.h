// `ptq quantize --input-shape NAME=D,D,…` (or trtexec's NAME:DxD…): the shapes a user gives
// the planner, the last of the sources calibration::resolve_plan_shapes binds.
#pragma once

#include <string>
#include <vector>

#include "ptq/onnx.h"
#include "ptq/status.h"

namespace ptq::apps {

// --input-shape values: "NAME=1,128", several joined by ';' or the option repeated; or
// trtexec's "NAME:1x3x224x224", several joined by ','. Usage errors name the value at fault.
Expected<onnx::InputShapes> parse_input_shapes(const std::vector<std::string>& values);

}  // namespace ptq::apps
