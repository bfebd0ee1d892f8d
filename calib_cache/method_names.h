// The calibration methods' names in other tools' files, from the calibrator registry
// (ptq/calibrators.inc), private to calib_cache: this module sits below ptq_calibrators, so it
// reads the registry's list itself rather than link to it.
#pragma once

#include <string_view>

namespace ptq::calib::detail {

struct MethodNames {
  std::string_view method;  // ptqkit's name ("entropy")
  std::string_view trt;     // TensorRT cache header algorithm; "" when TensorRT has none
  std::string_view ort;     // ONNX Runtime CalibrationMethod member; "" when it has none
};

inline constexpr MethodNames kMethodNames[] = {
#define PTQ_CALIBRATOR(name, trt, ort, weights, summary) {#name, trt, ort},
#define PTQ_CALIBRATOR_PARAM(method, param, lowest, highest, help)
#include "ptq/calibrators.inc"
#undef PTQ_CALIBRATOR
#undef PTQ_CALIBRATOR_PARAM
};

// The names of `method`, or null for a method the registry does not know.
inline const MethodNames* method_names(std::string_view method) {
  for (const MethodNames& m : kMethodNames) {
    if (m.method == method) return &m;
  }
  return nullptr;
}

}  // namespace ptq::calib::detail
