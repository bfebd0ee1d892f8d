#include "json_output.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace ptq::apps {

namespace {

// NaN (a bound a TensorRT cache does not record) as null.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

Json calibrated_tensors_json(const calib::CalibrationTable& table) {
  Json tensors = Json::array();
  for (const auto& [name, r] : table.tensors) {
    tensors.push_back({{"name", name},
                       {"min", number(r.min)},
                       {"max", number(r.max)},
                       {"amax", number(r.amax)},
                       {"scale", number(r.scale())},
                       {"method", table.method}});
  }
  return tensors;
}

Json quantized_tensors_json(const planner::QuantizeResult& result, const std::string& method) {
  Json tensors = Json::array();
  for (const planner::QuantizedActivation& a : result.activations) {
    tensors.push_back({{"name", a.tensor},
                       {"min", number(a.range.min)},
                       {"max", number(a.range.max)},
                       {"scale", a.scale},
                       {"zero_point", a.zero_point},
                       {"method", method}});
  }
  return tensors;
}

Json float_set_json(const planner::QuantizeResult& result) {
  Json nodes = Json::array();
  for (const planner::NodePlan& n : result.float_nodes) {
    nodes.push_back({{"name", n.name}, {"op_type", n.op_type}, {"reason", n.reason}});
  }
  Json tensors = Json::array();
  for (const std::string& t : result.float_tensors) {
    tensors.push_back({{"name", t}, {"reason", "no calibrated range"}});
  }
  return {{"nodes", std::move(nodes)}, {"tensors", std::move(tensors)}};
}

Json seconds_json(const PhaseTimes& times) {
  Json seconds = Json::object();
  double total = 0.0;
  for (const auto& [phase, s] : times.phases()) {
    seconds[phase] = s;
    total += s;
  }
  seconds["total"] = total;
  return seconds;
}

void print_json(const Json& report) { fmt::print("{}\n", report.dump(2)); }

}  // namespace ptq::apps
