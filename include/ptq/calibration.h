// The calibration module (ptq_calibration): runs a float model over a dataset and measures its
// activations. Pass 1 feeds each observed tensor's min/max into a calib::Collector (fixing the
// histogram range T per tensor); pass 2 runs the same samples again and feeds |x| histograms
// over [0, T]; the method then turns each histogram into amax. Min-max needs pass 1 only.
// Memory is O(tensors x bins): only statistics are kept, never activations or samples.
//
//   calibration::CalibrationOptions o;
//   o.method = {.name = "entropy"};
//   o.threads = 8;
//   o.backend = "cpu";
//   o.date = calibration::iso8601_utc(std::time(nullptr));  // the library never reads a clock
//   PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, calibration::calibrate(model, exec, data, o));
//   PTQ_RETURN_IF_ERROR(calib::write_cache(t, "model.calib.json"));
//
// The sharded flow of docs/CACHE_FORMAT.md: each shard runs with ranges_only (a ranges table),
// the ranges tables are merged (calib::merge_tables), each shard runs again with
// common_ranges = the merged table, and calib::merge_calibrations adds the shard tables.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::calibration {

// Where a run is, reported after every batch.
struct Progress {
  int pass = 1;               // 1: ranges, 2: histograms
  int passes = 2;             // 1 for min-max and ranges-only runs
  int64_t samples_done = 0;   // samples of this pass done so far
  int64_t samples_total = 0;  // samples per pass
};
// Called once a batch is done, one call at a time; a non-ok Status aborts the run with it.
using ProgressFn = std::function<Status(const Progress&)>;

struct CalibrationOptions {
  calib::MethodConfig method{};
  // false: the activations the planner may quantize (planner::quantizable_activations with
  // `plan`); true: every float activation (graph inputs and node outputs).
  bool all_tensors = false;
  planner::PlanOptions plan{};
  // Count and skip NaN/±Inf instead of failing (the counts land in the table per tensor).
  bool ignore_nonfinite = false;
  // Phase 1 of the sharded flow: run the range pass only and return the ranges table
  // (method "minmax", no histograms).
  bool ranges_only = false;
  // Phase 2 of the sharded flow: bin every tensor over its range in this merged ranges table
  // instead of this data's own (borrowed; must outlive the call). Histogram methods only.
  const calib::CalibrationTable* common_ranges = nullptr;
  // Threads for the method search over tensors (the executor has its own thread count).
  int threads = 1;
  // Read the next batch on a second thread while the current one runs.
  bool prefetch = true;
  // Recorded in the table's run info.
  std::string backend = "cpu";
  std::string date;            // ISO 8601; the library never reads a clock
  std::string ptqkit_version;  // "" records this build's version
  ProgressFn progress;         // optional
};

// The tensors a run with these options measures, sorted. With all_tensors, values whose dtype
// the model does not declare are included (and skipped at run time if they are not float).
Expected<std::vector<std::string>> calibration_tensors(const ir::Model& model,
                                                       const CalibrationOptions& options);

// Calibrates `model` on `dataset` (bound to the model's graph) with `executor` (created for
// `model`). Returns the table with the model identity (graph hash, opset, input shapes fed)
// and run info filled. Errors: a non-finite value (without ignore_nonfinite) names the tensor
// and the sample's index in the data source; an empty dataset; a common_ranges table of
// another model or missing a tensor.
Expected<calib::CalibrationTable> calibrate(const ir::Model& model, runtime::Executor& executor,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options);

// The same with several executors of `model` (workers), each running every executors.size()-th
// batch of a pass on a thread of its own; the first runs on the calling thread. Statistics
// combine by min/max and integer addition, so the table is the same bit for bit for any number
// of workers, and an error is that of the first failing batch, as with one. `progress` is
// called by the worker that finished a batch, one call at a time.
Expected<calib::CalibrationTable> calibrate(const ir::Model& model,
                                            std::span<runtime::Executor* const> executors,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options);

// The model identity a table records: graph hash, default-domain opset, and the real inputs
// with their declared shapes (-1 for unknown dims); calibrate() replaces the shapes by the ones
// fed.
calib::ModelIdentity model_identity(const ir::Model& model);

// This build's version (PTQ_VERSION_STRING, ptq/version.h).
std::string_view ptqkit_version();

// "2024-05-01T12:00:00Z" for a Unix time in seconds.
std::string iso8601_utc(int64_t unix_seconds);

}  // namespace ptq::calibration
