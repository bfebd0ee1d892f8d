// SmoothQuant's statistics pass: per-channel max |x| of the activations MatMul/Gemm read, taken
// on the float model before calibration, so calibration then measures the smoothed model's
// ranges (docs/SMOOTHQUANT.md).
#include <algorithm>
#include <cmath>
#include <utility>

#include "ptq/calibration.h"

namespace ptq::calibration {

namespace {

class ChannelMaxObserver final : public runtime::Observer {
 public:
  explicit ChannelMaxObserver(std::span<const std::string> tensors)
      : tensors_(tensors.begin(), tensors.end()) {}

  std::vector<std::string> wanted(const ir::Graph& /*graph*/) override { return tensors_; }

  Status observe(const runtime::ObservedTensor& t) override {
    if (t.host == nullptr) {
      return usage_error("SmoothQuant's channel maxima need the tensors on the host: '{}' is not "
                         "(use the CPU backend)", t.name);
    }
    if (t.dtype != ir::DType::kFloat32 || t.shape.empty()) {
      return invalid_input("SmoothQuant: '{}' is not a float32 tensor of rank 1 or more", t.name);
    }
    const auto channels = static_cast<size_t>(t.shape.back());
    std::vector<double>& m = maxima_[t.name];
    if (m.empty()) m.assign(channels, 0.0);
    if (m.size() != channels) {
      return invalid_input("SmoothQuant: '{}' has {} channels in one batch, {} in another", t.name,
                           channels, m.size());
    }
    const std::span<const float> v = t.host->span<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const double a = std::fabs(static_cast<double>(v[i]));
      if (std::isfinite(a)) m[i % channels] = std::max(m[i % channels], a);
    }
    return Status::ok();
  }

  std::map<std::string, std::vector<double>> take() { return std::move(maxima_); }

 private:
  std::vector<std::string> tensors_;
  std::map<std::string, std::vector<double>> maxima_;
};

}  // namespace

Expected<std::map<std::string, std::vector<double>>> channel_maxima(
    runtime::Executor& executor, const data::Dataset& dataset,
    std::span<const std::string> tensors, const ProgressFn& progress) {
  ChannelMaxObserver observer(tensors);
  runtime::Observer* observers[] = {&observer};
  executor.forget_observers();
  Progress p{.pass = 1, .passes = 1, .samples_done = 0, .samples_total = dataset.size()};
  for (int64_t b = 0; b < dataset.num_batches(); ++b) {
    PTQ_ASSIGN_OR_RETURN(data::NamedTensors batch, dataset.batch(b));
    PTQ_RETURN_IF_ERROR(executor.run(batch, observers).status());
    p.samples_done += dataset.batch_samples(b);
    if (progress) PTQ_RETURN_IF_ERROR(progress(p));
  }
  executor.forget_observers();
  return observer.take();
}

Expected<calib::SmoothQuantRecord> smoothquant(ir::Model& model, runtime::Backend& backend,
                                               const data::Dataset& dataset,
                                               const SmoothQuantRunOptions& options) {
  PTQ_RETURN_IF_ERROR(options.smoothing.validate());
  std::vector<std::string> tensors;
  for (const planner::SmoothTarget& t : planner::smoothquant_targets(model)) {
    tensors.push_back(t.tensor);
  }
  calib::SmoothQuantRecord record{.alpha = options.smoothing.alpha, .factors = {}};
  if (tensors.empty()) return record;
  std::map<std::string, std::vector<double>> maxima;
  {
    // The executor borrows the model's weights: it must be gone before they change.
    PTQ_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executor> executor,
                         runtime::Executor::create(model, backend, {.threads = options.threads}));
    PTQ_ASSIGN_OR_RETURN(maxima, channel_maxima(*executor, dataset, tensors, options.progress));
  }
  PTQ_ASSIGN_OR_RETURN(record, planner::smoothquant_factors(model, maxima, options.smoothing));
  PTQ_RETURN_IF_ERROR(planner::apply_smoothquant(model, record));
  return record;
}

Expected<std::optional<calib::SmoothQuantRecord>> smooth_as_cached(
    ir::Model& model, ModelForms& forms, const std::filesystem::path& path) {
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable table, calib::read_cache(path));
  if (!table.smoothquant) return std::optional<calib::SmoothQuantRecord>();
  // A form of the model already is what the cache describes (a requantized model quantized
  // with this cache holds its smoothed weights): smoothing again would divide twice.
  if (forms.matches(table)) return table.smoothquant;
  PTQ_RETURN_IF_ERROR(planner::apply_smoothquant(model, *table.smoothquant));
  forms.add(model);
  return table.smoothquant;
}

}  // namespace ptq::calibration
