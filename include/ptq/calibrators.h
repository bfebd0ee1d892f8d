// The calibrators module (ptq_calibrators): streaming per-tensor statistics (a min-max pass, then
// a histogram pass over a range fixed by the first) and the methods that turn a histogram into a
// symmetric range amax. See shared specs/calibrators.md and docs/CACHE_FORMAT.md.
//
// How a calibration driver uses it (two passes over the same samples, any batching and order),
// from an executor Observer that is shown runtime::ObservedTensor t:
//
//   calib::Collector collector({.ignore_nonfinite = opts.ignore_nonfinite});
//   // phase 1, per batch [first, first + n) and observed tensor t:
//   runtime::MinMaxStats m = t.stats.minmax();
//   collector.add_range(t.name, {m.min, m.max, m.abs_max, m.nonfinite, m.first_nonfinite},
//                       ir::num_elements(t.shape), {first, n});
//   collector.finish_ranges();                             // fixes T per tensor
//   // phase 2, same samples (any order):
//   collector.add_histogram(t.name, [&](double T, std::span<uint64_t> c) { t.stats.histogram(T, c);
//   }); PTQ_ASSIGN_OR_RETURN(CalibrationTable table, collector.table(method));
//   // then fill table.model / table.run and write it (calib::write_cache).
//
// Every method is a pure function of (T, counts), so a cache that stores histograms can be
// re-calibrated with another method (recalibrate) and shards merge exactly (merge_calibrations).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::calib {

// ---- histogram ------------------------------------------------------------------------------

inline constexpr int kHistogramBins = 2048;  // B of the spec
using HistogramCounts = std::array<uint64_t, kHistogramBins>;

// The bin of v = |x| >= 0 for the range T: min(floor(v / T * 2048), 2047) in float64, in exactly
// that order; every finite v goes to bin 0 when T <= 0 (the tensor is all zeros then).
inline int histogram_bin(double v, double T) {
  if (!(T > 0.0)) return 0;
  const double b = std::floor(v / T * 2048.0);
  return b >= static_cast<double>(kHistogramBins - 1) ? kHistogramBins - 1 : static_cast<int>(b);
}

// A histogram of |x| over [0, range]: what every method reads.
struct HistogramView {
  double range = 0.0;                  // T (= amax_max of the min-max pass)
  std::span<const uint64_t> counts;    // kHistogramBins counts
  double bin_width() const { return range / kHistogramBins; }
};

// Adds the |x| counts of the finite values of `values` into `counts` (serial, the reference).
void add_to_histogram(std::span<const float> values, double T, std::span<uint64_t> counts);

// ---- min-max pass ---------------------------------------------------------------------------

// The min-max statistics of one batch of one tensor; fields mirror runtime::MinMaxStats.
struct BatchRange {
  double min = 0.0;              // signed min over finite values
  double max = 0.0;              // signed max over finite values
  double abs_max = 0.0;          // max |x| over finite values
  int64_t nonfinite = 0;         // NaN / ±Inf count
  int64_t first_nonfinite = -1;  // flat index of the first one, -1 if none
};

// The BatchRange of a host float buffer (serial, the reference).
BatchRange batch_range(std::span<const float> values);

// Which samples a batch holds: [first, first + count). The tensor's elements are split evenly
// among them (batch dimension first); used to name the sample of a non-finite value.
struct SampleSpan {
  int64_t first = 0;
  int64_t count = 1;
};

// ---- methods --------------------------------------------------------------------------------

// A method and its parameters (a typed config, validated once).
struct MethodConfig {
  // The default: within 1 dB of the best method on every zoo model (docs/PERF.md).
  std::string name = "mse";  // a registered calibrator name
  double percentile = 99.99;     // used by "percentile": 0 < p <= 100
  // Ok if `name` is registered and the parameters are in range; a usage error otherwise.
  Status validate() const;
  // The parameters recorded in a cache ({"percentile": p} for percentile, empty otherwise).
  std::map<std::string, double> params() const;
  // Reads a table's method and parameters back.
  static Expected<MethodConfig> from_table(const CalibrationTable& table);
};

// One calibrator: a pure function histogram -> amax. amax is 0 when range is 0.
using AmaxFn = double (*)(const HistogramView& hist, const MethodConfig& config);
struct CalibratorInfo {
  std::string_view name;      // on the command line and in caches
  AmaxFn amax;
  std::string_view trt_name;  // TensorRT cache header algorithm; "" when TensorRT has none
  std::string_view ort_name;  // ONNX Runtime CalibrationMethod member; "" when it has none
  bool weights;               // also gives weight ranges (weight_amax)
  std::string_view summary;
};

// A method's parameter: a MethodConfig field, valid in (lowest, highest].
struct CalibratorParam {
  std::string_view method;  // the calibrator it belongs to
  std::string_view name;    // the field, the option --<name> and the key in a cache
  double MethodConfig::*field;
  double lowest;
  double highest;
  std::string_view help;
};

// Every registered calibrator, in registry order (ptq/calibrators.inc, one line each).
std::span<const CalibratorInfo> calibrators();
// Every parameter of every calibrator, in registry order.
std::span<const CalibratorParam> calibrator_params();
// The calibrator called `name`, or null.
const CalibratorInfo* find_calibrator(std::string_view name);
// The registered name that `name` stands for: a registered name itself, its ONNX Runtime
// CalibrationMethod member ("MinMax") or ModelOpt's "max" (minmax); "" for no calibrator.
std::string_view canonical_calibrator_name(std::string_view name);
// "entropy, minmax, mse, percentile" (for usage messages).
std::string calibrator_names();
// "entropy, minmax, mse or percentile" (for help); with `weights_only` the weight methods only.
std::string calibrator_choices(bool weights_only = false);

// The methods (specs/calibrators.md), <name>_amax for every registry line, each defined in
// calibrators/<name>.cpp. Each returns 0 for range 0 and expects kHistogramBins counts.
#define PTQ_CALIBRATOR(name, trt, ort, weights, summary) \
  double name##_amax(const HistogramView& hist, const MethodConfig& config);
#define PTQ_CALIBRATOR_PARAM(method, param, lowest, highest, help)
#include "ptq/calibrators.inc"
#undef PTQ_CALIBRATOR
#undef PTQ_CALIBRATOR_PARAM
// The chosen candidate behind each amax (for tests and reports): entropy / mse return the
// number of kept bins i in [128, 2048], percentile the bin k; nullopt when range is 0 or there
// is nothing to choose from (no counts).
std::optional<int> entropy_best_bins(const HistogramView& hist);
std::optional<int> mse_best_bins(const HistogramView& hist);
std::optional<int> percentile_bin(const HistogramView& hist, double percentile);

// amax of `hist` with the configured method (a usage error for an unknown or invalid method).
Expected<double> compute_amax(const HistogramView& hist, const MethodConfig& config);

// ---- streaming collection -------------------------------------------------------------------

struct CollectorOptions {
  // Count and skip NaN/±Inf instead of failing (the count is reported per tensor).
  bool ignore_nonfinite = false;
};

// The statistics of one tensor over the whole calibration set: phase 1 (ranges), then phase 2
// (histogram over [0, T]). Memory is constant in the number of samples. Not thread-safe: use
// one per thread or shard and merge().
class TensorCollector {
 public:
  TensorCollector(std::string name, CollectorOptions options);

  const std::string& name() const { return name_; }
  // Phase 1: one batch's min-max statistics; `elements` counts every element, finite or not.
  Status add_range(const BatchRange& batch, int64_t elements, SampleSpan samples);
  Status add_range(std::span<const float> values, SampleSpan samples);
  // Ends phase 1. The histogram range T is this tensor's max |x|, or `common_range` when given
  // (the sharded flow: T from every shard's ranges merged; it must be >= this tensor's max |x|).
  Status finish_ranges(std::optional<double> common_range = std::nullopt);
  // Skips phase 1 by restoring a range recorded earlier (min, max, amax_max, count, nonfinite
  // of a ranges cache); then finish_ranges() as usual.
  Status restore_range(const TensorRange& range);
  // Phase 2: `fill(T, counts)` must add one batch's |x| counts for range T into `counts`
  // (runtime::TensorStatistics::histogram does exactly that).
  Status add_histogram(const std::function<void(double T, std::span<uint64_t> counts)>& fill);
  Status add_histogram(std::span<const float> values);
  // Adds another collector's statistics of the same tensor (same phase; same T in phase 2).
  Status merge(const TensorCollector& other);

  bool ranges_finished() const { return finished_; }
  double range() const { return T_; }   // T, valid once ranges are finished
  double abs_max() const { return abs_max_; }
  int64_t count() const { return count_; }
  int64_t nonfinite() const { return nonfinite_; }
  int64_t histogram_total() const;
  const HistogramCounts& counts() const { return counts_; }
  // The statistics as a cache entry (amax from `config`); the histogram is included once phase
  // 2 has been fed. Fails if phase 2 saw a different number of values than phase 1.
  Expected<TensorRange> result(const MethodConfig& config) const;
  // The phase-1 statistics only (no histogram, amax = max |x|): a ranges cache entry.
  TensorRange range_result() const;

 private:
  std::string name_;
  CollectorOptions options_;
  bool finished_ = false;
  bool has_histogram_ = false;
  double min_ = 0.0, max_ = 0.0, abs_max_ = 0.0;
  int64_t count_ = 0;
  int64_t nonfinite_ = 0;
  double T_ = 0.0;
  HistogramCounts counts_{};
};

// TensorCollectors by name, with the phase kept for all of them.
class Collector {
 public:
  explicit Collector(CollectorOptions options = {});

  // Phase 1 (tensors are created as they are first seen).
  Status add_range(const std::string& tensor, const BatchRange& batch, int64_t elements,
                   SampleSpan samples);
  Status add_range(const std::string& tensor, std::span<const float> values, SampleSpan samples);
  // Restores phase 1 from a ranges table (every tensor of it), instead of a first pass.
  Status restore_ranges(const CalibrationTable& ranges);
  // Ends phase 1 for every tensor. With `common`, each tensor's T is its amax in `common`
  // (a merged ranges table of all shards; a tensor missing there is an error).
  Status finish_ranges(const CalibrationTable* common = nullptr);
  bool ranges_finished() const { return finished_; }
  // Phase 2 (a tensor not seen in phase 1 is an error).
  Status add_histogram(const std::string& tensor,
                       const std::function<void(double T, std::span<uint64_t> counts)>& fill);
  Status add_histogram(const std::string& tensor, std::span<const float> values);
  // The histogram range T of a tensor (after finish_ranges), or nullopt if unknown.
  std::optional<double> range(const std::string& tensor) const;
  // Adds another collector of the same phase (same T per tensor in phase 2).
  Status merge(const Collector& other);

  // Total non-finite values skipped (with ignore_nonfinite).
  int64_t nonfinite_total() const;
  const std::map<std::string, TensorCollector>& tensors() const { return tensors_; }
  // The calibration table (tensors, method and params; model/run info left for the caller).
  // The method runs on up to `threads` tensors at once; the result does not depend on it.
  Expected<CalibrationTable> table(const MethodConfig& config, int threads = 1) const;
  // The phase-1 table (min-max method, no histograms): what a shard writes before merging.
  CalibrationTable ranges_table() const;

 private:
  TensorCollector& get(const std::string& tensor);
  CollectorOptions options_;
  bool finished_ = false;
  std::map<std::string, TensorCollector> tensors_;
};

// ---- tables ---------------------------------------------------------------------------------

// Recomputes every tensor's amax from its stored histogram with `config` and records the
// method; a tensor without a histogram is an error (TensorRT / ONNX Runtime caches have none).
// Equal to calibrating with that method from scratch.
Status recalibrate(CalibrationTable& table, const MethodConfig& config);

// Merges shard tables (calib::merge_tables) and recomputes amax with `config`, or with the
// shards' common method when null. Ranges-only shards give a min-max table.
Expected<CalibrationTable> merge_calibrations(std::span<const CalibrationTable> shards,
                                              const MethodConfig* config = nullptr,
                                              const MergeOptions& options = {});

// ---- weights --------------------------------------------------------------------------------

// Symmetric ranges of a float weight tensor: per slice along `axis` (the output channel) or,
// without an axis, one range for the whole tensor. Method "minmax" gives max |W_c|;
// "percentile" and "mse" apply to each channel's own histogram over [0, max |W_c|]; a method
// not registered for weights (CalibratorInfo::weights) is a usage error. Non-finite weights
// are an error naming `name` and the element.
Expected<std::vector<double>> weight_amax(const ir::Tensor& weight, std::optional<int64_t> axis,
                                          const MethodConfig& config, std::string_view name);

}  // namespace ptq::calib
