// The quantize options a calibration cache records (see calibration.h, "quantize settings"):
// one row per option, its cache key, its flag and how it reads and writes PlanOptions.
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ptq/calibration.h"

namespace ptq::calibration {

namespace {

using Get = std::string (*)(const QuantizeSettings&);
using Set = Status (*)(const std::string&, QuantizeSettings&);

struct Row {
  std::string_view key;   // in the cache's "options" object
  std::string_view flag;  // the command-line option that sets it
  Get get;
  Set set;
  // The weights apply() quantizes depend on it, so the cache's bias corrections were measured
  // for its recorded value.
  bool shapes_weights = false;
};

std::string yes_no(bool v) { return v ? "true" : "false"; }

Expected<bool> boolean(const std::string& v, std::string_view key) {
  if (v == "true") return true;
  if (v == "false") return false;
  return invalid_input("recorded option {} is '{}', not true or false", key, v);
}

std::string joined(const std::vector<std::string>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t comma = s.find(','); ; comma = s.find(',', start)) {
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

#define PTQ_BOOL_ROW(KEY, FLAG, EXPR, WEIGHTS)                                               \
  Row {                                                                                      \
    KEY, FLAG, [](const QuantizeSettings& s) { return yes_no(s.EXPR); },                     \
        [](const std::string& v, QuantizeSettings& s) -> Status {                            \
          PTQ_ASSIGN_OR_RETURN(s.EXPR, boolean(v, KEY));                                     \
          return Status::ok();                                                               \
        },                                                                                   \
        WEIGHTS                                                                              \
  }

const Row kRows[] = {
    {"target", "--target",
     [](const QuantizeSettings& s) { return std::string(planner::target_name(s.plan.target)); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       PTQ_ASSIGN_OR_RETURN(s.plan.target, planner::parse_target(v));
       return Status::ok();
     }},
    {"activation_type", "--activation-type",
     [](const QuantizeSettings& s) {
       const bool uint8 = s.plan.activation_type == planner::ActivationType::kUInt8;
       return std::string(uint8 ? "uint8" : "int8");
     },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       PTQ_ASSIGN_OR_RETURN(s.plan.activation_type, planner::parse_activation_type(v));
       return Status::ok();
     }},
    {"exclude", "--exclude", [](const QuantizeSettings& s) { return joined(s.plan.exclude_nodes); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       s.plan.exclude_nodes = split(v);
       return Status::ok();
     }},
    {"exclude_op_types", "--exclude-op-types",
     [](const QuantizeSettings& s) { return joined(s.plan.exclude_op_types); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       s.plan.exclude_op_types = split(v);
       return Status::ok();
     }},
    {"nodes_to_quantize", "--nodes-to-quantize",
     [](const QuantizeSettings& s) { return joined(s.plan.quantize_nodes); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       s.plan.quantize_nodes = split(v);
       return Status::ok();
     }},
    {"op_types_to_quantize", "--op-types-to-quantize",
     [](const QuantizeSettings& s) { return joined(s.plan.quantize_op_types); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       s.plan.quantize_op_types = split(v);
       return Status::ok();
     }},
    {"min_conv_channels", "--min-conv-channels",
     [](const QuantizeSettings& s) { return std::to_string(s.plan.min_conv_channels); },
     [](const std::string& v, QuantizeSettings& s) -> Status {
       char* end = nullptr;
       s.plan.min_conv_channels = std::strtoll(v.c_str(), &end, 10);
       if (v.empty() || *end != '\0') return invalid_input("recorded min_conv_channels '{}'", v);
       return Status::ok();
     }},
    PTQ_BOOL_ROW("per_tensor_weights", "--per-tensor-weights", plan.per_tensor_weights, true),
    PTQ_BOOL_ROW("weights_float", "--weights-float", plan.weights_float, false),
    PTQ_BOOL_ROW("quantize_matrix_vector", "--quantize-matrix-vector", plan.quantize_matrix_vector,
                 false),
    PTQ_BOOL_ROW("fold_batchnorm", "--no-fold-batchnorm", plan.fold_batchnorm, true),
    PTQ_BOOL_ROW("bias_correction", "--bias-correction", bias_correction, false),
};

#undef PTQ_BOOL_ROW

}  // namespace

std::vector<std::string> recorded_option_flags() {
  std::vector<std::string> out;
  for (const Row& r : kRows) out.emplace_back(r.flag);
  return out;
}

std::string recorded_option_flag(std::string_view key) {
  for (const Row& r : kRows) {
    if (r.key == key) return std::string(r.flag);
  }
  return "";
}

void record_settings(const QuantizeSettings& settings, calib::CalibrationTable& table) {
  for (const Row& r : kRows) table.options[std::string(r.key)] = r.get(settings);
}

Expected<calib::Warnings> adopt_settings(const calib::CalibrationTable& table,
                                         std::string_view cache_file,
                                         const std::set<std::string>& given, bool force,
                                         QuantizeSettings& settings) {
  const QuantizeSettings as_given = settings;
  for (const Row& r : kRows) {
    auto it = table.options.find(std::string(r.key));
    if (it != table.options.end() && !given.contains(std::string(r.flag))) {
      PTQ_RETURN_IF_ERROR(r.set(it->second, settings));
    }
  }
  PTQ_RETURN_IF_ERROR(settings.plan.validate());
  calib::Warnings warnings;
  if (!settings.bias_correction || table.bias_corrections.empty()) return warnings;
  for (const Row& r : kRows) {
    auto it = table.options.find(std::string(r.key));
    if (!r.shapes_weights || it == table.options.end() || r.get(as_given) == it->second ||
        !given.contains(std::string(r.flag))) {
      continue;
    }
    if (!force) {
      return invalid_input("{} gives {}={} but the bias corrections of {} were measured with {}; "
                           "leave {} out, or --force to use them anyway",
                           r.flag, r.key, r.get(as_given), cache_file, it->second, r.flag);
    }
    warnings.push_back(fmt::format("--force: {} {}={}: the cache's bias corrections were measured "
                                   "with {}", r.flag, r.key, r.get(as_given), it->second));
  }
  return warnings;
}

}  // namespace ptq::calibration
