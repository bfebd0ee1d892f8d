// Evaluation metrics (ptq_report): agreement between two models' outputs (cosine similarity,
// SQNR, max abs difference, relative L2) and classifier accuracy (top-k against labels, top-1
// agreement). All accumulate batch by batch in float64, so `ptq eval`, `ptq compare` and the
// sensitivity sweeps never hold more than one batch of outputs.
//
//   metrics::Agreement a;
//   for (each batch) PTQ_RETURN_IF_ERROR(a.add(reference_output, quantized_output));
//   a.cosine(); a.sqnr_db();   // +inf when the outputs are identical
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::metrics {

// Agreement of a test tensor with a reference tensor, accumulated over batches.
// With r the reference and t the test values over everything added:
//   cosine  = sum(r t) / sqrt(sum(r^2) sum(t^2))      (1 when both are all zeros, 0 when one is)
//   sqnr_db = 10 log10(sum(r^2) / sum((r - t)^2))     (+inf when t == r exactly)
//   rel_l2  = sqrt(sum((r - t)^2) / sum(r^2))          (0 when equal, +inf when r is all zeros)
//   max_abs_diff = max |r - t|
class Agreement {
 public:
  // Both tensors must have the same shape and a numeric dtype (any float or integer type).
  // A NaN in either makes every metric NaN (it is never silently skipped).
  Status add(const ir::Tensor& reference, const ir::Tensor& test);
  double cosine() const;
  double sqnr_db() const;
  double rel_l2() const;
  double max_abs_diff() const { return max_abs_diff_; }
  int64_t count() const { return count_; }

 private:
  double rr_ = 0.0, tt_ = 0.0, rt_ = 0.0, dd_ = 0.0;
  double max_abs_diff_ = 0.0;
  int64_t count_ = 0;
  bool nan_ = false;
};

// Per row of a classifier output [N, C...] (everything after dim 0 is one row of scores): the
// index of the largest score, the first one on ties (as numpy.argmax).
Expected<std::vector<int64_t>> argmax_rows(const ir::Tensor& scores);

// True when `label` is among the k best scores of `row`: fewer than k classes score higher,
// counting ties with a lower index as higher (so top-1 agrees with argmax_rows).
bool in_top_k(std::span<const double> row, int64_t label, int64_t k);

// Top-k accuracy over batches of scores [N, C] and their labels.
class Accuracy {
 public:
  explicit Accuracy(std::vector<int64_t> ks = {1, 5}) : ks_(std::move(ks)), hits_(ks_.size()) {}
  // `labels` has one entry per row of `scores`; a label outside [0, C) is an error naming it.
  Status add(const ir::Tensor& scores, std::span<const int64_t> labels);
  const std::vector<int64_t>& ks() const { return ks_; }
  int64_t hits(size_t i) const { return hits_[i]; }
  int64_t count() const { return count_; }
  double accuracy(size_t i) const;  // hits / count (NaN for no samples)

 private:
  std::vector<int64_t> ks_;
  std::vector<int64_t> hits_;
  int64_t count_ = 0;
};

// The fraction of a calibrated tensor's values that a symmetric range [-amax, amax] clips,
// from its |x| histogram: the counts of the bins lying wholly above amax over all counts
// (nullopt without a histogram). Well-calibrated activations clip well under 0.1 %; a range
// pulled down by a spike in the data (a constant background seen through the first layer)
// clips several percent. The bin straddling amax is not counted, so this is a lower bound.
std::optional<double> clipped_fraction(const calib::TensorRange& range, double amax);

// "inf", "-inf", "nan" or the value with `precision` decimals: how reports print a metric that
// may be infinite. (JSON has no infinity: JSON reports write these three as strings.)
std::string format_metric(double v, int precision);

}  // namespace ptq::metrics
