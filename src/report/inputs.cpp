// Readers of the report's optional inputs: evaluation results and sensitivity sweeps (JSON).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ptq/report.h"

namespace ptq::report {

namespace {

using Json = nlohmann::ordered_json;

Expected<Json> parse(std::string_view text, std::string_view file_name) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return invalid_input("{}: not valid JSON", file_name);
  if (!j.is_object()) return invalid_input("{}: expected a JSON object at the top", file_name);
  return j;
}

bool is_scalar(const Json& v) { return v.is_string() || v.is_number() || v.is_boolean(); }

std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

void add_numbers(const Json& obj, const std::string& prefix,
                 std::vector<std::pair<std::string, double>>& out) {
  for (const auto& [k, v] : obj.items()) {
    if (v.is_number() && !v.is_boolean()) out.emplace_back(prefix + k, v.get<double>());
  }
}

}  // namespace

Expected<EvalResult> parse_eval_json(std::string_view text, std::string_view file_name) {
  PTQ_ASSIGN_OR_RETURN(Json j, parse(text, file_name));
  EvalResult r;
  r.source = std::string(file_name);
  if (auto m = j.find("model"); m != j.end() && m->is_string()) r.model = m->get<std::string>();
  add_numbers(j, "", r.metrics);
  for (const char* key : {"accuracy", "metrics"}) {
    if (auto a = j.find(key); a != j.end() && a->is_object()) add_numbers(*a, "", r.metrics);
  }
  if (r.metrics.empty()) return invalid_input("{}: no numeric results found", file_name);
  return r;
}

Expected<SensitivityReport> parse_sensitivity_json(std::string_view text,
                                                   std::string_view file_name) {
  PTQ_ASSIGN_OR_RETURN(Json j, parse(text, file_name));
  SensitivityReport r;
  r.source = std::string(file_name);
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) {
    return invalid_input("{}: expected a \"layers\" array", file_name);
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    const Json& l = (*layers)[i];
    auto name = l.is_object() ? l.find("name") : l.end();
    auto metric = l.is_object() ? l.find("metric") : l.end();
    if (!l.is_object() || name == l.end() || !name->is_string() || metric == l.end() ||
        !metric->is_number()) {
      return invalid_input("{}: layers[{}] needs a string \"name\" and a numeric \"metric\"",
                           file_name, i);
    }
    SensitivityLayer layer{name->get<std::string>(), metric->get<double>(), {}};
    for (const auto& [k, v] : l.items()) {
      if (k != "name" && k != "metric" && is_scalar(v)) layer.extra.emplace_back(k, scalar_text(v));
    }
    r.layers.push_back(std::move(layer));
  }
  for (const auto& [k, v] : j.items()) {
    if (k == "layers") continue;
    if (k == "metric" && v.is_string()) {
      r.metric = v.get<std::string>();
    } else if ((k == "float_set" || k == "float_layers") && v.is_array()) {
      for (const Json& e : v) {
        if (e.is_string()) r.float_set.push_back(e.get<std::string>());
      }
    } else if (is_scalar(v)) {
      r.info.emplace_back(k, scalar_text(v));
    }
  }
  return r;
}

}  // namespace ptq::report
