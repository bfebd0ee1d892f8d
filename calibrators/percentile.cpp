// percentile: the first bin whose cumulative share reaches p / 100; amax is its upper edge.
#include "ptq/calibrators.h"

namespace ptq::calib {

std::optional<int> percentile_bin(const HistogramView& hist, double percentile) {
  if (!(hist.range > 0.0)) return std::nullopt;
  uint64_t total = 0;
  for (uint64_t c : hist.counts) total += c;
  if (total == 0) return std::nullopt;
  const double target = percentile / 100.0;
  uint64_t cum = 0;  // integer prefix sums: exact, so the chosen bin is too
  for (int k = 0; k < kHistogramBins; ++k) {
    cum += hist.counts[static_cast<size_t>(k)];
    if (static_cast<double>(cum) / static_cast<double>(total) >= target) return k;
  }
  return kHistogramBins - 1;
}

double percentile_amax(const HistogramView& hist, const MethodConfig& config) {
  if (!(hist.range > 0.0)) return 0.0;
  const std::optional<int> k = percentile_bin(hist, config.percentile);
  if (!k) return hist.range;
  return static_cast<double>(*k + 1) * hist.bin_width();
}

}  // namespace ptq::calib
