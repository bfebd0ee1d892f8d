// The error for a dim a placement decision needs but cannot see: which node, tensor and dim,
// and which graph inputs to bind (only those holding the symbol when it comes from them).
#include <fmt/format.h>

#include <algorithm>

#include "marking.h"

namespace ptq::planner {

namespace {

bool all_known(const std::optional<std::vector<ir::Dim>>& dims) {
  return dims &&
         std::all_of(dims->begin(), dims->end(), [](const ir::Dim& d) { return d.known(); });
}

bool holds_symbol(const std::optional<std::vector<ir::Dim>>& dims, const std::string& symbol) {
  return dims && std::any_of(dims->begin(), dims->end(),
                             [&](const ir::Dim& d) { return !d.known() && d.param == symbol; });
}

// NAME=1,<seq>,64: the dims known so far, a placeholder where one is missing.
std::string input_template(const std::string& name,
                           const std::optional<std::vector<ir::Dim>>& dims) {
  if (!dims) return name + "=<dims>";
  std::vector<std::string> parts;
  for (const ir::Dim& d : *dims) {
    parts.push_back(d.known() ? std::to_string(d.value)
                              : fmt::format("<{}>", d.param.empty() ? "?" : d.param));
  }
  return fmt::format("{}={}", name, fmt::join(parts, ","));
}

// The graph inputs whose shapes are not fully known yet; with a symbol, those that hold it
// when any does.
std::vector<std::string> inputs_to_bind(const GraphView& view, const std::string& symbol) {
  std::vector<std::string> unbound;
  std::vector<std::string> with_symbol;
  for (const ir::ValueInfo* v : view.graph().real_inputs()) {
    const auto dims = view.dims(v->name);
    if (all_known(dims)) continue;
    unbound.push_back(input_template(v->name, dims));
    if (!symbol.empty() && holds_symbol(dims, symbol)) with_symbol.push_back(unbound.back());
  }
  return with_symbol.empty() ? unbound : with_symbol;
}

}  // namespace

Status unresolved_error(const GraphView& view, const PlanOptions& options, const UnresolvedDim& d) {
  const std::string what = fmt::format(
      "{}: dim {} of input '{}' is {}", view.node(d.node).label(), d.dim, d.tensor,
      d.symbol.empty() ? std::string("unknown") : fmt::format("symbolic ('{}')", d.symbol));
  const std::vector<std::string> inputs = inputs_to_bind(view, d.symbol);
  if (inputs.empty()) {
    return invalid_input(
        "{} although every input shape is known (shape inference cannot "
        "follow it); exclude the node or quantize matrix-vector MatMuls too",
        what);
  }
  return invalid_input("{}; {} {}", what, options.shapes_remedy, fmt::join(inputs, ";"));
}

}  // namespace ptq::planner
