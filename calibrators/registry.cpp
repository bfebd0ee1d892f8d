// The calibrator registry's tables, made from ptq/calibrators.inc (one line per method).
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "ptq/calibrators.h"

namespace ptq::calib {

namespace {

constexpr CalibratorInfo kCalibrators[] = {
#define PTQ_CALIBRATOR(name, trt, ort, weights, summary) \
  {#name, &name##_amax, trt, ort, weights, summary},
#define PTQ_CALIBRATOR_PARAM(method, param, lowest, highest, help)
#include "ptq/calibrators.inc"
#undef PTQ_CALIBRATOR
#undef PTQ_CALIBRATOR_PARAM
};

constexpr CalibratorParam kParams[] = {
#define PTQ_CALIBRATOR(name, trt, ort, weights, summary)
#define PTQ_CALIBRATOR_PARAM(method, param, lowest, highest, help) \
  {#method, #param, &MethodConfig::param, lowest, highest, help},
#include "ptq/calibrators.inc"
#undef PTQ_CALIBRATOR
#undef PTQ_CALIBRATOR_PARAM
};

}  // namespace

std::span<const CalibratorInfo> calibrators() { return kCalibrators; }

std::span<const CalibratorParam> calibrator_params() { return kParams; }

const CalibratorInfo* find_calibrator(std::string_view name) {
  for (const CalibratorInfo& c : kCalibrators) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string_view canonical_calibrator_name(std::string_view name) {
  if (name == "max") return "minmax";  // ModelOpt's --calibration_method max
  for (const CalibratorInfo& c : kCalibrators) {
    if (c.name == name || (!c.ort_name.empty() && c.ort_name == name)) return c.name;
  }
  return "";
}

std::string calibrator_names() {
  std::string out;
  for (const CalibratorInfo& c : kCalibrators) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

std::string calibrator_choices(bool weights_only) {
  std::vector<std::string_view> names;
  for (const CalibratorInfo& c : kCalibrators) {
    if (c.weights || !weights_only) names.push_back(c.name);
  }
  if (names.size() < 2) return fmt::format("{}", fmt::join(names, ""));
  return fmt::format("{} or {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

Status MethodConfig::validate() const {
  if (find_calibrator(name) == nullptr) {
    return usage_error("unknown calibration method '{}' (known: {})", name, calibrator_names());
  }
  for (const CalibratorParam& p : kParams) {
    const double v = this->*p.field;
    if (p.method == name && !(v > p.lowest && v <= p.highest)) {
      return usage_error("{} {} is out of range ({}, {}]", p.name, v, p.lowest, p.highest);
    }
  }
  return {};
}

std::map<std::string, double> MethodConfig::params() const {
  std::map<std::string, double> out;
  for (const CalibratorParam& p : kParams) {
    if (p.method == name) out.emplace(p.name, this->*p.field);
  }
  return out;
}

Expected<MethodConfig> MethodConfig::from_table(const CalibrationTable& table) {
  MethodConfig config;
  config.name = table.method;
  for (const CalibratorParam& p : kParams) {
    auto it = table.method_params.find(std::string(p.name));
    if (it != table.method_params.end()) config.*p.field = it->second;
  }
  PTQ_RETURN_IF_ERROR(config.validate());
  return config;
}

Expected<double> compute_amax(const HistogramView& hist, const MethodConfig& config) {
  PTQ_RETURN_IF_ERROR(config.validate());
  if (hist.counts.size() != static_cast<size_t>(kHistogramBins)) {
    return invalid_input("histogram has {} bins, expected {}", hist.counts.size(), kHistogramBins);
  }
  if (!(hist.range >= 0.0) || !std::isfinite(hist.range)) {
    return invalid_input("histogram range {} is not a finite value >= 0", hist.range);
  }
  return find_calibrator(config.name)->amax(hist, config);
}

}  // namespace ptq::calib
