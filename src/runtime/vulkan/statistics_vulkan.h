// Statistics of an observed tensor that lives on the device: min/max read back from the slot
// the program's minmax shader filled, histograms computed by a shader on demand (only the 2048
// counts come back).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "buffer.h"
#include "context.h"
#include "recorder.h"
#include "ptq/runtime.h"

namespace ptq::vulkan {

// Decodes the 8 uints minmax.comp accumulates into MinMaxStats (same conventions as the CPU
// backend: 0 when no value is finite, -0 normalised to +0, abs_max = max(|min|, |max|)).
runtime::MinMaxStats decode_minmax(const uint32_t* slot);

// A device tensor's histogram for one range, by the value's name.
struct HistogramJob {
  std::string name;
  DeviceTensor tensor;
  double T = 0.0;
};

// Histograms of device tensors, owned by the executor. A calibrator asks every batch for the
// same tensors' histograms over the same ranges (specs/calibrators.md fixes them before the
// histogram pass), so after the first batch the executor computes what was asked last time
// for all of a block's tensors in one submission (prefetch) instead of one wait per tensor;
// whatever was not prefetched is computed on demand. Both run the same shader on the same
// data: the counts are the same either way.
class HistogramRunner {
 public:
  explicit HistogramRunner(Context& ctx) : ctx_(ctx) {}
  // Adds the histogram of value `name` (`t`, float32 on the device) for range T into `counts`
  // (2048 bins), and remembers that it was asked for.
  Status run(const std::string& name, const DeviceTensor& t, double T, std::span<uint64_t> counts);
  // Computes, in one submission, the histograms asked for the named values of `tensors` by
  // the previous batch; forgets earlier prefetches.
  Status prefetch(std::span<const std::pair<std::string, DeviceTensor>> tensors);
  // True when run() puts every value in exactly the bin of the spec's float64 rule.
  bool exact_for(double T) const;

 private:
  Status grow(size_t jobs);
  Status record(Recorder& rec, const DeviceTensor& t, double T, size_t slot);
  Status submit(std::span<const HistogramJob> jobs);
  Context& ctx_;
  Buffer counts_, staging_;
  size_t slots_ = 0;
  std::map<std::string, std::vector<double>> asked_;  // by value name, since its last prefetch
  std::map<std::pair<std::string, double>, std::vector<uint32_t>> ready_;
};

class VulkanTensorStatistics final : public runtime::TensorStatistics {
 public:
  // `error` receives the first failure of histogram() (which cannot return one itself).
  VulkanTensorStatistics(HistogramRunner& runner, std::string name, DeviceTensor t,
                         runtime::MinMaxStats mm, Status& error)
      : runner_(runner), name_(std::move(name)), t_(std::move(t)), mm_(mm), error_(error) {}
  runtime::MinMaxStats minmax() const override { return mm_; }
  void histogram(double T, std::span<uint64_t> counts) const override;

 private:
  HistogramRunner& runner_;
  std::string name_;
  DeviceTensor t_;
  runtime::MinMaxStats mm_;
  Status& error_;
};

}  // namespace ptq::vulkan
