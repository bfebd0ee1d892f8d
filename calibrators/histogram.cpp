// The reference (serial) statistics of a host float buffer: the min-max pass and the |x|
// histogram. runtime/cpu/tensor_statistics.cpp is the parallel variant; tests hold them equal.
#include <cmath>

#include "ptq/calibrators.h"

namespace ptq::calib {

void add_to_histogram(std::span<const float> values, double T, std::span<uint64_t> counts) {
  for (float x : values) {
    if (!std::isfinite(x)) continue;
    ++counts[static_cast<size_t>(histogram_bin(std::fabs(static_cast<double>(x)), T))];
  }
}

BatchRange batch_range(std::span<const float> values) {
  BatchRange r;
  bool any = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i];
    if (!std::isfinite(x)) {
      if (r.nonfinite++ == 0) r.first_nonfinite = static_cast<int64_t>(i);
      continue;
    }
    const double v = x;
    if (!any) {
      r.min = r.max = v;
      any = true;
    } else {
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
    }
    r.abs_max = std::max(r.abs_max, std::fabs(v));
  }
  // -0.0 and +0.0 compare equal, so which one min/max keep depends on the order: normalise.
  r.min += 0.0;
  r.max += 0.0;
  return r;
}

}  // namespace ptq::calib
