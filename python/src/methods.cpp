// Calibration methods by ptqkit's names or ONNX Runtime's and ModelOpt's
// (calib::canonical_calibrator_name), so an ORT script's calibrate_method=
// CalibrationMethod.MinMax keeps working.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "bindings.h"

namespace ptq::python {

namespace {

std::string method_text(const py::object& method) {
  if (py::hasattr(method, "name") && !py::isinstance<py::str>(method)) {  // an enum member
    return py::str(method.attr("name")).cast<std::string>();
  }
  return py::str(method).cast<std::string>();
}

}  // namespace

calib::MethodConfig method_config(const py::object& method, double percentile) {
  calib::MethodConfig config;  // None: the library's default
  config.percentile = percentile;
  if (!method.is_none()) {
    // Any letter case: ONNX Runtime's "MinMax" and ptqkit's enum member MSE alike.
    const std::string text = method_text(method);
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string_view canonical = calib::canonical_calibrator_name(lower);
    config.name = canonical.empty() ? text : std::string(canonical);
  }
  throw_if_error(config.validate());
  return config;
}

}  // namespace ptq::python
