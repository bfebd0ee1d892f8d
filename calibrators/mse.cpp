// mse: the candidate range a = i * w (i = 128 … 2048) whose INT8 quantization of the bin centres
// has the least count-weighted squared error. Built with -ffp-contract=off (no FMA), so every
// implementation of the formula rounds alike.
#include <cmath>
#include <limits>
#include <vector>

#include "ptq/calibrators.h"

namespace ptq::calib {

std::optional<int> mse_best_bins(const HistogramView& hist) {
  if (!(hist.range > 0.0)) return std::nullopt;
  const double w = hist.bin_width();
  std::vector<int> used;  // bins with counts: the only terms of the sum
  for (int j = 0; j < kHistogramBins; ++j) {
    if (hist.counts[static_cast<size_t>(j)] != 0) used.push_back(j);
  }
  if (used.empty()) return std::nullopt;
  int best = -1;
  double best_err = std::numeric_limits<double>::infinity();
  for (int i = 128; i <= kHistogramBins; ++i) {
    const double a = static_cast<double>(i) * w;
    const double s = a / 127.0;
    double err = 0.0;
    for (int j : used) {
      const double c = (static_cast<double>(j) + 0.5) * w;
      // nearbyint rounds half to even in the default rounding mode.
      const double q = std::clamp(std::nearbyint(c / s), -127.0, 127.0) * s;
      const double d = c - q;
      err += static_cast<double>(hist.counts[static_cast<size_t>(j)]) * (d * d);
    }
    if (best < 0 || err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

double mse_amax(const HistogramView& hist, const MethodConfig& /*config*/) {
  if (!(hist.range > 0.0)) return 0.0;
  const std::optional<int> i = mse_best_bins(hist);
  if (!i) return hist.range;
  return static_cast<double>(*i) * hist.bin_width();
}

}  // namespace ptq::calib
