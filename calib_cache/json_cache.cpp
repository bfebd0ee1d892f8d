// The ptqkit JSON cache: the complete record (model identity, run, per-tensor statistics and
// raw histograms). Layout in docs/CACHE_FORMAT.md. Bytes are deterministic: keys sorted, one
// tensor per line, floats in nlohmann's shortest round-trip form (read back bit-exactly).
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "ptq/calib_cache.h"
#include "ptq/util/atomic_file.h"
#include "json_text.h"
#include "text_util.h"

namespace ptq::calib {

using nlohmann::json;

namespace {

constexpr std::string_view kFormat = "ptqkit-calibration";
constexpr int kVersion = 1;
constexpr int kBins = 2048;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json tensor_json(const TensorRange& r) {
  json t = json::object();
  t["amax"] = r.amax;
  t["scale"] = r.scale();
  t["min"] = number_or_null(r.min);
  t["max"] = number_or_null(r.max);
  t["count"] = r.count;
  t["nonfinite"] = r.nonfinite;
  if (r.has_histogram()) {
    json counts = json::array();
    for (size_t b = 0; b < r.histogram.size(); ++b) {
      if (r.histogram[b] != 0) counts.push_back(json::array({b, r.histogram[b]}));
    }
    t["histogram"] = {{"range", r.hist_max}, {"bins", r.histogram.size()}, {"counts", counts}};
  }
  return t;
}

json smoothquant_json(const SmoothQuantRecord& r) {
  json factors = json::object();
  for (const auto& [name, f] : r.factors) factors[name] = f;
  return {{"alpha", r.alpha}, {"factors", factors}};
}

json header_json(const CalibrationTable& table) {
  json inputs = json::array();
  for (const auto& [name, shape] : table.model.inputs) {
    inputs.push_back({{"name", name}, {"shape", shape}});
  }
  json params = json::object();
  for (const auto& [k, v] : table.method_params) params[k] = v;
  json provenance = json::object();
  for (const auto& [k, v] : table.provenance) provenance[k] = v;
  json top = {
      {"format", kFormat},
      {"version", kVersion},
      {"model", {{"graph_sha256", table.model.graph_sha256}, {"opset", table.model.opset},
                 {"inputs", inputs}}},
      {"calibration", {{"method", table.method}, {"params", params},
                       {"samples", table.run.samples}, {"batch", table.run.batch},
                       {"backend", table.run.backend}, {"ptqkit_version", table.run.ptqkit_version},
                       {"date", table.run.date}, {"ignore_nonfinite", table.run.ignore_nonfinite},
                       {"histogram_bins", kBins}}},
      {"provenance", provenance},
  };
  if (table.smoothquant) top["smoothquant"] = smoothquant_json(*table.smoothquant);
  // Written only when present, so caches without them keep their bytes.
  if (!table.options.empty()) top["options"] = table.options;
  if (!table.bias_corrections.empty()) top["bias_corrections"] = table.bias_corrections;
  return top;
}

}  // namespace

std::string json_cache_string(const CalibrationTable& table) {
  // The top level and "tensors" are spread over lines; everything below is compact.
  json top = header_json(table);
  top["tensors"] = json::object();
  std::string out = "{\n";
  bool first_key = true;
  for (const auto& [key, value] : top.items()) {
    out += first_key ? "" : ",\n";
    first_key = false;
    out += "  " + dump(json(key)) + ": ";
    if (key != "tensors") {
      out += dump(value);
      continue;
    }
    if (table.tensors.empty()) {
      out += "{}";
      continue;
    }
    out += "{\n";
    bool first = true;
    for (const auto& [name, r] : table.tensors) {
      out += first ? "" : ",\n";
      first = false;
      out += "    " + dump(json(name)) + ": " + dump(tensor_json(r));
    }
    out += "\n  }";
  }
  out += "\n}\n";
  return out;
}

Status write_json_cache(const CalibrationTable& table, const std::filesystem::path& path) {
  return util::write_file_atomic(path, json_cache_string(table));
}

// ---- reading --------------------------------------------------------------------------------

namespace {

// Validating reader: every error names the file and the line of the offending entry.
class JsonReader {
 public:
  JsonReader(std::string_view text, std::string_view file) : text_(text), file_(file) {
    tensors_at_ = text_.find("\"tensors\"");
    if (tensors_at_ == std::string_view::npos) tensors_at_ = 0;
  }

  template <typename... Args>
  Status error(std::string_view anchor, fmt::format_string<Args...> f, Args&&... args) const {
    return invalid_input("{}:{}: {}", file_, line_of(anchor),
                         fmt::format(f, std::forward<Args>(args)...));
  }
  // The line where `anchor` (a JSON key as written) first appears; 1 if not found.
  int64_t line_of(std::string_view anchor) const {
    // Tensor keys are searched from the "tensors" key on: their names may appear earlier too.
    const size_t from = anchor.starts_with("\"") && anchor.ends_with(":") ? tensors_at_ : 0;
    size_t pos = anchor.empty() ? std::string_view::npos : text_.find(anchor, from);
    return pos == std::string_view::npos ? 1 : detail::line_of_offset(text_, pos);
  }

  Expected<double> number(const json& obj, std::string_view key, std::string_view anchor,
                          bool nullable) const {
    auto it = obj.find(key);
    if (it == obj.end()) return error(anchor, "missing \"{}\"", key);
    if (it->is_null() && nullable) return std::numeric_limits<double>::quiet_NaN();
    if (!it->is_number()) return error(anchor, "\"{}\" must be a number", key);
    return it->get<double>();
  }
  Expected<int64_t> integer(const json& obj, std::string_view key, std::string_view anchor,
                            int64_t fallback) const {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX)) {
      return error(anchor, "\"{}\" must be an integer", key);
    }
    return it->get<int64_t>();
  }
  Expected<std::string> string(const json& obj, std::string_view key,
                               std::string_view anchor) const {
    auto it = obj.find(key);
    if (it == obj.end()) return std::string();
    if (!it->is_string()) return error(anchor, "\"{}\" must be a string", key);
    return it->get<std::string>();
  }

  Status histogram(const json& h, const std::string& anchor, TensorRange& r) const {
    if (!h.is_object()) return error(anchor, "\"histogram\" must be an object");
    PTQ_ASSIGN_OR_RETURN(r.hist_max, number(h, "range", anchor, false));
    if (!(r.hist_max >= 0.0) || !std::isfinite(r.hist_max)) {
      return error(anchor, "histogram range {} is not a finite value >= 0", r.hist_max);
    }
    PTQ_ASSIGN_OR_RETURN(int64_t bins, integer(h, "bins", anchor, kBins));
    if (bins != kBins)
      return error(anchor, "histogram has {} bins, this ptqkit reads {}", bins, kBins);
    auto counts = h.find("counts");
    if (counts == h.end() || !counts->is_array()) {
      return error(anchor, "histogram \"counts\" must be an array of [bin, count] pairs");
    }
    r.histogram.assign(static_cast<size_t>(bins), 0);
    int64_t previous = -1;
    for (const json& pair : *counts) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() ||
          !pair[1].is_number_unsigned()) {
        return error(anchor, "histogram count {} is not a [bin, count] pair of unsigned integers",
                     dump(pair));
      }
      const uint64_t bin = pair[0].get<uint64_t>();
      const uint64_t count = pair[1].get<uint64_t>();
      if (bin >= static_cast<uint64_t>(bins) || static_cast<int64_t>(bin) <= previous ||
          count == 0) {
        return error(anchor, "histogram pair {}: bins must increase within [0, {}) with counts > 0",
                     dump(pair), bins);
      }
      previous = static_cast<int64_t>(bin);
      r.histogram[bin] = count;
    }
    return {};
  }

  Expected<TensorRange> tensor(const std::string& name, const json& t) const {
    const std::string anchor = dump(json(name)) + ":";
    if (!t.is_object()) return error(anchor, "tensor '{}' must be an object", name);
    TensorRange r;
    PTQ_ASSIGN_OR_RETURN(r.amax, number(t, "amax", anchor, false));
    if (!(r.amax >= 0.0) || !std::isfinite(r.amax)) {
      return error(anchor, "tensor '{}': amax {} is not a finite value >= 0", name, r.amax);
    }
    PTQ_ASSIGN_OR_RETURN(r.min, number(t, "min", anchor, true));
    PTQ_ASSIGN_OR_RETURN(r.max, number(t, "max", anchor, true));
    PTQ_ASSIGN_OR_RETURN(r.count, integer(t, "count", anchor, 0));
    PTQ_ASSIGN_OR_RETURN(r.nonfinite, integer(t, "nonfinite", anchor, 0));
    if (r.count < 0 || r.nonfinite < 0) return error(anchor, "tensor '{}': negative count", name);
    if (auto h = t.find("histogram"); h != t.end()) PTQ_RETURN_IF_ERROR(histogram(*h, anchor, r));
    return r;
  }

  Status model(const json& top, ModelIdentity& m) const {
    auto it = top.find("model");
    if (it == top.end()) return {};
    if (!it->is_object()) return error("\"model\"", "\"model\" must be an object");
    PTQ_ASSIGN_OR_RETURN(m.graph_sha256, string(*it, "graph_sha256", "\"model\""));
    PTQ_ASSIGN_OR_RETURN(m.opset, integer(*it, "opset", "\"model\"", 0));
    auto inputs = it->find("inputs");
    if (inputs == it->end()) return {};
    if (!inputs->is_array()) return error("\"model\"", "model \"inputs\" must be an array");
    for (const json& in : *inputs) {
      if (!in.is_object() || !in.contains("name") || !in["name"].is_string() ||
          !in.contains("shape") || !in["shape"].is_array()) {
        return error("\"model\"", "model input {} must be {{\"name\": …, \"shape\": […]}}",
                     dump(in));
      }
      std::vector<int64_t> shape;
      for (const json& d : in["shape"]) {
        if (!d.is_number_integer())
          return error("\"model\"", "input shape {} has a non-integer", dump(in));
        shape.push_back(d.get<int64_t>());
      }
      m.inputs.emplace_back(in["name"].get<std::string>(), std::move(shape));
    }
    return {};
  }

  Status calibration(const json& top, CalibrationTable& table) const {
    constexpr std::string_view a = "\"calibration\"";
    auto it = top.find("calibration");
    if (it == top.end() || !it->is_object()) return error(a, "missing \"calibration\" object");
    PTQ_ASSIGN_OR_RETURN(table.method, string(*it, "method", a));
    if (table.method.empty()) return error(a, "missing calibration \"method\"");
    if (auto p = it->find("params"); p != it->end()) {
      if (!p->is_object()) return error(a, "calibration \"params\" must be an object");
      for (const auto& [k, v] : p->items()) {
        if (!v.is_number()) return error(a, "calibration parameter \"{}\" must be a number", k);
        table.method_params[k] = v.get<double>();
      }
    }
    PTQ_ASSIGN_OR_RETURN(table.run.samples, integer(*it, "samples", a, 0));
    PTQ_ASSIGN_OR_RETURN(table.run.batch, integer(*it, "batch", a, 0));
    PTQ_ASSIGN_OR_RETURN(table.run.backend, string(*it, "backend", a));
    PTQ_ASSIGN_OR_RETURN(table.run.ptqkit_version, string(*it, "ptqkit_version", a));
    PTQ_ASSIGN_OR_RETURN(table.run.date, string(*it, "date", a));
    if (auto f = it->find("ignore_nonfinite"); f != it->end()) {
      if (!f->is_boolean()) return error(a, "\"ignore_nonfinite\" must be true or false");
      table.run.ignore_nonfinite = f->get<bool>();
    }
    PTQ_ASSIGN_OR_RETURN(int64_t bins, integer(*it, "histogram_bins", a, kBins));
    if (bins != kBins) return error(a, "histogram_bins is {}, this ptqkit reads {}", bins, kBins);
    return {};
  }

  // Factors are finite and > 0 (each divides an activation channel), alpha in [0, 1].
  Status smoothquant(const json& top, CalibrationTable& table) const {
    constexpr std::string_view a = "\"smoothquant\"";
    auto it = top.find("smoothquant");
    if (it == top.end()) return {};
    if (!it->is_object()) return error(a, "\"smoothquant\" must be an object");
    SmoothQuantRecord r;
    PTQ_ASSIGN_OR_RETURN(r.alpha, number(*it, "alpha", a, false));
    if (!(r.alpha >= 0.0 && r.alpha <= 1.0)) {
      return error(a, "smoothquant alpha {} is not in [0, 1]", r.alpha);
    }
    auto factors = it->find("factors");
    if (factors == it->end() || !factors->is_object()) {
      return error(a, "smoothquant \"factors\" must be an object of arrays");
    }
    for (const auto& [name, f] : factors->items()) {
      if (!f.is_array()) return error(a, "smoothquant factors of '{}' must be an array", name);
      std::vector<double>& out = r.factors[name];
      for (const json& v : f) {
        if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>())) {
          return error(a, "smoothquant factor {} of '{}' is not a finite number > 0", dump(v),
                       name);
        }
        out.push_back(v.get<double>());
      }
    }
    table.smoothquant = std::move(r);
    return {};
  }

  Status options(const json& top, CalibrationTable& table) const {
    auto p = top.find("options");
    if (p == top.end()) return {};
    if (!p->is_object()) return error("\"options\"", "\"options\" must be an object");
    for (const auto& [k, v] : p->items()) {
      if (!v.is_string()) return error("\"options\"", "option \"{}\" must be a string", k);
      table.options[k] = v.get<std::string>();
    }
    return {};
  }

  Status bias_corrections(const json& top, CalibrationTable& table) const {
    constexpr std::string_view a = "\"bias_corrections\"";
    auto p = top.find("bias_corrections");
    if (p == top.end()) return {};
    if (!p->is_object()) return error(a, "\"bias_corrections\" must be an object");
    for (const auto& [unit, values] : p->items()) {
      if (!values.is_array()) return error(a, "bias correction \"{}\" must be an array", unit);
      std::vector<double>& out = table.bias_corrections[unit];
      for (const json& v : values) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) {
          return error(a, "bias correction \"{}\" holds {}, not a finite number", unit, dump(v));
        }
        out.push_back(v.get<double>());
      }
    }
    return {};
  }

  Expected<CalibrationTable> read() const {
    PTQ_ASSIGN_OR_RETURN(json top, detail::parse_json_text(text_, file_));
    if (!top.is_object()) return error("", "a ptqkit cache is a JSON object");
    auto format = top.find("format");
    if (format == top.end() || *format != kFormat) {
      return error("\"format\"", "not a ptqkit calibration cache (\"format\" must be \"{}\")",
                   kFormat);
    }
    auto version = top.find("version");
    if (version == top.end() || !version->is_number_integer() || *version != kVersion) {
      return error("\"version\"", "unsupported cache version {} (this ptqkit reads {})",
                   version == top.end() ? "none" : dump(*version), kVersion);
    }
    CalibrationTable table;
    PTQ_RETURN_IF_ERROR(model(top, table.model));
    PTQ_RETURN_IF_ERROR(calibration(top, table));
    PTQ_RETURN_IF_ERROR(smoothquant(top, table));
    if (auto p = top.find("provenance"); p != top.end()) {
      if (!p->is_object()) return error("\"provenance\"", "\"provenance\" must be an object");
      for (const auto& [k, v] : p->items()) {
        if (!v.is_string()) return error("\"provenance\"", "provenance \"{}\" must be a string", k);
        table.provenance[k] = v.get<std::string>();
      }
    }
    PTQ_RETURN_IF_ERROR(options(top, table));
    PTQ_RETURN_IF_ERROR(bias_corrections(top, table));
    auto tensors = top.find("tensors");
    if (tensors == top.end() || !tensors->is_object()) {
      return error("\"tensors\"", "missing \"tensors\" object");
    }
    for (const auto& [name, t] : tensors->items()) {
      PTQ_ASSIGN_OR_RETURN(table.tensors[name], tensor(name, t));
    }
    return table;
  }

 private:
  std::string_view text_;
  std::string_view file_;
  size_t tensors_at_ = 0;
};

}  // namespace

Expected<CalibrationTable> parse_json_cache(std::string_view text, std::string_view file_name) {
  return JsonReader(text, file_name).read();
}

}  // namespace ptq::calib
