// Table-level operations that need the methods: re-calibrating from stored histograms and
// merging shards (statistics merged by calib_cache, amax recomputed here).
#include <cmath>

#include "ptq/calibrators.h"

namespace ptq::calib {

Status recalibrate(CalibrationTable& table, const MethodConfig& config) {
  PTQ_RETURN_IF_ERROR(config.validate());
  for (auto& [name, range] : table.tensors) {
    if (!range.has_histogram()) {
      if (config.name == "minmax" && !std::isnan(range.abs_max())) {
        range.amax = range.count > 0 ? range.abs_max() : 0.0;
        continue;
      }
      return invalid_input(
          "tensor '{}' has no histogram: method '{}' needs a ptqkit JSON cache written with "
          "histograms",
          name, config.name);
    }
    auto amax = compute_amax(HistogramView{range.hist_max, range.histogram}, config);
    if (!amax) return invalid_input("tensor '{}': {}", name, amax.status().message());
    range.amax = *amax;
  }
  table.method = config.name;
  table.method_params = config.params();
  return {};
}

namespace {

// The method every shard was calibrated with, or an error listing the ones that differ.
Expected<MethodConfig> common_method(std::span<const CalibrationTable> shards) {
  PTQ_ASSIGN_OR_RETURN(MethodConfig first, MethodConfig::from_table(shards[0]));
  for (const CalibrationTable& s : shards.subspan(1)) {
    if (s.method != shards[0].method || s.method_params != shards[0].method_params) {
      return usage_error(
          "shards were calibrated with different methods ('{}' and '{}'); choose one with --method",
          shards[0].method, s.method);
    }
  }
  return first;
}

}  // namespace

Expected<CalibrationTable> merge_calibrations(std::span<const CalibrationTable> shards,
                                              const MethodConfig* config,
                                              const MergeOptions& options) {
  if (shards.empty()) return usage_error("no caches to merge");
  PTQ_ASSIGN_OR_RETURN(CalibrationTable merged, merge_tables(shards, options));
  MethodConfig method;
  if (config != nullptr) {
    method = *config;
  } else {
    PTQ_ASSIGN_OR_RETURN(method, common_method(shards));
  }
  if (!merged.has_histograms()) {
    if (config != nullptr && method.name != "minmax") {
      return usage_error("the merged caches hold no histograms: only method 'minmax' applies");
    }
    return merged;  // a ranges table (min-max)
  }
  PTQ_RETURN_IF_ERROR(recalibrate(merged, method));
  return merged;
}

}  // namespace ptq::calib
