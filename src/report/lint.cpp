// lint(): runs the rules of lint_rules.cpp in catalogue order; findings as JSON or text.
#include "ptq/lint.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "lint_rules.h"

namespace ptq::report {

namespace {

struct RuleEntry {
  RuleInfo info;
  RuleFn run;
};

constexpr std::array kRules = {
    RuleEntry{{"unquantized-activation", Severity::kError,
               "weighted op with quantized inputs reading an activation in float"},
              rule_unquantized_activation},
    RuleEntry{{"unquantized-weight", Severity::kError,
               "weighted op with quantized activations reading its weight in float"},
              rule_unquantized_weight},
    RuleEntry{{"missing-output-q", Severity::kWarning,
               "INT8 weighted op whose float output feeds only INT8 readers (reformat layer)"},
              rule_missing_output_q},
    RuleEntry{{"residual-skip-float", Severity::kWarning,
               "residual Add after an INT8 weighted op whose skip input is not quantized"},
              rule_residual_skip_float},
    RuleEntry{{"float-pool", Severity::kWarning, "pooling left float between INT8 layers"},
              rule_float_pool},
    RuleEntry{{"concat-scales", Severity::kWarning,
               "Concat whose inputs have different scales (or are partly float)"},
              rule_concat_scales},
    RuleEntry{{"missing-axis", Severity::kError, "per-channel Q/DQ without an axis attribute"},
              rule_missing_axis},
    RuleEntry{{"zero-point", Severity::kError, "non-zero or uint8 zero point"}, rule_zero_point},
    RuleEntry{{"bias-qdq", Severity::kError, "Q/DQ on the bias of a weighted op"}, rule_bias_qdq},
    RuleEntry{{"output-qdq", Severity::kWarning, "graph output produced by a Q/DQ"},
              rule_output_qdq},
    RuleEntry{{"small-conv", Severity::kWarning, "quantized conv with fewer than 16 channels"},
              rule_small_conv},
    RuleEntry{{"matrix-vector", Severity::kWarning, "quantized matrix-vector MatMul"},
              rule_matrix_vector},
};

std::array<RuleInfo, kRules.size()> rule_infos() {
  std::array<RuleInfo, kRules.size()> out{};
  for (size_t i = 0; i < kRules.size(); ++i) out[i] = kRules[i].info;
  return out;
}

}  // namespace

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "?";
}

std::span<const RuleInfo> lint_rules() {
  static const std::array<RuleInfo, kRules.size()> infos = rule_infos();
  return infos;
}

std::vector<Finding> lint(const ir::Model& model, const LintOptions& options) {
  const QdqView view(model);
  std::vector<Finding> findings;
  for (const RuleEntry& r : kRules) {
    const auto& off = options.disabled_rules;
    if (std::find(off.begin(), off.end(), r.info.id) != off.end()) continue;
    LintContext context(view, options, r.info, findings);
    r.run(context);
  }
  return findings;
}

int64_t count(std::span<const Finding> findings, Severity severity) {
  return std::count_if(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.severity == severity; });
}

std::string findings_json(std::span<const Finding> findings) {
  using Json = nlohmann::ordered_json;
  Json list = Json::array();
  for (const Finding& f : findings) {
    list.push_back({{"severity", severity_name(f.severity)},
                    {"rule", f.rule},
                    {"node", f.node},
                    {"op_type", f.op_type},
                    {"tensor", f.tensor},
                    {"message", f.message},
                    {"fix", f.fix}});
  }
  Json counts = {{"error", count(findings, Severity::kError)},
                 {"warning", count(findings, Severity::kWarning)},
                 {"info", count(findings, Severity::kInfo)}};
  Json doc = {{"findings", list}, {"counts", counts}};
  return doc.dump(2) + "\n";
}

std::string findings_text(std::span<const Finding> findings) {
  if (findings.empty()) return "no findings\n";
  size_t rule_width = 4;
  for (const Finding& f : findings) rule_width = std::max(rule_width, f.rule.size());
  std::string out;
  for (const Finding& f : findings) {
    out +=
        fmt::format("{:<7}  {:<{}}  {}: {}\n         {:<{}}  fix: {}\n", severity_name(f.severity),
                    f.rule, rule_width, f.node, f.message, "", rule_width, f.fix);
  }
  out += fmt::format("{} error(s), {} warning(s), {} info\n", count(findings, Severity::kError),
                     count(findings, Severity::kWarning), count(findings, Severity::kInfo));
  return out;
}

}  // namespace ptq::report
