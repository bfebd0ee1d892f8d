#include "plan_options.h"

#include "command.h"

namespace ptq::apps {

void add_plan_options(CLI::App& app, PlanFlags& f) {
  app.add_option("--target", f.target, "who runs the model: tensorrt or ort")
      ->capture_default_str();
  app.add_option("--exclude", f.exclude,
                 "nodes left float: names or regexes matched against whole names (comma-separated, "
                 "repeatable)")
      ->delimiter(',');
  app.add_option("--exclude-op-types", f.exclude_op_types, "op types left float (e.g. MatMul,Gemm)")
      ->delimiter(',');
  app.add_flag("--per-tensor-weights", f.per_tensor_weights,
               "one scale per weight tensor instead of one per output channel");
  app.add_flag("--weights-float", f.weights_float,
               "tensorrt: keep float weights and put Q+DQ after them instead of int8 + DQ");
  app.add_option("--activation-type", f.activation_type,
                 "int8 (symmetric) or uint8 (asymmetric, --target ort only)")
      ->capture_default_str();
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

Expected<calibration::QuantizeSettings> quantize_settings(const PlanFlags& f) {
  calibration::QuantizeSettings s;
  planner::PlanOptions& p = s.plan;
  PTQ_ASSIGN_OR_RETURN(p.target, planner::parse_target(f.target));
  PTQ_ASSIGN_OR_RETURN(p.activation_type, planner::parse_activation_type(f.activation_type));
  p.exclude_nodes = f.exclude;
  p.exclude_op_types = f.exclude_op_types;
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
