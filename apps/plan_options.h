// The options that decide a quantized model besides its ranges, defined once for every command
// that writes one: `ptq quantize` and `ptq sensitivity` (whose --write model is then the one
// quantize writes). They are --target, --ort-ep, --activation-type, the node selections with
// the names ONNX Runtime's and ModelOpt's users know (--nodes-to-exclude = --exclude,
// --op-types-to-exclude = --exclude-op-types, --nodes-to-quantize, --op-types-to-quantize;
// ModelOpt's underscored spellings too), the weight form and bias correction. A cache records
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
  std::string ort_ep = "cpu";
  std::string activation_type;  // "": the fastest for the target (planner::fastest_activation_type)
  std::vector<std::string> exclude;
  std::vector<std::string> exclude_op_types;
  std::vector<std::string> quantize_nodes;
  std::vector<std::string> quantize_op_types;
  bool per_tensor_weights = false;
  bool weights_float = false;
  int64_t min_conv_channels = 16;
  bool quantize_matrix_vector = false;
  bool no_fold_batchnorm = false;
  bool bias_correction = false;
  CLI::Option* ort_ep_option = nullptr;  // set by add_plan_options: was --ort-ep given
};

// Adds the options to `app`, bound to `flags` (which must outlive parsing).
void add_plan_options(CLI::App& app, PlanFlags& flags);

// The settings the flags give, validated (usage errors name the option), with this build's
// version recorded. When the activation type is chosen here (not given), one info line says
// which and why.
Expected<calibration::QuantizeSettings> quantize_settings(const PlanFlags& flags);

// The recorded options' flags given on `app`'s command line (calibration::adopt_settings).
std::set<std::string> given_plan_flags(const CLI::App& app);

}  // namespace ptq::apps
