// The lint rules, one function per rule (lint_rules.cpp); lint.cpp runs them in catalogue order.
#pragma once

#include <string>
#include <vector>

#include "ptq/lint.h"
#include "qdq_view.h"

namespace ptq::report {

class LintContext {
 public:
  LintContext(const QdqView& view, const LintOptions& options, const RuleInfo& rule,
              std::vector<Finding>& out)
      : view(view), options(options), rule_(rule), out_(out) {}

  const QdqView& view;
  const LintOptions& options;

  // Records a finding of the running rule at node n.
  void add(size_t n, std::string tensor, std::string message, std::string fix);

 private:
  const RuleInfo& rule_;
  std::vector<Finding>& out_;
};

using RuleFn = void (*)(LintContext&);

void rule_unquantized_activation(LintContext& c);
void rule_unquantized_weight(LintContext& c);
void rule_missing_output_q(LintContext& c);
void rule_residual_skip_float(LintContext& c);
void rule_float_pool(LintContext& c);
void rule_concat_scales(LintContext& c);
void rule_missing_axis(LintContext& c);
void rule_zero_point(LintContext& c);
void rule_bias_qdq(LintContext& c);
void rule_output_qdq(LintContext& c);
void rule_small_conv(LintContext& c);
void rule_matrix_vector(LintContext& c);

}  // namespace ptq::report
