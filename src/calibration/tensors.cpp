// Which tensors a calibration run measures, and the identity/provenance it records.
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/version.h"

namespace ptq::calibration {

namespace {

// Every value a node produces or the user feeds whose declared dtype is float or unknown.
std::vector<std::string> all_float_activations(const ir::Model& model) {
  const ir::Graph& g = model.graph;
  std::set<std::string> out;
  auto maybe_float = [&](const std::string& name) {
    if (name.empty() || g.initializer(name) != nullptr) return false;
    const ir::DType t = g.value_dtype(name);
    return t == ir::DType::kUndefined || ir::is_float(t);
  };
  for (const ir::ValueInfo* v : g.real_inputs()) {
    if (maybe_float(v->name)) out.insert(v->name);
  }
  for (const ir::Node& n : g.nodes) {
    for (const std::string& o : n.outputs) {
      if (maybe_float(o)) out.insert(o);
    }
  }
  return {out.begin(), out.end()};
}

}  // namespace

Expected<std::vector<std::string>> calibration_tensors(const ir::Model& model,
                                                       const CalibrationOptions& options) {
  if (options.all_tensors) return all_float_activations(model);
  return planner::quantizable_activations(model, options.plan);
}

calib::ModelIdentity model_identity(const ir::Model& model) {
  calib::ModelIdentity id;
  id.graph_sha256 = onnx::graph_hash(model);
  id.opset = model.opset("");
  for (const ir::ValueInfo* v : model.graph.real_inputs()) {
    std::vector<int64_t> shape;
    if (v->type.dims) {
      for (const ir::Dim& d : *v->type.dims) shape.push_back(d.known() ? d.value : -1);
    }
    id.inputs.emplace_back(v->name, std::move(shape));
  }
  return id;
}

std::string_view ptqkit_version() { return PTQ_VERSION_STRING; }

std::string iso8601_utc(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace ptq::calibration
