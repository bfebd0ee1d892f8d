#include "method_options.h"

#include <set>

#include <fmt/format.h>

namespace ptq::apps {

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
  CLI::Option* method = app.add_option("--method", config.name, help);
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
