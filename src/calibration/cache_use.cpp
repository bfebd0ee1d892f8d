// Reusing a calibration cache: which model it was calibrated for, and how its tensors fit the
// activations a plan quantizes (see calibration.h, "reusing a cache").
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ptq/calibration.h"
#include "ptq/onnx.h"

namespace ptq::calibration {

namespace {

// Every value name of the graph (inputs, initializers, node outputs).
std::set<std::string> value_names(const ir::Graph& g) {
  std::set<std::string> names;
  for (const ir::ValueInfo& v : g.inputs) names.insert(v.name);
  for (const ir::Initializer& i : g.initializers()) names.insert(i.name);
  for (const ir::Node& n : g.nodes) names.insert(n.outputs.begin(), n.outputs.end());
  return names;
}

// The fit warnings of `table` against the activations `plan` quantizes in `model`.
Expected<calib::Warnings> fit_warnings(const ir::Model& model, const calib::CalibrationTable& table,
                                       const planner::PlanOptions& plan, const ModelForms& forms,
                                       const std::string& file) {
  PTQ_ASSIGN_OR_RETURN(std::vector<std::string> expected,
                       planner::quantizable_activations(model, plan));
  calib::ModelCheck check = calib::check_model(table, forms.latest_hash(), expected);
  check.hash_matches = true;  // settled by the identity check
  const std::set<std::string> values = value_names(model.graph);
  std::erase_if(check.extra, [&](const std::string& t) { return values.count(t) != 0; });
  calib::Warnings out;
  for (const std::string& w : calib::describe(check)) out.push_back(fmt::format("{}: {}", file, w));
  return out;
}

}  // namespace

ModelForms::ModelForms(const ir::Model& given) {
  graph_hashes_.push_back(onnx::graph_hash(given));
  if (const std::string* h = given.metadata("ptqkit.cache_hash")) cache_hash_ = *h;
}

void ModelForms::add(const ir::Model& form) { graph_hashes_.push_back(onnx::graph_hash(form)); }

bool ModelForms::matches(const calib::CalibrationTable& table) const {
  const std::string& recorded = table.model.graph_sha256;
  if (std::find(graph_hashes_.begin(), graph_hashes_.end(), recorded) != graph_hashes_.end()) {
    return true;
  }
  return !cache_hash_.empty() &&
         cache_hash_ == onnx::sha256_hex(calib::json_cache_string(table));
}

Expected<AcceptedCache> read_cache_for(const ir::Model& model, const ModelForms& forms,
                                       const std::filesystem::path& path, const CacheUse& use) {
  AcceptedCache out;
  const std::string file = path.string();
  PTQ_ASSIGN_OR_RETURN(out.table, calib::read_cache(path, &out.warnings));
  if (!forms.matches(out.table)) {
    PTQ_RETURN_IF_ERROR(calib::require_same_model(out.table, forms.given_hash(), file, use.force));
    if (!out.table.model.graph_sha256.empty()) {
      out.warnings.push_back(fmt::format("--force: using {}, calibrated for another graph", file));
    }
  }
  if (use.settings != nullptr) {
    PTQ_ASSIGN_OR_RETURN(calib::Warnings adopted,
                         adopt_settings(out.table, file, use.given, use.force, *use.settings));
    out.warnings.insert(out.warnings.end(), adopted.begin(), adopted.end());
  }
  const planner::PlanOptions* plan = use.settings != nullptr ? &use.settings->plan : use.plan;
  if (plan != nullptr) {
    PTQ_ASSIGN_OR_RETURN(calib::Warnings fit, fit_warnings(model, out.table, *plan, forms, file));
    out.warnings.insert(out.warnings.end(), fit.begin(), fit.end());
  }
  return out;
}

}  // namespace ptq::calibration
