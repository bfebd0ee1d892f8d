// `ptq lint MODEL [--json] [--strict] [--summary] [--layers]`: Q/DQ placement hazards for TensorRT,
// one finding per line with the rule broken and a suggested fix (include/ptq/lint.h). Exit 0 unless
// --strict and an error-level finding (then 3: the model is not fit for TensorRT).
#include "ptq/lint.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "ptq/onnx.h"
#include "ptq/report.h"

namespace ptq::apps {

namespace {

struct LintCliOptions {
  std::string model;
  bool json = false;
  bool strict = false;
  bool summary = false;
  bool layers = false;
  bool list_rules = false;
  report::LintOptions lint;
};

nlohmann::ordered_json summary_json(const report::PrecisionSummary& s) {
  using Json = nlohmann::ordered_json;
  auto counts = [](const report::PrecisionCounts& c) {
    Json j = Json::object();
    for (size_t p = 0; p < report::kPrecisionCount; ++p) {
      j[std::string(report::precision_name(static_cast<report::Precision>(p)))] = c[p];
    }
    return j;
  };
  Json rows = Json::array();
  for (const report::OpTypeRow& r : s.by_op_type) {
    rows.push_back({{"op_type", r.op_type},
                    {"count", counts(r.count)},
                    {"param_bytes", counts(r.param_bytes)}});
  }
  Json layers = Json::array();
  for (const report::LayerInfo& l : s.layers) {
    layers.push_back({{"name", l.name},
                      {"op_type", l.op_type},
                      {"precision", report::precision_name(l.precision)},
                      {"param_bytes", l.param_bytes}});
  }
  return {{"weighted_ops", s.weighted_ops},
          {"weighted_int8", s.weighted_int8},
          {"quantize_nodes", s.quantize_nodes},
          {"dequantize_nodes", s.dequantize_nodes},
          {"param_bytes", s.total_param_bytes},
          {"count", counts(s.count)},
          {"by_op_type", rows},
          {"layers", layers}};
}

void print_layers(const report::PrecisionSummary& s) {
  size_t name_w = 4, op_w = 2;
  for (const report::LayerInfo& l : s.layers) {
    name_w = std::max(name_w, l.name.size());
    op_w = std::max(op_w, l.op_type.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<9}  {:>10}  {}\n", "node", name_w, "op", op_w, "precision",
             "params", "inputs");
  for (const report::LayerInfo& l : s.layers) {
    fmt::print("{:<{}}  {:<{}}  {:<9}  {:>10}  {}\n", l.name, name_w, l.op_type, op_w,
               report::precision_name(l.precision),
               l.param_bytes > 0 ? report::bytes_str(l.param_bytes) : "", l.inputs);
  }
  fmt::print("\n");
}

Status run_lint(const LintCliOptions& o) {
  if (o.list_rules) {
    for (const report::RuleInfo& r : report::lint_rules()) {
      fmt::print("{:<24} {:<8} {}\n", r.id, report::severity_name(r.severity), r.summary);
    }
    return Status::ok();
  }
  if (o.model.empty()) return usage_error("ptq lint: give a MODEL (or --rules)");
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  const std::vector<report::Finding> findings = report::lint(model, o.lint);
  if (o.json) {
    auto doc = nlohmann::ordered_json::parse(report::findings_json(findings));
    doc["model"] = o.model;
    if (o.summary || o.layers) doc["precision"] = summary_json(report::summarize_precision(model));
    fmt::print("{}\n", doc.dump(2));
  } else {
    if (o.summary || o.layers) {
      const report::PrecisionSummary s = report::summarize_precision(model);
      if (o.layers) print_layers(s);
      if (o.summary) fmt::print("{}\n", report::precision_text(s));
    }
    fmt::print("{}", report::findings_text(findings));
  }
  const int64_t errors = report::count(findings, report::Severity::kError);
  if (o.strict && errors > 0) {
    return invalid_input("{}: {} error-level lint finding(s) (--strict)", o.model, errors);
  }
  return Status::ok();
}

}  // namespace

Runner register_lint(CLI::App& app, GlobalOptions& /*global*/) {
  auto o = std::make_shared<LintCliOptions>();
  app.description("Q/DQ placement hazards for TensorRT, with a suggested fix per finding");
  app.add_option("model", o->model, "quantized ONNX model");
  app.add_flag("--json", o->json, "print JSON ({findings, counts, model[, precision]})");
  app.add_flag("--strict", o->strict, "exit 3 when there is an error-level finding");
  app.add_flag("--summary", o->summary, "also print the precision summary per op type");
  app.add_flag("--layers", o->layers, "also print every layer's precision and inputs");
  app.add_flag("--rules", o->list_rules, "list the rules checked and exit");
  app.add_option("--min-conv-channels", o->lint.min_conv_channels,
                 "report quantized convs with fewer input channels (0: never)")
      ->capture_default_str();
  app.add_option("--disable", o->lint.disabled_rules, "rule ids not to check")->delimiter(',');
  return [o]() { return run_lint(*o); };
}

}  // namespace ptq::apps
