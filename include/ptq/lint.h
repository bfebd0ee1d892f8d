// Lint of Q/DQ placement (part of ptq_report): checks a quantized model against TensorRT's
// explicit-quantization placement rules (shared specs/quantization.md) and says, per finding,
// which node breaks which rule and how to fix it. See the Report section of docs/DESIGN.md.
//
//   std::vector<report::Finding> f = report::lint(model);
//   if (report::count(f, report::Severity::kError) > 0) …
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/ir.h"

namespace ptq::report {

enum class Severity { kInfo, kWarning, kError };
std::string_view severity_name(Severity s);  // "info" | "warning" | "error"

// One broken rule at one place of the graph.
struct Finding {
  Severity severity = Severity::kWarning;
  std::string rule;     // rule id, e.g. "unquantized-activation" (see lint_rules())
  std::string node;     // the node at fault (its name, or "<op>_<index>" when unnamed)
  std::string op_type;  // that node's op type
  std::string tensor;   // the tensor concerned, when there is one
  std::string message;  // what is wrong, one line
  std::string fix;      // what to change, one line
};

// The catalogue of rules, in the order lint() runs them.
struct RuleInfo {
  std::string_view id;
  Severity severity;
  std::string_view summary;
};
std::span<const RuleInfo> lint_rules();

struct LintOptions {
  // Quantized convs with fewer input channels are reported (rule "small-conv"); 0 disables.
  int64_t min_conv_channels = 16;
  // Rule ids not to run (unknown ids are ignored).
  std::vector<std::string> disabled_rules;
};

// Runs every rule; findings in rule order, then graph order. A float model yields none.
std::vector<Finding> lint(const ir::Model& model, const LintOptions& options = {});

// Number of findings of one severity.
int64_t count(std::span<const Finding> findings, Severity severity);

// Findings as a JSON document: {"findings": [{severity, rule, node, op_type, tensor, message,
// fix}], "counts": {"error": n, "warning": n, "info": n}}.
std::string findings_json(std::span<const Finding> findings);

// Findings as aligned text lines ("error   unquantized-activation  conv2: … (fix: …)"), and a
// closing count line; "no findings" when empty.
std::string findings_text(std::span<const Finding> findings);

}  // namespace ptq::report
