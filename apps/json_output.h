// `ptq calibrate --json` and `ptq quantize --json`: one JSON object on stdout for scripts, in
// place of the human summary (warnings and progress stay on stderr):
//   {"command", "written": {role: path}, "method", "tensors": [...], "float": {...}
//    (quantize), "seconds": {phase: s, "total": s}}
// docs/CLI.md lists the fields.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "phase_times.h"
#include "ptq/calib_cache.h"
#include "ptq/planner.h"

namespace ptq::apps {

using Json = nlohmann::ordered_json;

// Calibrated tensors: name, min, max (null when unknown), amax, scale (amax / 127), method.
Json calibrated_tensors_json(const calib::CalibrationTable& table);

// Quantized activations: name, min, max, scale, zero_point, method.
Json quantized_tensors_json(const planner::QuantizeResult& result, const std::string& method);

// What stayed float and why: {"nodes": [{name, op_type, reason}], "tensors": [{name, reason}]}.
Json float_set_json(const planner::QuantizeResult& result);

// {phase: seconds, …, "total": seconds}.
Json seconds_json(const PhaseTimes& times);

// Prints `report` on stdout, indented, with a final newline.
void print_json(const Json& report);

}  // namespace ptq::apps
