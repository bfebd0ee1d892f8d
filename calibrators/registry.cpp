// The calibrator registry: adding a method is its file plus one line here.
#include <cmath>

#include "ptq/calibrators.h"

namespace ptq::calib {

namespace {

constexpr CalibratorInfo kCalibrators[] = {
    {"entropy", &entropy_amax, "TensorRT EntropyCalibration2: the range of least KL divergence"},
    {"minmax", &minmax_amax, "the largest |x| seen"},
    {"mse", &mse_amax, "the range of least INT8 quantization error"},
    {"percentile", &percentile_amax, "the p-th percentile of |x| (default 99.99)"},
};

}  // namespace

std::span<const CalibratorInfo> calibrators() { return kCalibrators; }

const CalibratorInfo* find_calibrator(std::string_view name) {
  for (const CalibratorInfo& c : kCalibrators) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string calibrator_names() {
  std::string out;
  for (const CalibratorInfo& c : kCalibrators) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

Status MethodConfig::validate() const {
  if (find_calibrator(name) == nullptr) {
    return usage_error("unknown calibration method '{}' (known: {})", name, calibrator_names());
  }
  if (name == "percentile" && !(percentile > 0.0 && percentile <= 100.0)) {
    return usage_error("percentile {} is out of range (0, 100]", percentile);
  }
  return {};
}

std::map<std::string, double> MethodConfig::params() const {
  if (name == "percentile") return {{"percentile", percentile}};
  return {};
}

Expected<MethodConfig> MethodConfig::from_table(const CalibrationTable& table) {
  MethodConfig config;
  config.name = table.method;
  if (auto it = table.method_params.find("percentile"); it != table.method_params.end()) {
    config.percentile = it->second;
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
