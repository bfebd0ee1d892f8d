#include "plan_options.h"

#include "ptq/util/log.h"

namespace ptq::apps {

void add_plan_options(CLI::App& app, PlanFlags& flags) {
  app.add_option("--target", flags.target, "who runs the model: tensorrt or ort")
      ->capture_default_str();
  flags.ort_ep_option =
      app.add_option("--ort-ep", flags.ort_ep,
                     "--target ort: the ONNX Runtime execution provider it runs on, cpu, cuda or "
                     "tensorrt; picks the fastest activation type for it")
          ->capture_default_str();
  app.add_option("--activation-type", flags.activation_type,
                 "int8 (symmetric) or uint8 (asymmetric, --target ort only); default: the "
                 "fastest for the runtime (tensorrt and --ort-ep cuda|tensorrt: int8, "
                 "--ort-ep cpu: uint8)");
  app.add_option("--exclude,--nodes-to-exclude,--nodes_to_exclude", flags.exclude,
                 "nodes left float: names or regexes matched against whole names (comma-separated, "
                 "repeatable)")
      ->delimiter(',');
  app.add_option("--exclude-op-types,--op-types-to-exclude,--op_types_to_exclude",
                 flags.exclude_op_types, "op types left float (e.g. MatMul,Gemm)")
      ->delimiter(',');
  app.add_option("--nodes-to-quantize,--nodes_to_quantize", flags.quantize_nodes,
                 "quantize only these nodes (names or regexes as --exclude); every other node "
                 "stays float")
      ->delimiter(',');
  app.add_option("--op-types-to-quantize,--op_types_to_quantize", flags.quantize_op_types,
                 "quantize only nodes of these op types (e.g. Conv,Gemm); every other node stays "
                 "float")
      ->delimiter(',');
}

namespace {

// The given --activation-type, or the fastest for the target (said in one info line).
Expected<planner::ActivationType> activation_type(const PlanFlags& flags,
                                                  planner::Target target) {
  if (target != planner::Target::kOrt && flags.ort_ep_option->count() > 0) {
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

Status set_plan_flags(const PlanFlags& flags, planner::PlanOptions& plan) {
  PTQ_ASSIGN_OR_RETURN(plan.target, planner::parse_target(flags.target));
  PTQ_ASSIGN_OR_RETURN(plan.activation_type, activation_type(flags, plan.target));
  plan.exclude_nodes = flags.exclude;
  plan.exclude_op_types = flags.exclude_op_types;
  plan.quantize_nodes = flags.quantize_nodes;
  plan.quantize_op_types = flags.quantize_op_types;
  return Status::ok();
}

}  // namespace ptq::apps
