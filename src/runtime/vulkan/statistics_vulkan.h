// Statistics of an observed tensor that lives on the device: min/max read back from the slot
// the program's minmax shader filled, histograms computed by a shader on demand (only the 2048
// counts come back).
#pragma once

#include <cstdint>
#include <span>

#include "buffer.h"
#include "context.h"
#include "ptq/runtime.h"

namespace ptq::vulkan {

// Decodes the 8 uints minmax.comp accumulates into MinMaxStats (same conventions as the CPU
// backend: 0 when no value is finite, -0 normalised to +0, abs_max = max(|min|, |max|)).
runtime::MinMaxStats decode_minmax(const uint32_t* slot);

// Scratch for on-demand histograms, owned by the executor and reused by every call.
class HistogramRunner {
 public:
  explicit HistogramRunner(Context& ctx) : ctx_(ctx) {}
  // Adds the histogram of `t` (float32 on the device) for range T into `counts` (2048).
  Status run(const DeviceTensor& t, double T, std::span<uint64_t> counts);
  // True when run() puts every value in exactly the bin of the spec's float64 rule.
  bool exact_for(double T) const;

 private:
  Context& ctx_;
  Buffer counts_, staging_;
};

class VulkanTensorStatistics final : public runtime::TensorStatistics {
 public:
  // `error` receives the first failure of histogram() (which cannot return one itself).
  VulkanTensorStatistics(HistogramRunner& runner, DeviceTensor t, runtime::MinMaxStats mm,
                         Status& error)
      : runner_(runner), t_(std::move(t)), mm_(mm), error_(error) {}
  runtime::MinMaxStats minmax() const override { return mm_; }
  void histogram(double T, std::span<uint64_t> counts) const override;

 private:
  HistogramRunner& runner_;
  DeviceTensor t_;
  runtime::MinMaxStats mm_;
  Status& error_;
};

}  // namespace ptq::vulkan
