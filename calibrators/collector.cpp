// Streaming statistics per tensor: phase 1 (min-max), then phase 2 (histogram over a range fixed
// by phase 1). Counts are integers and min/max are order-free, so any batching, order, thread
// count or sharding gives the same bits.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ptq/calibrators.h"

namespace ptq::calib {

namespace {

std::string sample_of(int64_t index, int64_t elements, SampleSpan samples) {
  if (samples.count > 0 && elements > 0 && elements % samples.count == 0 && index >= 0) {
    return fmt::format("sample {}", samples.first + index / (elements / samples.count));
  }
  return fmt::format("samples {}..{}", samples.first, samples.first + samples.count - 1);
}

}  // namespace

TensorCollector::TensorCollector(std::string name, CollectorOptions options)
    : name_(std::move(name)), options_(options) {}

Status TensorCollector::add_range(const BatchRange& batch, int64_t elements, SampleSpan samples) {
  if (finished_) return runtime_error("tensor '{}': range pass already finished", name_);
  if (batch.nonfinite > 0 && !options_.ignore_nonfinite) {
    return invalid_input(
        "tensor '{}': non-finite value (NaN or Inf) in {} (--ignore-nonfinite skips them)", name_,
        sample_of(batch.first_nonfinite, elements, samples));
  }
  const int64_t finite = elements - batch.nonfinite;
  if (finite > 0) {
    if (count_ == 0) {
      min_ = batch.min;
      max_ = batch.max;
    } else {
      min_ = std::min(min_, batch.min);
      max_ = std::max(max_, batch.max);
    }
    abs_max_ = std::max(abs_max_, batch.abs_max);
    min_ += 0.0;  // -0.0 -> +0.0: keep the bits order-independent
    max_ += 0.0;
  }
  count_ += finite;
  nonfinite_ += batch.nonfinite;
  return {};
}

Status TensorCollector::add_range(std::span<const float> values, SampleSpan samples) {
  return add_range(batch_range(values), static_cast<int64_t>(values.size()), samples);
}

Status TensorCollector::restore_range(const TensorRange& range) {
  if (finished_ || count_ != 0 || nonfinite_ != 0) {
    return runtime_error("tensor '{}': cannot restore a range over collected statistics", name_);
  }
  if (range.count > 0 && (std::isnan(range.min) || std::isnan(range.max))) {
    return invalid_input("tensor '{}': the ranges table records no min/max", name_);
  }
  if (range.count > 0) {
    min_ = range.min;
    max_ = range.max;
    abs_max_ = range.abs_max();
  }
  count_ = range.count;
  nonfinite_ = range.nonfinite;
  return {};
}

Status TensorCollector::finish_ranges(std::optional<double> common_range) {
  if (finished_) return runtime_error("tensor '{}': range pass finished twice", name_);
  if (common_range) {
    if (!(*common_range >= abs_max_) || !std::isfinite(*common_range)) {
      return invalid_input(
          "tensor '{}': common histogram range {} is below this data's max |x| {}: the ranges "
          "table does not cover these samples",
          name_, *common_range, abs_max_);
    }
    T_ = *common_range;
  } else {
    T_ = abs_max_;
  }
  finished_ = true;
  return {};
}

Status TensorCollector::add_histogram(
    const std::function<void(double T, std::span<uint64_t> counts)>& fill) {
  if (!finished_) return runtime_error("tensor '{}': histogram before the range pass ended", name_);
  fill(T_, std::span<uint64_t>(counts_));
  has_histogram_ = true;
  return {};
}

Status TensorCollector::add_histogram(std::span<const float> values) {
  return add_histogram([&](double T, std::span<uint64_t> c) { add_to_histogram(values, T, c); });
}

Status TensorCollector::merge(const TensorCollector& other) {
  if (other.name_ != name_) {
    return runtime_error("cannot merge statistics of tensor '{}' into '{}'", other.name_, name_);
  }
  if (other.finished_ != finished_) {
    return runtime_error("tensor '{}': cannot merge statistics of different phases", name_);
  }
  if (finished_ && other.T_ != T_) {
    return invalid_input(
        "tensor '{}': histogram ranges differ ({} vs {}); shards must share the ranges of the "
        "merged first pass",
        name_, T_, other.T_);
  }
  if (other.count_ > 0) {
    if (count_ == 0) {
      min_ = other.min_;
      max_ = other.max_;
    } else {
      min_ = std::min(min_, other.min_);
      max_ = std::max(max_, other.max_);
    }
    abs_max_ = std::max(abs_max_, other.abs_max_);
  }
  count_ += other.count_;
  nonfinite_ += other.nonfinite_;
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  has_histogram_ = has_histogram_ || other.has_histogram_;
  return {};
}

int64_t TensorCollector::histogram_total() const {
  return static_cast<int64_t>(std::accumulate(counts_.begin(), counts_.end(), uint64_t{0}));
}

TensorRange TensorCollector::range_result() const {
  TensorRange r;
  r.amax = abs_max_;
  r.min = min_;
  r.max = max_;
  r.count = count_;
  r.nonfinite = nonfinite_;
  return r;
}

Expected<TensorRange> TensorCollector::result(const MethodConfig& config) const {
  TensorRange r = range_result();
  if (!has_histogram_) {
    if (config.name == "minmax") return r;
    return runtime_error("tensor '{}' was not seen in the histogram pass (method '{}' needs it)",
                         name_, config.name);
  }
  if (histogram_total() != count_) {
    return runtime_error(
        "tensor '{}': the histogram pass saw {} finite values, the range pass {}: both passes "
        "must see the same samples",
        name_, histogram_total(), count_);
  }
  r.hist_max = T_;
  r.histogram.assign(counts_.begin(), counts_.end());
  PTQ_ASSIGN_OR_RETURN(r.amax, compute_amax(HistogramView{T_, counts_}, config));
  return r;
}

// ---- Collector ------------------------------------------------------------------------------

Collector::Collector(CollectorOptions options) : options_(options) {}

TensorCollector& Collector::get(const std::string& tensor) {
  auto it = tensors_.find(tensor);
  if (it == tensors_.end()) it = tensors_.emplace(tensor, TensorCollector(tensor, options_)).first;
  return it->second;
}

Status Collector::add_range(const std::string& tensor, const BatchRange& batch, int64_t elements,
                            SampleSpan samples) {
  if (finished_) return runtime_error("tensor '{}': range pass already finished", tensor);
  return get(tensor).add_range(batch, elements, samples);
}

Status Collector::add_range(const std::string& tensor, std::span<const float> values,
                            SampleSpan samples) {
  if (finished_) return runtime_error("tensor '{}': range pass already finished", tensor);
  return get(tensor).add_range(values, samples);
}

Status Collector::restore_ranges(const CalibrationTable& ranges) {
  if (finished_) return runtime_error("cannot restore ranges after the range pass ended");
  for (const auto& [name, range] : ranges.tensors) {
    PTQ_RETURN_IF_ERROR(get(name).restore_range(range));
  }
  return {};
}

Status Collector::finish_ranges(const CalibrationTable* common) {
  if (finished_) return runtime_error("range pass finished twice");
  for (auto& [name, t] : tensors_) {
    std::optional<double> T;
    if (common != nullptr) {
      const TensorRange* r = common->find(name);
      if (r == nullptr) return invalid_input("tensor '{}' is not in the common ranges table", name);
      const double amax_max = r->count > 0 ? r->abs_max() : 0.0;
      if (std::isnan(amax_max)) {
        return invalid_input("tensor '{}': the common ranges table records no min/max", name);
      }
      T = amax_max;
    }
    PTQ_RETURN_IF_ERROR(t.finish_ranges(T));
  }
  finished_ = true;
  return {};
}

Status Collector::add_histogram(
    const std::string& tensor,
    const std::function<void(double T, std::span<uint64_t> counts)>& fill) {
  auto it = tensors_.find(tensor);
  if (it == tensors_.end()) {
    return runtime_error("tensor '{}' was not seen in the range pass", tensor);
  }
  return it->second.add_histogram(fill);
}

Status Collector::add_histogram(const std::string& tensor, std::span<const float> values) {
  return add_histogram(tensor, [&](double T, std::span<uint64_t> c) {
    add_to_histogram(values, T, c);
  });
}

std::optional<double> Collector::range(const std::string& tensor) const {
  auto it = tensors_.find(tensor);
  if (it == tensors_.end() || !it->second.ranges_finished()) return std::nullopt;
  return it->second.range();
}

Status Collector::merge(const Collector& other) {
  if (other.finished_ != finished_) {
    return runtime_error("cannot merge collectors of different phases");
  }
  for (const auto& [name, t] : other.tensors_) {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
      tensors_.emplace(name, t);
    } else {
      PTQ_RETURN_IF_ERROR(it->second.merge(t));
    }
  }
  return {};
}

int64_t Collector::nonfinite_total() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors_) n += t.nonfinite();
  return n;
}

Expected<CalibrationTable> Collector::table(const MethodConfig& config, int threads) const {
  PTQ_RETURN_IF_ERROR(config.validate());
  CalibrationTable table;
  table.method = config.name;
  table.method_params = config.params();
  table.run.ignore_nonfinite = options_.ignore_nonfinite;
  // Each tensor's result is a pure function of its own statistics, so computing them on
  // several threads gives the same table; the first error in name order is reported.
  std::vector<const TensorCollector*> items;
  items.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) items.push_back(&t);
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<TensorRange> results(items.size());
  std::vector<Status> errors(items.size());
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(dynamic, 1) if (threads > 1)
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    Expected<TensorRange> r = items[k]->result(config);
    if (r) {
      results[k] = std::move(*r);
    } else {
      errors[k] = std::move(r).take_status();
    }
  }
  for (size_t k = 0; k < items.size(); ++k) {
    if (!errors[k].is_ok()) return errors[k];
    table.tensors.emplace(items[k]->name(), std::move(results[k]));
  }
  return table;
}

CalibrationTable Collector::ranges_table() const {
  CalibrationTable table;
  table.method = "minmax";
  table.run.ignore_nonfinite = options_.ignore_nonfinite;
  for (const auto& [name, t] : tensors_) table.tensors[name] = t.range_result();
  return table;
}

}  // namespace ptq::calib
