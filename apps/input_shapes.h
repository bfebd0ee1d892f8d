// `ptq quantize --input-shape NAME=D,D,…`: the shapes a user gives the planner, the last of the
// sources calibration::resolve_plan_shapes binds.
#pragma once

#include <string>
#include <vector>

#include "ptq/onnx.h"
#include "ptq/status.h"

namespace ptq::apps {

// --input-shape values: "NAME=1,128", several joined by ';' or the option repeated. Usage
// errors name the value at fault.
Expected<onnx::InputShapes> parse_input_shapes(const std::vector<std::string>& values);

}  // namespace ptq::apps
