// Streaming output metrics (include/ptq/metrics.h).
#include "ptq/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace ptq::metrics {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool numeric(ir::DType t) { return ir::is_float(t) || ir::is_integer(t) || t == ir::DType::kBool; }

// Values of a numeric tensor as doubles (float32 without the per-element dispatch).
std::vector<double> to_double(const ir::Tensor& t, int64_t first, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  if (t.dtype() == ir::DType::kFloat32) {
    const float* p = t.data<float>() + first;
    for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = p[i];
  } else {
    for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = t.as_double(first + i);
  }
  return out;
}

}  // namespace

Status Agreement::add(const ir::Tensor& reference, const ir::Tensor& test) {
  if (reference.shape() != test.shape()) {
    return invalid_input("outputs differ in shape: {} vs {}", ir::shape_str(reference.shape()),
                         ir::shape_str(test.shape()));
  }
  if (!numeric(reference.dtype()) || !numeric(test.dtype())) {
    return invalid_input("cannot compare {} with {} values", ir::dtype_name(reference.dtype()),
                         ir::dtype_name(test.dtype()));
  }
  // In chunks, so a large output is not copied whole into doubles.
  constexpr int64_t kChunk = 1 << 16;
  const int64_t n = reference.size();
  for (int64_t first = 0; first < n; first += kChunk) {
    const int64_t count = std::min(kChunk, n - first);
    const std::vector<double> r = to_double(reference, first, count);
    const std::vector<double> t = to_double(test, first, count);
    for (size_t i = 0; i < r.size(); ++i) {
      const double d = r[i] - t[i];
      if (std::isnan(d)) nan_ = true;
      rr_ += r[i] * r[i];
      tt_ += t[i] * t[i];
      rt_ += r[i] * t[i];
      dd_ += d * d;
      max_abs_diff_ = std::max(max_abs_diff_, std::abs(d));
    }
  }
  count_ += n;
  return Status::ok();
}

double Agreement::cosine() const {
  if (nan_) return kNaN;
  if (rr_ == 0.0 && tt_ == 0.0) return 1.0;
  if (rr_ == 0.0 || tt_ == 0.0) return 0.0;
  return rt_ / std::sqrt(rr_ * tt_);
}

double Agreement::sqnr_db() const {
  if (nan_) return kNaN;
  if (dd_ == 0.0) return kInf;
  if (rr_ == 0.0) return -kInf;
  return 10.0 * std::log10(rr_ / dd_);
}

double Agreement::rel_l2() const {
  if (nan_) return kNaN;
  if (dd_ == 0.0) return 0.0;
  if (rr_ == 0.0) return kInf;
  return std::sqrt(dd_ / rr_);
}

Expected<std::vector<int64_t>> argmax_rows(const ir::Tensor& scores) {
  if (scores.rank() < 1 || !numeric(scores.dtype())) {
    return invalid_input("classifier output of shape {} and type {} has no rows of scores",
                         ir::shape_str(scores.shape()), ir::dtype_name(scores.dtype()));
  }
  const int64_t rows = scores.dim(0);
  const int64_t classes = rows == 0 ? 0 : scores.size() / rows;
  if (classes == 0) return invalid_input("classifier output of shape {} has no classes",
                                         ir::shape_str(scores.shape()));
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<double> row = to_double(scores, r * classes, classes);
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      // NaN never wins (as numpy would return it; a NaN score is counted as wrong instead).
      if (row[static_cast<size_t>(c)] > row[static_cast<size_t>(best)]) best = c;
    }
    out[static_cast<size_t>(r)] = best;
  }
  return out;
}

bool in_top_k(std::span<const double> row, int64_t label, int64_t k) {
  if (label < 0 || label >= static_cast<int64_t>(row.size())) return false;
  const double s = row[static_cast<size_t>(label)];
  if (std::isnan(s)) return false;
  int64_t better = 0;
  for (int64_t j = 0; j < static_cast<int64_t>(row.size()); ++j) {
    const double v = row[static_cast<size_t>(j)];
    if (v > s || (v == s && j < label)) ++better;
  }
  return better < k;
}

Status Accuracy::add(const ir::Tensor& scores, std::span<const int64_t> labels) {
  if (scores.rank() < 1 || !numeric(scores.dtype())) {
    return invalid_input("classifier output of shape {} and type {} has no rows of scores",
                         ir::shape_str(scores.shape()), ir::dtype_name(scores.dtype()));
  }
  const int64_t rows = scores.dim(0);
  if (static_cast<int64_t>(labels.size()) != rows) {
    return invalid_input("{} labels for {} rows of scores", labels.size(), rows);
  }
  const int64_t classes = rows == 0 ? 0 : scores.size() / rows;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = labels[static_cast<size_t>(r)];
    if (label < 0 || label >= classes) {
      return invalid_input("label {} (sample {}) is outside the model's {} classes", label,
                           count_ + r, classes);
    }
    const std::vector<double> row = to_double(scores, r * classes, classes);
    for (size_t i = 0; i < ks_.size(); ++i) {
      if (in_top_k(row, label, ks_[i])) ++hits_[i];
    }
  }
  count_ += rows;
  return Status::ok();
}

double Accuracy::accuracy(size_t i) const {
  return count_ == 0 ? kNaN : static_cast<double>(hits_[i]) / static_cast<double>(count_);
}

std::optional<double> clipped_fraction(const calib::TensorRange& range, double amax) {
  if (!range.has_histogram() || !(range.hist_max > 0.0)) return std::nullopt;
  const double width = range.hist_max / static_cast<double>(range.histogram.size());
  uint64_t total = 0, above = 0;
  for (size_t j = 0; j < range.histogram.size(); ++j) {
    total += range.histogram[j];
    if (static_cast<double>(j) * width >= amax) above += range.histogram[j];
  }
  if (total == 0) return std::nullopt;
  return static_cast<double>(above) / static_cast<double>(total);
}

std::string format_metric(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", v, precision);
}

}  // namespace ptq::metrics
