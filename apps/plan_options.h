// The options that decide a quantized model besides its ranges (target, exclusions, weight
// form, bias correction, …), defined once for every command that writes one: `ptq quantize`
// and `ptq sensitivity` (whose --write model is then the one quantize writes). A cache records
// them (calibration::QuantizeSettings).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/calibration.h"
#include "ptq/status.h"

namespace ptq::apps {

struct PlanFlags {
  std::string target = "tensorrt";
  std::vector<std::string> exclude;
  std::vector<std::string> exclude_op_types;
  bool per_tensor_weights = false;
  bool weights_float = false;
  std::string activation_type = "int8";
  int64_t min_conv_channels = 16;
  bool quantize_matrix_vector = false;
  bool no_fold_batchnorm = false;
  bool bias_correction = false;
};

// Adds the options to `app`, bound to `flags` (which must outlive parsing).
void add_plan_options(CLI::App& app, PlanFlags& flags);

// The settings the flags give, validated (usage errors), with this build's version recorded.
Expected<calibration::QuantizeSettings> quantize_settings(const PlanFlags& flags);

// The recorded options' flags given on `app`'s command line (calibration::adopt_settings).
std::set<std::string> given_plan_flags(const CLI::App& app);

}  // namespace ptq::apps
