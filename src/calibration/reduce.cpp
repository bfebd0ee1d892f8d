// One reduction call per kind of statistic over all tensors at once (docs/DISTRIBUTED.md gives
// the bytes): a call per tensor would pay the network's latency hundreds of times.
#include "reduce.h"

#include <algorithm>
#include <limits>
#include <span>

namespace ptq::calibration {

calib::CalibrationTable reduce_ranges(const calib::Collector& local,
                                      const std::vector<std::string>& tensors,
                                      dist::Communicator& comm) {
  const size_t n = tensors.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> mins(n, inf), maxs(n, -inf), abs_maxs(n, 0.0);
  std::vector<int64_t> counts(3 * n, 0);  // per tensor: seen, finite count, non-finite count
  for (size_t i = 0; i < n; ++i) {
    auto it = local.tensors().find(tensors[i]);
    if (it == local.tensors().end()) continue;
    const calib::TensorRange r = it->second.range_result();
    if (r.count > 0) {  // a tensor of only non-finite values has no min/max yet
      mins[i] = r.min;
      maxs[i] = r.max;
      abs_maxs[i] = it->second.abs_max();
    }
    counts[3 * i] = 1;
    counts[3 * i + 1] = r.count;
    counts[3 * i + 2] = r.nonfinite;
  }
  comm.min(std::span<double>(mins));
  comm.max(std::span<double>(maxs));
  comm.max(std::span<double>(abs_maxs));
  comm.sum(std::span<int64_t>(counts));
  calib::CalibrationTable table;
  table.method = "minmax";
  for (size_t i = 0; i < n; ++i) {
    if (counts[3 * i] == 0) continue;
    calib::TensorRange r;
    r.count = counts[3 * i + 1];
    r.nonfinite = counts[3 * i + 2];
    if (r.count > 0) {
      r.min = mins[i];
      r.max = maxs[i];
    }
    r.amax = abs_maxs[i];
    table.tensors.emplace(tensors[i], r);
  }
  return table;
}

Expected<calib::Collector> collector_of(const calib::CalibrationTable& ranges,
                                        const calib::CalibrationTable* common,
                                        calib::CollectorOptions options) {
  calib::Collector c(options);
  PTQ_RETURN_IF_ERROR(c.restore_ranges(ranges));
  PTQ_RETURN_IF_ERROR(c.finish_ranges(common));
  return c;
}

Status reduce_histograms(const calib::Collector& local, calib::Collector& total,
                         dist::Communicator& comm) {
  constexpr size_t kBins = calib::kHistogramBins;
  std::vector<uint64_t> counts(local.tensors().size() * kBins);
  size_t i = 0;
  for (const auto& [name, t] : local.tensors()) {
    std::copy(t.counts().begin(), t.counts().end(),
              counts.begin() + static_cast<ptrdiff_t>(i * kBins));
    ++i;
  }
  comm.sum(std::span<uint64_t>(counts));
  i = 0;
  for (const auto& [name, t] : local.tensors()) {
    const std::span<const uint64_t> mine(counts.data() + i * kBins, kBins);
    PTQ_RETURN_IF_ERROR(total.add_histogram(name, [&](double, std::span<uint64_t> c) {
      for (size_t b = 0; b < kBins; ++b) c[b] += mine[b];
    }));
    ++i;
  }
  return Status::ok();
}

}  // namespace ptq::calibration
