// Internal to the optimizer's rewrites (optimizer.h): questions a pattern asks about a plan,
// and what a pattern proposes. The patterns themselves are in rewrite_patterns.cpp; whether a
// proposal is sound (its inner values read only inside it) is checked in rewrites.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan.h"
#include "ptq/ir.h"

namespace ptq::runtime {

// Steps a pattern found and the node that computes their output at once.
struct Candidate {
  std::vector<size_t> steps;
  int32_t output = -1;
  ir::Node node;  // op type and attributes; inputs by value name, outputs filled in later
  std::vector<int32_t> reduced;  // see Rewrite::reduced
  int64_t reduced_axis = -1;
  bool exact = false;
  // Constants the node reads that the plan lacks: (name the node uses, value).
  std::vector<std::pair<std::string, ir::Tensor>> constants;
};

class Matcher {
 public:
  Matcher(const Plan& plan, const ir::Graph& graph);

  const Plan& plan() const { return plan_; }
  const ir::Node& node(size_t step) const { return graph_.nodes[plan_.steps[step].node]; }
  bool is(size_t step, std::string_view op) const;
  // Input i of a step as a value id; -1 when absent.
  int32_t in(size_t step, size_t i) const;
  // The step's one output; -1 unless it has exactly one.
  int32_t out(size_t step) const;
  const std::string& name(int32_t value) const { return plan_.values[value].name; }
  // The step making `value` when it is a single-output `op`.
  std::optional<size_t> made_by(int32_t value, std::string_view op) const;
  // The one step reading `value` when it is an `op` and the value is no graph output.
  std::optional<size_t> only_reader(int32_t value, std::string_view op) const;
  // Of a two-input step reading `value` once, the other input; -1 otherwise.
  int32_t other(size_t step, int32_t value) const;
  // The constant behind a value (initializer, Constant node, folded value), or null.
  const ir::Tensor* constant(int32_t value) const;
  // The number in a float32 constant holding one, whose rank is at most 1.
  std::optional<double> scalar(int32_t value) const;
  // A step reading `value` once through a two-input `op` whose other input is a float32
  // constant near `want` (relative 1e-6): that step.
  std::optional<size_t> with_constant(int32_t value, std::string_view op, double want) const;
  // The only reader of `value` when it multiplies it by `factor` (Mul by it, or Div by 1/factor).
  std::optional<size_t> scaled(int32_t value, double factor) const;

 private:
  const Plan& plan_;
  const ir::Graph& graph_;
  std::vector<std::vector<size_t>> readers_;  // by value id: the steps reading it, each once
};

// Appends the candidates of each pattern, the larger patterns first.
void find_candidates(const Matcher& m, int64_t opset, std::vector<Candidate>& out);

}  // namespace ptq::runtime
