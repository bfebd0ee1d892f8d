// --smoothquant [ALPHA], shared by the commands that quantize a model (quantize, sensitivity):
// the option, and smoothing the float model before calibration, from --data or as a --cache
// records it (docs/SMOOTHQUANT.md).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "data_options.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::apps {

struct SmoothQuantOption {
  double alpha = 0.5;
  CLI::Option* option = nullptr;  // set by add_smoothquant_option
  bool given() const { return option != nullptr && option->count() > 0; }
};

void add_smoothquant_option(CLI::App& app, SmoothQuantOption& o);

// With --data (`data` non-empty) and the option given: one pass over the data on the CPU
// smooths `model`; returns the record for the calibration table. Without it: nothing.
Expected<std::optional<calib::SmoothQuantRecord>> smooth_from_data(
    ir::Model& model, const SmoothQuantOption& o, const DataOptions& data, int threads,
    bool quiet);

// With --cache: smooths `model` as the cache at `cache` records (adding that form to `forms`);
// the option, when given, must agree with the cache (a usage error otherwise).
Status smooth_as_cached(ir::Model& model, const SmoothQuantOption& o, const std::string& cache,
                        calibration::ModelForms& forms);

}  // namespace ptq::apps
