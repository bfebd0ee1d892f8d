// ONNX Runtime's calibration files, read because users have them and written on request:
// calibration.cache ("name amax" lines, no header) and calibration.json ({name: [min, max]} or
// the TensorsData encoding of onnxruntime/quantization/calibrate.py).
#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "ptq/calib_cache.h"
#include "json_text.h"
#include "method_names.h"
#include "text_util.h"

namespace ptq::calib {

using nlohmann::json;

namespace {

// The [lowest, highest] written for a tensor: what was seen for min-max tables, else the
// symmetric range the table's method chose.
std::pair<double, double> ort_range(const CalibrationTable& table, const TensorRange& r) {
  if (table.method == "minmax" && std::isfinite(r.min) && std::isfinite(r.max))
    return {r.min, r.max};
  return {-r.amax, r.amax};
}

std::string ort_method(std::string_view method) {
  const detail::MethodNames* names = detail::method_names(method);
  // A method ORT lacks (mse) is written as MinMax: ORT reads lowest/highest anyway.
  const std::string_view ort = names != nullptr && !names->ort.empty() ? names->ort : "MinMax";
  return fmt::format("CalibrationMethod.{}", ort);
}

std::string method_of(std::string_view ort) {
  for (const detail::MethodNames& m : detail::kMethodNames) {
    if (!m.ort.empty() && ort.ends_with(fmt::format(".{}", m.ort))) return std::string(m.method);
  }
  return "unknown";
}

TensorRange from_min_max(double lo, double hi) {
  TensorRange r;
  r.min = lo;
  r.max = hi;
  r.amax = std::max(std::fabs(lo), std::fabs(hi));
  return r;
}

}  // namespace

std::string ort_text_string(const CalibrationTable& table) {
  std::string out;
  for (const auto& [name, r] : table.tensors) out += fmt::format("{} {}\n", name, r.amax);
  return out;
}

Expected<CalibrationTable> parse_ort_text(std::string_view text, std::string_view file,
                                          Warnings* warnings) {
  CalibrationTable table;
  table.method = "unknown";
  const std::vector<std::string_view> lines = detail::split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (detail::is_blank(line)) continue;
    const size_t sep = line.rfind(' ');
    double v = 0.0;
    bool ok = sep != std::string_view::npos && sep > 0;
    if (ok) {
      const std::string_view num = line.substr(sep + 1);
      auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      ok = !num.empty() && ec == std::errc() && ptr == num.data() + num.size();
    }
    if (!ok) {
      return invalid_input("{}:{}: malformed entry '{}' (expected '<tensor name> <decimal amax>')",
                           file, i + 1, line);
    }
    const std::string name(line.substr(0, sep));
    if (!std::isfinite(v)) {
      if (warnings)
        warnings->push_back(
            fmt::format("{}:{}: tensor '{}' has range {}: skipped", file, i + 1, name, v));
      continue;
    }
    if (v < 0.0 && warnings) {
      warnings->push_back(fmt::format("{}:{}: tensor '{}' has negative range {}: using |{}|", file,
                                      i + 1, name, v, v));
    }
    TensorRange r;
    r.amax = std::fabs(v);
    r.min = r.max = std::numeric_limits<double>::quiet_NaN();
    table.tensors[name] = r;
  }
  return table;
}

std::string ort_json_string(const CalibrationTable& table, OrtJsonStyle style) {
  json data = json::object();
  for (const auto& [name, r] : table.tensors) {
    const auto [lo, hi] = ort_range(table, r);
    if (style == OrtJsonStyle::kMinMax) {
      data[name] = json::array({lo, hi});
    } else {
      auto array = [](double v) {
        return json{{"CLS", "numpy.array"}, {"data", v}, {"dtype", "float32"}};
      };
      data[name] = {{"CLS", "TensorData"}, {"lowest", array(lo)}, {"highest", array(hi)}};
    }
  }
  if (style == OrtJsonStyle::kMinMax)
    return data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  json top = {
      {"CLS", "TensorsData"},
      {"calibration_method", {{"CLS", "CalibrationMethod"}, {"value", ort_method(table.method)}}},
      {"data", data}};
  return top.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// A float as ORT encodes it: a number, or {"CLS": "numpy.array", "data": x | [x] | [[x]]}.
std::optional<double> ort_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.contains("data")) return ort_number(v["data"]);
  if (v.is_array() && v.size() == 1) return ort_number(v[0]);
  return std::nullopt;
}

}  // namespace

Expected<CalibrationTable> parse_ort_json(std::string_view text, std::string_view file,
                                          Warnings* warnings) {
  PTQ_ASSIGN_OR_RETURN(json top, detail::parse_json_text(text, file));
  CalibrationTable table;
  table.method = "minmax";
  const json* data = &top;
  auto cls = top.is_object() ? top.find("CLS") : top.end();
  if (cls != top.end() && cls->is_string() && *cls == "TensorsData") {
    if (!top.contains("data") || !top["data"].is_object()) {
      return invalid_input("{}:1: TensorsData without a \"data\" object", file);
    }
    data = &top["data"];
    if (auto m = top.find("calibration_method"); m != top.end() && m->is_object()) {
      auto value = m->find("value");
      if (value != m->end() && value->is_string())
        table.method = method_of(value->get<std::string>());
    }
  }
  if (!data->is_object())
    return invalid_input("{}:1: expected a JSON object of tensor ranges", file);
  for (const auto& [name, v] : data->items()) {
    std::optional<double> lo, hi;
    if (v.is_array() && v.size() == 2) {
      lo = ort_number(v[0]);
      hi = ort_number(v[1]);
    } else if (v.is_object() && v.contains("lowest") && v.contains("highest")) {
      lo = ort_number(v["lowest"]);
      hi = ort_number(v["highest"]);
    }
    if (!lo || !hi) {
      const size_t at = text.find(json(name).dump());
      return invalid_input(
          "{}:{}: tensor '{}': expected [min, max] or {{\"lowest\", \"highest\"}}", file,
          detail::line_of_offset(text, at == std::string_view::npos ? 0 : at), name);
    }
    if (!std::isfinite(*lo) || !std::isfinite(*hi)) {
      if (warnings)
        warnings->push_back(
            fmt::format("{}: tensor '{}' has a non-finite range: skipped", file, name));
      continue;
    }
    table.tensors[name] = from_min_max(*lo, *hi);
  }
  return table;
}

}  // namespace ptq::calib
