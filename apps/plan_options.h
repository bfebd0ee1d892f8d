// The options that say what a quantized model is for and which nodes it quantizes: --target,
// --ort-ep, --activation-type, and the node selections with the names ONNX Runtime's and
// ModelOpt's users know (--nodes-to-exclude = --exclude, --op-types-to-exclude =
// --exclude-op-types, --nodes-to-quantize, --op-types-to-quantize; ModelOpt's underscored
// spellings too). make_plan_options() turns them into the planner's options.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/planner.h"
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
  CLI::Option* ort_ep_option = nullptr;  // set by add_plan_options: was --ort-ep given
};

// Adds the options to `app`, bound to `flags` (which must outlive parsing).
void add_plan_options(CLI::App& app, PlanFlags& flags);

// Sets `plan`'s target, activation type and node selections. When the activation type is chosen
// here (not given), one info line says which and why. Usage errors name the option at fault.
Status set_plan_flags(const PlanFlags& flags, planner::PlanOptions& plan);

}  // namespace ptq::apps
