// erf for float32 without a libm call per element: a rational approximation (odd numerator,
// even denominator in x^2) on [-4, 4], where float's erf reaches +/-1, as Eigen and XLA compute
// it. The loop over a tensor then vectorises; libm's scalar erff was a fifth of a small
// transformer's forward pass (GELU). Accurate to a few float ulps (tested against float64).
// NaN stays NaN; +/-inf gives +/-1.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ptq::runtime::cpu {

inline float erf_float(float a) {
  const float x = std::max(std::min(a, 4.0f), -4.0f);  // NaN passes through
  const float x2 = x * x;
  float p = std::fma(x2, -2.72614225801306e-10f, 2.77068142495902e-08f);
  p = std::fma(x2, p, -2.10102402082508e-06f);
  p = std::fma(x2, p, -5.69250639462346e-05f);
  p = std::fma(x2, p, -7.34990630326855e-04f);
  p = std::fma(x2, p, -2.95459980854025e-03f);
  p = std::fma(x2, p, -1.60960333262415e-02f);
  float q = std::fma(x2, -1.45660718464996e-05f, -2.13374055278905e-04f);
  q = std::fma(x2, q, -1.68282697438203e-03f);
  q = std::fma(x2, q, -7.37332916720468e-03f);
  q = std::fma(x2, q, -1.42647390514189e-02f);
  return x * p / q;
}

// erf for any float type: the approximation for float, libm otherwise (double).
template <typename T>
T erf_of(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return erf_float(x);
  } else {
    return std::erf(x);
  }
}

}  // namespace ptq::runtime::cpu
