#include "plan_options.h"

#include "command.h"
#include "ptq/util/log.h"

namespace ptq::apps {

namespace {

void add_selection_options(CLI::App& app, PlanFlags& f) {
  app.add_option("--exclude,--nodes-to-exclude,--nodes_to_exclude", f.exclude,
                 "nodes left float: names or regexes matched against whole names (comma-separated, "
                 "repeatable)")
      ->delimiter(',');
  app.add_option("--exclude-op-types,--op-types-to-exclude,--op_types_to_exclude",
                 f.exclude_op_types, "op types left float (e.g. MatMul,Gemm)")
      ->delimiter(',');
  app.add_option("--nodes-to-quantize,--nodes_to_quantize", f.quantize_nodes,
                 "quantize only these nodes (names or regexes as --exclude); every other node "
                 "stays float")
      ->delimiter(',');
  app.add_option("--op-types-to-quantize,--op_types_to_quantize", f.quantize_op_types,
                 "quantize only nodes of these op types (e.g. Conv,Gemm); every other node stays "
                 "float")
      ->delimiter(',');
}

void add_weight_options(CLI::App& app, PlanFlags& f) {
  app.add_flag("--per-tensor-weights", f.per_tensor_weights,
               "one scale per weight tensor instead of one per output channel");
  app.add_flag("--weights-float", f.weights_float,
               "tensorrt: keep float weights and put Q+DQ after them instead of int8 + DQ");
  app.add_option("--min-conv-channels", f.min_conv_channels,
                 "convs with fewer input channels stay float (0: quantize every conv)")
      ->capture_default_str()
      ->check(at_least(0));
  app.add_flag("--quantize-matrix-vector", f.quantize_matrix_vector,
               "also quantize MatMuls with M or N = 1");
  app.add_flag("--no-fold-batchnorm", f.no_fold_batchnorm,
               "keep BatchNormalization after quantized convs instead of folding it");
  app.add_flag("--bias-correction", f.bias_correction,
               "after calibration, one more pass over --data measures each quantized Conv/Gemm's "
               "per-channel output shift from its int8 weights and subtracts it from the bias "
               "(recorded in the cache; MatMul is not corrected)");
}

// The given --activation-type, or the fastest for the target (said in one info line).
Expected<planner::ActivationType> activation_type(const PlanFlags& flags,
                                                  planner::Target target) {
  if (target != planner::Target::kOrt && flags.ort_ep_option != nullptr &&
      flags.ort_ep_option->count() > 0) {
    return usage_error("--ort-ep applies to --target ort");
  }
  PTQ_ASSIGN_OR_RETURN(planner::OrtProvider provider, planner::parse_ort_provider(flags.ort_ep));
  if (!flags.activation_type.empty()) return planner::parse_activation_type(flags.activation_type);
  const planner::ActivationChoice choice = planner::fastest_activation_type(target, provider);
  if (target == planner::Target::kOrt) {
    log::info("--target ort --ort-ep {}: {} activations: {} (--activation-type overrides)",
              flags.ort_ep, choice.type == planner::ActivationType::kUInt8 ? "uint8" : "int8",
              choice.why);
  }
  return choice.type;
}

}  // namespace

void add_plan_options(CLI::App& app, PlanFlags& f) {
  app.add_option("--target", f.target, "who runs the model: tensorrt or ort")
      ->capture_default_str();
  f.ort_ep_option =
      app.add_option("--ort-ep", f.ort_ep,
                     "--target ort: the ONNX Runtime execution provider it runs on, cpu, cuda or "
                     "tensorrt; picks the fastest activation type for it")
          ->capture_default_str();
  app.add_option("--activation-type", f.activation_type,
                 "int8 (symmetric) or uint8 (asymmetric, --target ort only); default: the "
                 "fastest for the runtime (tensorrt and --ort-ep cuda|tensorrt: int8, "
                 "--ort-ep cpu: uint8)");
  add_selection_options(app, f);
  add_weight_options(app, f);
}

Expected<calibration::QuantizeSettings> quantize_settings(const PlanFlags& f) {
  calibration::QuantizeSettings s;
  planner::PlanOptions& p = s.plan;
  PTQ_ASSIGN_OR_RETURN(p.target, planner::parse_target(f.target));
  PTQ_ASSIGN_OR_RETURN(p.activation_type, activation_type(f, p.target));
  p.exclude_nodes = f.exclude;
  p.exclude_op_types = f.exclude_op_types;
  p.quantize_nodes = f.quantize_nodes;
  p.quantize_op_types = f.quantize_op_types;
  p.per_tensor_weights = f.per_tensor_weights;
  p.weights_float = f.weights_float;
  p.min_conv_channels = f.min_conv_channels;
  p.quantize_matrix_vector = f.quantize_matrix_vector;
  p.fold_batchnorm = !f.no_fold_batchnorm;
  p.ptqkit_version = std::string(calibration::ptqkit_version());
  PTQ_RETURN_IF_ERROR(p.validate());
  s.bias_correction = f.bias_correction;
  return s;
}

std::set<std::string> given_plan_flags(const CLI::App& app) {
  std::set<std::string> given;
  for (const std::string& flag : calibration::recorded_option_flags()) {
    const CLI::Option* o = app.get_option_no_throw(flag);
    if (o != nullptr && o->count() > 0) given.insert(flag);
  }
  return given;
}

}  // namespace ptq::apps
