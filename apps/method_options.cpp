#include "method_options.h"

#include <set>

#include <fmt/format.h>

namespace ptq::apps {

namespace {

// What ONNX Runtime's and ModelOpt's users type (--calibration-method max): the registered
// name it stands for; an unknown name passes on to MethodConfig::validate's error.
CLI::Validator canonical_method() {
  return CLI::Validator(
      [](std::string& name) {
        const std::string_view canonical = calib::canonical_calibrator_name(name);
        if (!canonical.empty()) name = std::string(canonical);
        return std::string();
      },
      "");
}

constexpr const char* kMethodAliases =
    " (also ONNX Runtime's MinMax, Entropy, Percentile and ModelOpt's max = minmax)";

}  // namespace

Status MethodOptions::check_given_with_method(const calib::MethodConfig& config) const {
  if (!config.name.empty()) return Status::ok();
  for (const auto& [param, option] : params) {
    if (option->count() > 0) {
      return usage_error("--{} needs --method {}", param->name, param->method);
    }
  }
  return Status::ok();
}

MethodOptions add_method_options(CLI::App& app, calib::MethodConfig& config,
                                 const MethodOptionsConfig& options) {
  const std::string choices = calib::calibrator_choices();
  const std::string help =
      (options.what.empty() ? choices : options.what + ": " + choices) + options.suffix;
  CLI::Option* method = app.add_option("--method,--calibration-method,--calibration_method",
                                       config.name, help + kMethodAliases);
  method->transform(canonical_method());
  if (options.show_default) method->capture_default_str();
  MethodOptions added;
  std::set<std::string_view> named;
  for (const calib::CalibratorParam& p : calib::calibrator_params()) {
    if (!named.insert(p.name).second) continue;  // shared by several methods: one option
    CLI::Option* o = app.add_option("--" + std::string(p.name), config.*p.field,
                                    std::string(p.help));
    if (options.show_default) o->capture_default_str();
    added.params.emplace_back(&p, o);
  }
  return added;
}

std::string trt_algo_help() {
  std::vector<std::string_view> lacking;
  for (const calib::CalibratorInfo& c : calib::calibrators()) {
    if (c.trt_name.empty()) lacking.push_back(c.name);
  }
  return fmt::format("TensorRT cache algorithm name (default: the method's own; "
                     "EntropyCalibration2 for {}, which TensorRT lacks)",
                     fmt::join(lacking, " and "));
}

}  // namespace ptq::apps
