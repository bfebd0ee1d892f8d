// The calibration driver: two passes of the dataset through the executor with an observer that
// hands each wanted tensor's statistics (computed by the backend where the tensor lives) to a
// calib::Collector. Results do not depend on batch size, order or threads: phase 1 keeps only
// order-free min/max, phase 2 only integer counts over a range fixed by phase 1.
#include <future>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "ptq/calibration.h"
#include "ptq/onnx.h"

namespace ptq::calibration {

namespace {

enum class Phase { kRanges, kHistograms };

// The sources a dataset reads, for messages ("calib.npy" or "a.npy, b.npy").
std::string source_names(const data::Dataset& dataset) {
  std::set<std::string> seen;
  std::string out;
  for (const data::InputInfo& in : dataset.inputs()) {
    if (seen.insert(in.source).second) out += (out.empty() ? "" : ", ") + in.source;
  }
  return out;
}

class StatsObserver final : public runtime::Observer {
 public:
  StatsObserver(std::vector<std::string> tensors, calib::Collector& collector,
                const data::Dataset& dataset, bool ignore_nonfinite)
      : tensors_(std::move(tensors)),
        collector_(collector),
        dataset_(dataset),
        ignore_nonfinite_(ignore_nonfinite) {}

  std::vector<std::string> wanted(const ir::Graph& /*graph*/) override { return tensors_; }

  // The batch about to run: phase and its samples [first, first + count) in delivery order.
  void start_batch(Phase phase, int64_t first, int64_t count) {
    phase_ = phase;
    first_ = first;
    count_ = count;
  }

  Status observe(const runtime::ObservedTensor& t) override {
    if (!ir::is_float(t.dtype)) return Status::ok();  // --all-tensors on an undeclared dtype
    const int64_t elements = ir::num_elements(t.shape);
    if (phase_ == Phase::kRanges) {
      const runtime::MinMaxStats m = t.stats.minmax();
      if (m.nonfinite > 0 && !ignore_nonfinite_) return nonfinite_error(t, m, elements);
      return collector_.add_range(t.name, {m.min, m.max, m.abs_max, m.nonfinite, m.first_nonfinite},
                                  elements, {first_, count_});
    }
    return collector_.add_histogram(
        t.name, [&t](double T, std::span<uint64_t> counts) { t.stats.histogram(T, counts); });
  }

 private:
  // Names the sample by its index in the data source (not the shuffled delivery position).
  Status nonfinite_error(const runtime::ObservedTensor& t, const runtime::MinMaxStats& m,
                         int64_t elements) const {
    const std::vector<int64_t>& order = dataset_.order();
    std::string where;
    if (count_ > 0 && !t.shape.empty() && t.shape[0] == count_ && m.first_nonfinite >= 0) {
      const int64_t pos = first_ + m.first_nonfinite / (elements / count_);
      const int64_t src = pos < static_cast<int64_t>(order.size()) ? order[static_cast<size_t>(pos)] : pos;
      where = fmt::format("sample {}", src);
    } else {
      where = fmt::format("the batch of delivered samples {}..{}", first_, first_ + count_ - 1);
    }
    return invalid_input(
        "tensor '{}': {} non-finite value(s) (NaN or Inf) in {} of {} (--ignore-nonfinite counts "
        "and skips them)",
        t.name, m.nonfinite, where, source_names(dataset_));
  }

  std::vector<std::string> tensors_;
  calib::Collector& collector_;
  const data::Dataset& dataset_;
  bool ignore_nonfinite_;
  Phase phase_ = Phase::kRanges;
  int64_t first_ = 0;
  int64_t count_ = 0;
};

// The shapes fed per input: the first batch's, with -1 where a later batch differs.
class FedShapes {
 public:
  void add(const data::NamedTensors& batch) {
    for (const auto& [name, t] : batch) {
      auto [it, inserted] = shapes_.try_emplace(name, t.shape());
      if (inserted) continue;
      std::vector<int64_t>& s = it->second;
      if (s.size() != t.shape().size()) {
        s.assign(s.size(), -1);
        continue;
      }
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] != t.shape()[d]) s[d] = -1;
      }
    }
  }
  void apply(calib::ModelIdentity& id) const {
    for (auto& [name, shape] : id.inputs) {
      if (auto it = shapes_.find(name); it != shapes_.end()) shape = it->second;
    }
  }

 private:
  std::map<std::string, std::vector<int64_t>> shapes_;
};

struct PassContext {
  runtime::Executor& executor;
  const data::Dataset& dataset;
  StatsObserver& observer;
  const CalibrationOptions& options;
  int passes;
  FedShapes* shapes;  // recorded in pass 1 only
};

Status run_pass(PassContext& c, Phase phase, int pass) {
  const int64_t batches = c.dataset.num_batches();
  const int64_t batch_size = c.dataset.batch_size();
  auto load = [&c](int64_t b) { return c.dataset.batch(b); };
  std::future<Expected<data::NamedTensors>> next;
  if (c.options.prefetch && batches > 0) next = std::async(std::launch::async, load, int64_t{0});
  runtime::Observer* observers[] = {&c.observer};
  Progress progress{pass, c.passes, 0, c.dataset.size()};
  for (int64_t b = 0; b < batches; ++b) {
    Expected<data::NamedTensors> batch = c.options.prefetch ? next.get() : load(b);
    if (c.options.prefetch && b + 1 < batches) next = std::async(std::launch::async, load, b + 1);
    if (!batch) return std::move(batch).take_status();
    const int64_t n = batch->empty() ? 0 : batch->front().second.dim(0);
    if (phase == Phase::kRanges && c.shapes != nullptr) c.shapes->add(*batch);
    c.observer.start_batch(phase, b * batch_size, n);
    auto outputs = c.executor.run(*batch, observers);
    if (!outputs) return std::move(outputs).take_status();
    progress.samples_done += n;
    if (c.options.progress) PTQ_RETURN_IF_ERROR(c.options.progress(progress));
  }
  return Status::ok();
}

Status check_options(const ir::Model& model, const CalibrationOptions& o) {
  PTQ_RETURN_IF_ERROR(o.method.validate());
  if (o.threads < 1) return usage_error("threads must be at least 1 (got {})", o.threads);
  if (o.common_ranges == nullptr) return Status::ok();
  if (o.ranges_only) return usage_error("a ranges-only run cannot take a common ranges table");
  if (o.method.name == "minmax") {
    return usage_error("common ranges apply to histogram methods; min-max shards merge as they are");
  }
  const std::string& theirs = o.common_ranges->model.graph_sha256;
  if (!theirs.empty()) {
    const std::string ours = onnx::graph_hash(model);
    if (theirs != ours) {
      return invalid_input("the ranges table was calibrated for another model (graph hash {}, this "
                           "model's {})",
                           theirs, ours);
    }
  }
  return Status::ok();
}

}  // namespace

Expected<calib::CalibrationTable> calibrate(const ir::Model& model, runtime::Executor& executor,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options) {
  PTQ_RETURN_IF_ERROR(check_options(model, options));
  if (dataset.size() == 0) {
    return invalid_input("the data source {} holds no samples", source_names(dataset));
  }
  PTQ_ASSIGN_OR_RETURN(std::vector<std::string> tensors, calibration_tensors(model, options));
  if (tensors.empty()) return invalid_input("the model has no float activation to calibrate");

  // The graph hash serialises every weight through SHA-256 (~0.1-0.3 s for ResNet-18): do it
  // beside the passes instead of after them.
  std::future<calib::ModelIdentity> identity =
      std::async(std::launch::async, [&model] { return model_identity(model); });
  calib::Collector collector({.ignore_nonfinite = options.ignore_nonfinite});
  StatsObserver observer(std::move(tensors), collector, dataset, options.ignore_nonfinite);
  executor.forget_observers();  // a previous observer may have lived at this address
  const bool one_pass = options.ranges_only || options.method.name == "minmax";
  FedShapes shapes;
  PassContext ctx{executor, dataset, observer, options, one_pass ? 1 : 2, &shapes};
  PTQ_RETURN_IF_ERROR(run_pass(ctx, Phase::kRanges, 1));
  PTQ_RETURN_IF_ERROR(collector.finish_ranges(options.common_ranges));
  if (!one_pass) PTQ_RETURN_IF_ERROR(run_pass(ctx, Phase::kHistograms, 2));
  executor.forget_observers();

  calib::CalibrationTable table;
  if (options.ranges_only) {
    table = collector.ranges_table();
  } else {
    PTQ_ASSIGN_OR_RETURN(table, collector.table(options.method, options.threads));
  }
  table.model = identity.get();
  shapes.apply(table.model);
  table.run.samples = dataset.size();
  table.run.batch = dataset.batch_size();
  table.run.backend = options.backend;
  table.run.ptqkit_version =
      options.ptqkit_version.empty() ? std::string(ptqkit_version()) : options.ptqkit_version;
  table.run.date = options.date;
  table.run.ignore_nonfinite = options.ignore_nonfinite;
  return table;
}

}  // namespace ptq::calibration
