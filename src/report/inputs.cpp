// Readers of the report's optional inputs: evaluation results, sensitivity sweeps and error
// traces (JSON).
#include <fmt/format.h>

#include <limits>

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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A metric as `ptq compare` writes it: a number, or "inf", "-inf", "nan" (JSON has none).
std::optional<double> metric_value(const Json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return kNaN;
  return std::nullopt;
}

std::string string_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

double metric_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? kNaN : metric_value(*it).value_or(kNaN);
}

bool bool_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
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

Expected<ErrorTrace> parse_trace_json(std::string_view text, std::string_view file_name) {
  PTQ_ASSIGN_OR_RETURN(Json j, parse(text, file_name));
  auto tensors = j.find("tensors");
  if (tensors == j.end() || !tensors->is_array()) {
    return invalid_input("{}: expected a \"tensors\" array (ptq compare --per-tensor --json)",
                         file_name);
  }
  ErrorTrace r{std::string(file_name), string_field(j, "model_a"), string_field(j, "model_b"),
               metric_field(j, "jump_db"), {}};
  for (size_t i = 0; i < tensors->size(); ++i) {
    const Json& t = (*tensors)[i];
    auto name = t.is_object() ? t.find("name") : t.end();
    auto sqnr = t.is_object() ? t.find("sqnr_db") : t.end();
    if (!t.is_object() || name == t.end() || !name->is_string() || sqnr == t.end() ||
        !metric_value(*sqnr)) {
      return invalid_input("{}: tensors[{}] needs a string \"name\" and an \"sqnr_db\"",
                           file_name, i);
    }
    r.tensors.push_back({name->get<std::string>(), string_field(t, "op_type"),
                         *metric_value(*sqnr), metric_field(t, "cosine"),
                         metric_field(t, "drop_db"), bool_field(t, "jump"),
                         bool_field(t, "dequantized")});
  }
  return r;
}

}  // namespace ptq::report
