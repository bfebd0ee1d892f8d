// CalibrationTable operations that need no file format: merging shards, checking against a model.
#include <algorithm>
#include <cmath>
#include <set>

#include "ptq/calib_cache.h"

namespace ptq::calib {

double TensorRange::abs_max() const { return std::max(std::fabs(min), std::fabs(max)); }

bool CalibrationTable::has_histograms() const {
  if (tensors.empty()) return false;
  return std::all_of(tensors.begin(), tensors.end(),
                     [](const auto& kv) { return kv.second.has_histogram(); });
}

namespace {

std::string join(const std::vector<std::string>& names, size_t limit = 20) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > limit) out += fmt::format(", … ({} in all)", names.size());
  return out;
}

// Statistics of `b` added into `a` (same tensor, histograms over the same range or dropped).
void merge_range(TensorRange& a, const TensorRange& b) {
  if (b.count > 0) {
    if (a.count == 0) {
      a.min = b.min;
      a.max = b.max;
    } else {
      a.min = std::min(a.min, b.min);
      a.max = std::max(a.max, b.max);
    }
  }
  a.count += b.count;
  a.nonfinite += b.nonfinite;
  for (size_t i = 0; i < a.histogram.size() && i < b.histogram.size(); ++i) {
    a.histogram[i] += b.histogram[i];
  }
}

Status check_same_tensors(std::span<const CalibrationTable> shards) {
  for (size_t s = 1; s < shards.size(); ++s) {
    std::vector<std::string> only_first, only_this;
    for (const auto& [name, r] : shards[0].tensors) {
      if (!shards[s].tensors.contains(name)) only_first.push_back(name);
    }
    for (const auto& [name, r] : shards[s].tensors) {
      if (!shards[0].tensors.contains(name)) only_this.push_back(name);
    }
    if (!only_first.empty() || !only_this.empty()) {
      return invalid_input("shard {} has other tensors than shard 1 (missing: {}; extra: {})",
                           s + 1, join(only_first), join(only_this));
    }
  }
  return {};
}

// Histograms add only when every shard binned a tensor over the same range.
Expected<bool> histograms_mergeable(std::span<const CalibrationTable> shards,
                                    const MergeOptions& options) {
  bool all = true, none = true;
  for (const CalibrationTable& s : shards) {
    for (const auto& [name, r] : s.tensors) (r.has_histogram() ? none : all) = false;
  }
  if (none) return false;
  if (!all) {
    if (options.drop_histograms) return false;
    return invalid_input("some shards carry histograms and some do not; merge ranges caches "
                         "with ranges caches (or drop the histograms)");
  }
  for (const auto& [name, r] : shards[0].tensors) {
    for (size_t s = 1; s < shards.size(); ++s) {
      const TensorRange& o = shards[s].tensors.at(name);
      if (o.hist_max != r.hist_max || o.histogram.size() != r.histogram.size()) {
        if (options.drop_histograms) return false;
        return invalid_input(
            "tensor '{}': histogram range {} of shard {} differs from {} of shard 1; histograms "
            "add only over a common range: calibrate shards with the merged ranges of every "
            "shard (two-phase flow, docs/CACHE_FORMAT.md)",
            name, o.hist_max, s + 1, r.hist_max);
      }
    }
  }
  return true;
}

RunInfo merge_run(std::span<const CalibrationTable> shards) {
  RunInfo run = shards[0].run;
  for (const CalibrationTable& s : shards.subspan(1)) {
    run.samples += s.run.samples;
    if (s.run.batch != run.batch) run.batch = 0;
    if (s.run.backend != run.backend) run.backend = "mixed";
    run.date = std::max(run.date, s.run.date);
    run.ignore_nonfinite = run.ignore_nonfinite || s.run.ignore_nonfinite;
  }
  return run;
}

}  // namespace

Expected<CalibrationTable> merge_tables(std::span<const CalibrationTable> shards,
                                        const MergeOptions& options) {
  if (shards.empty()) return usage_error("no caches to merge");
  for (size_t s = 1; s < shards.size(); ++s) {
    const std::string& a = shards[0].model.graph_sha256;
    const std::string& b = shards[s].model.graph_sha256;
    if (!options.force && !a.empty() && !b.empty() && a != b) {
      return invalid_input(
          "shard {} was calibrated for graph {}, shard 1 for {} (--force merges anyway)", s + 1, b,
          a);
    }
  }
  PTQ_RETURN_IF_ERROR(check_same_tensors(shards));
  for (size_t s = 0; s < shards.size(); ++s) {
    for (const auto& [name, r] : shards[s].tensors) {
      if (std::isnan(r.min) || std::isnan(r.max)) {
        return invalid_input("shard {}: tensor '{}' records no min/max (TensorRT and ONNX Runtime "
                             "caches hold only ranges and cannot be merged)", s + 1, name);
      }
    }
  }
  PTQ_ASSIGN_OR_RETURN(bool with_histograms, histograms_mergeable(shards, options));

  CalibrationTable merged;
  merged.model = shards[0].model;
  merged.run = merge_run(shards);
  merged.provenance = shards[0].provenance;
  merged.provenance["merged_shards"] = std::to_string(shards.size());
  merged.smoothquant = shards[0].smoothquant;
  merged.method = "minmax";
  merged.tensors = shards[0].tensors;
  for (auto& [name, r] : merged.tensors) {
    if (!with_histograms) {
      r.histogram.clear();
      r.hist_max = 0.0;
    }
    for (size_t s = 1; s < shards.size(); ++s) merge_range(r, shards[s].tensors.at(name));
    r.amax = r.count > 0 ? r.abs_max() : 0.0;
  }
  return merged;
}

ModelCheck check_model(const CalibrationTable& table, std::string_view graph_sha256,
                       std::span<const std::string> expected_tensors) {
  ModelCheck check;
  check.hash_known = !table.model.graph_sha256.empty();
  check.hash_matches = !check.hash_known || table.model.graph_sha256 == graph_sha256;
  std::set<std::string> expected(expected_tensors.begin(), expected_tensors.end());
  for (const std::string& name : expected) {
    if (!table.tensors.contains(name)) check.missing.push_back(name);
  }
  for (const auto& [name, r] : table.tensors) {
    if (!expected.contains(name)) check.extra.push_back(name);
  }
  return check;
}

Status require_same_model(const CalibrationTable& table, std::string_view graph_sha256,
                          std::string_view cache_file, bool force) {
  const std::string& recorded = table.model.graph_sha256;
  if (force || recorded.empty() || recorded == graph_sha256) return {};
  return invalid_input(
      "{}: the cache was calibrated for graph sha256 {}, this model's graph is {} (--force uses "
      "it anyway)",
      cache_file, recorded, graph_sha256);
}

Warnings describe(const ModelCheck& check) {
  Warnings out;
  if (!check.hash_matches)
    out.push_back("the cache was calibrated for another graph (hash differs)");
  if (!check.missing.empty()) {
    out.push_back(fmt::format("{} tensor(s) missing from the cache run in higher precision: {}",
                              check.missing.size(), join(check.missing)));
  }
  if (!check.extra.empty()) {
    out.push_back(fmt::format("{} cache entr(y/ies) match no tensor and are ignored: {}",
                              check.extra.size(), join(check.extra)));
  }
  return out;
}

}  // namespace ptq::calib
