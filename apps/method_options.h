// The calibration method options every command shares, built from the calibrator registry
// (ptq/calibrators.inc): --method with the registered names in its help, and one option per
// method parameter (--percentile …).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/calibrators.h"
#include "ptq/status.h"

namespace ptq::apps {

struct MethodOptionsConfig {
  std::string what{};         // the start of --method's help ("calibration method with --data")
  std::string suffix{};       // the end of --method's help ("" or " (needs stored histograms)")
  bool show_default = true;   // print the defaults in --help
};

// The parameter options added, to tell which were given.
struct MethodOptions {
  std::vector<std::pair<const calib::CalibratorParam*, CLI::Option*>> params;
  // For a command whose --method may be left out (config.name empty: keep a table's method): a
  // usage error for a parameter given without it ("--percentile needs --method percentile").
  Status check_given_with_method(const calib::MethodConfig& config) const;
};

// Adds --method and the parameter options to `app`, bound to `config` (which must outlive
// parsing); `config`'s values are the defaults.
MethodOptions add_method_options(CLI::App& app, calib::MethodConfig& config,
                                 const MethodOptionsConfig& options);

// --trt-algo's help, naming the methods TensorRT has no calibrator for.
std::string trt_algo_help();

}  // namespace ptq::apps
