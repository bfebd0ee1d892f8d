// Calibration methods by ptqkit's names or ONNX Runtime's (the registry, ptq/calibrators.inc,
// records both), so an ORT script's calibrate_method=CalibrationMethod.MinMax keeps working.
#include <cctype>
#include <string>
#include <string_view>

#include "bindings.h"

namespace ptq::python {

namespace {

bool same_letters(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

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
    const std::string text = method_text(method);
    config.name = text;
    for (const calib::CalibratorInfo& c : calib::calibrators()) {
      if (same_letters(text, c.name) || (!c.ort_name.empty() && same_letters(text, c.ort_name))) {
        config.name = std::string(c.name);
      }
    }
  }
  throw_if_error(config.validate());
  return config;
}

}  // namespace ptq::python
