// PlanOptions: parsing, validation, and matching exclusions and unit names against a model.
// g++ 12 with -O2 and sanitizers warns inside libstdc++'s <regex> (a known false positive,
// GCC bug 105562); the warning is about the library's code, not this file's.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "options_match.h"

namespace ptq::planner {

std::string_view target_name(Target target) {
  return target == Target::kOrt ? "ort" : "tensorrt";
}

Expected<Target> parse_target(std::string_view name) {
  if (name == "tensorrt" || name == "trt") return Target::kTensorRT;
  if (name == "ort" || name == "onnxruntime") return Target::kOrt;
  return usage_error("unknown target '{}' (choose tensorrt or ort)", name);
}

Expected<ActivationType> parse_activation_type(std::string_view name) {
  if (name == "int8") return ActivationType::kInt8;
  if (name == "uint8") return ActivationType::kUInt8;
  return usage_error("unknown activation type '{}' (choose int8 or uint8)", name);
}

std::string_view ort_provider_name(OrtProvider provider) {
  switch (provider) {
    case OrtProvider::kCpu: return "cpu";
    case OrtProvider::kCuda: return "cuda";
    case OrtProvider::kTensorRT: return "tensorrt";
  }
  return "?";
}

Expected<OrtProvider> parse_ort_provider(std::string_view name) {
  for (OrtProvider p : {OrtProvider::kCpu, OrtProvider::kCuda, OrtProvider::kTensorRT}) {
    if (name == ort_provider_name(p)) return p;
  }
  return usage_error("unknown ONNX Runtime execution provider '{}' (choose cpu, cuda or tensorrt)",
                     name);
}

ActivationChoice fastest_activation_type(Target target, OrtProvider provider) {
  if (target == Target::kTensorRT) return {ActivationType::kInt8, "TensorRT takes int8 only"};
  switch (provider) {
    case OrtProvider::kCpu:
      return {ActivationType::kUInt8,
              "ONNX Runtime's x86 CPU kernels run U8S8 (uint8 activations, int8 weights) far "
              "faster than S8S8"};
    case OrtProvider::kCuda:
      return {ActivationType::kInt8, "ONNX Runtime's CUDA kernels take symmetric int8 (S8S8)"};
    case OrtProvider::kTensorRT:
      return {ActivationType::kInt8, "TensorRT takes symmetric int8 only"};
  }
  return {};
}

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kActivation: return "activation";
    case Role::kWeight: return "weight";
    case Role::kBias: return "bias";
  }
  return "?";
}

Status PlanOptions::validate() const {
  if (target == Target::kTensorRT && activation_type == ActivationType::kUInt8) {
    return usage_error("uint8 activations need --target ort (TensorRT takes INT8 only)");
  }
  if (target == Target::kOrt && weights_float) {
    return usage_error("float weights with Q/DQ are a TensorRT option; ort stores int8 weights");
  }
  if (min_conv_channels < 0) {
    return usage_error("min_conv_channels must be >= 0 (got {})", min_conv_channels);
  }
  for (const std::string& u : only_units) {
    if (std::find(skip_units.begin(), skip_units.end(), u) != skip_units.end()) {
      return usage_error("unit '{}' is both in only_units and in skip_units", u);
    }
  }
  for (const auto& [unit, values] : bias_corrections) {
    for (double v : values) {
      if (!std::isfinite(v)) return usage_error("bias correction of '{}' is not finite", unit);
    }
  }
  return Status::ok();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string close_matches(std::string_view wanted, const std::vector<std::string>& names) {
  std::vector<std::pair<size_t, std::string>> scored;
  std::set<std::string> seen;
  const size_t limit = std::max<size_t>(3, wanted.size() / 3);
  for (const std::string& n : names) {
    if (n.empty() || !seen.insert(n).second) continue;
    const size_t d = edit_distance(wanted, n);
    if (d <= limit) scored.emplace_back(d, n);
  }
  std::sort(scored.begin(), scored.end());
  if (scored.empty()) return "no close match";
  std::string out = "did you mean";
  for (size_t i = 0; i < scored.size() && i < 5; ++i) {
    out += fmt::format("{} '{}'", i ? "," : "", scored[i].second);
  }
  return out + "?";
}

namespace {

// The nodes whose name is `pattern` or matches it as a whole-name ECMAScript regex.
std::vector<size_t> nodes_matching(const std::string& pattern,
                                   const std::vector<std::string>& names) {
  std::optional<std::regex> re;
  try {
    re.emplace(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    re.reset();  // not a regex: exact names only
  }
  std::vector<size_t> found;
  for (size_t n = 0; n < names.size(); ++n) {
    const std::string& name = names[n];
    const bool match = name == pattern || (re && std::regex_match(name, *re));
    if (!name.empty() && match) found.push_back(n);
  }
  return found;
}

void exclude(Marking& m, size_t n, std::string reason) {
  if (!m.excluded[n]) m.nodes[n].reason = std::move(reason);
  m.excluded[n] = true;
}

std::vector<std::string> node_names(const GraphView& view) {
  std::vector<std::string> names;
  for (size_t n = 0; n < view.size(); ++n) names.push_back(view.node(n).name);
  return names;
}

std::vector<std::string> node_op_types(const GraphView& view) {
  std::vector<std::string> op_types;
  for (size_t n = 0; n < view.size(); ++n) op_types.push_back(view.node(n).op_type);
  return op_types;
}

// A node pattern matching nothing is an error; an op type absent from the model a warning.
Status check_node_patterns(const std::vector<std::string>& patterns,
                           const std::vector<std::string>& names, std::string_view what) {
  for (const std::string& pattern : patterns) {
    if (nodes_matching(pattern, names).empty()) {
      return usage_error("{} '{}' matches no node name ({})", what, pattern,
                         close_matches(pattern, names));
    }
  }
  return Status::ok();
}

void check_op_types(Marking& m, const std::vector<std::string>& wanted,
                    const std::vector<std::string>& op_types, std::string_view what) {
  for (const std::string& op : wanted) {
    if (std::find(op_types.begin(), op_types.end(), op) != op_types.end()) continue;
    m.warnings.push_back(
        fmt::format("{} '{}' is not in the model ({})", what, op, close_matches(op, op_types)));
  }
}

// quantize_nodes / quantize_op_types: every node outside a non-empty list stays float.
void restrict_to_selection(Marking& m, const std::vector<std::string>& names,
                           const std::vector<std::string>& op_types) {
  const PlanOptions& o = m.options;
  std::vector<bool> named(names.size(), o.quantize_nodes.empty());
  for (const std::string& pattern : o.quantize_nodes) {
    for (size_t n : nodes_matching(pattern, names)) named[n] = true;
  }
  for (size_t n = 0; n < names.size(); ++n) {
    if (!named[n]) {
      exclude(m, n, "not among the nodes to quantize");
    } else if (!o.quantize_op_types.empty() &&
               std::find(o.quantize_op_types.begin(), o.quantize_op_types.end(), op_types[n]) ==
                   o.quantize_op_types.end()) {
      exclude(m, n, fmt::format("op type {} is not among the op types to quantize", op_types[n]));
    }
  }
}

}  // namespace

Status apply_exclusions(Marking& m) {
  const std::vector<std::string> names = node_names(m.view);
  const std::vector<std::string> op_types = node_op_types(m.view);
  PTQ_RETURN_IF_ERROR(check_node_patterns(m.options.exclude_nodes, names, "exclusion"));
  PTQ_RETURN_IF_ERROR(check_node_patterns(m.options.quantize_nodes, names, "node to quantize"));
  for (const std::string& pattern : m.options.exclude_nodes) {
    for (size_t n : nodes_matching(pattern, names)) {
      exclude(m, n, fmt::format("excluded by node pattern '{}'", pattern));
    }
  }
  for (const std::string& op : m.options.exclude_op_types) {
    for (size_t n = 0; n < names.size(); ++n) {
      if (op_types[n] == op) exclude(m, n, fmt::format("excluded op type {}", op));
    }
  }
  check_op_types(m, m.options.exclude_op_types, op_types, "excluded op type");
  check_op_types(m, m.options.quantize_op_types, op_types, "op type to quantize");
  restrict_to_selection(m, names, op_types);
  return Status::ok();
}

Status check_unit_names(const std::vector<Unit>& units, const PlanOptions& options) {
  std::vector<std::string> names;
  for (const Unit& u : units) names.push_back(u.name);
  for (const auto* list : {&options.only_units, &options.skip_units}) {
    for (const std::string& u : *list) {
      if (std::find(names.begin(), names.end(), u) == names.end()) {
        return usage_error("'{}' is not a quantization unit of this model ({})", u,
                           close_matches(u, names));
      }
    }
  }
  return Status::ok();
}

}  // namespace ptq::planner
