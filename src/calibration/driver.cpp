// The calibration driver: two passes of the dataset through the executor with an observer that
// hands each wanted tensor's statistics (computed by the backend where the tensor lives) to a
// calib::Collector. Results do not depend on batch size, order or threads: phase 1 keeps only
// order-free min/max, phase 2 only integer counts over a range fixed by phase 1. Several
// workers (an executor each) may run a pass's batches at once: each computes its tensors'
// statistics apart and adds them to the one collector under a lock. Several ranks
// (CalibrationOptions::comm) split the batches the same way and reduce the statistics after
// each pass (reduce.h).
#include <atomic>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/runtime/task_pool.h"
#include "reduce.h"

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

// The collector the workers share, and its lock. In phase 2 the tensors' ranges are read
// without it: nothing changes them or the set of tensors then. A run over several ranks
// collects phase 2 into another collector, holding the ranges of every rank.
struct SharedCollector {
  calib::Collector* collector;
  std::mutex mutex;
};

class StatsObserver final : public runtime::Observer {
 public:
  StatsObserver(const std::vector<std::string>& tensors, SharedCollector& shared,
                const data::Dataset& dataset, bool ignore_nonfinite)
      : tensors_(tensors),
        shared_(shared),
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
      std::lock_guard<std::mutex> lock(shared_.mutex);
      return shared_.collector->add_range(
          t.name, {m.min, m.max, m.abs_max, m.nonfinite, m.first_nonfinite}, elements,
          {first_, count_});
    }
    const std::optional<double> T = shared_.collector->range(t.name);
    if (!T) return runtime_error("tensor '{}' was not seen in the range pass", t.name);
    counts_.fill(0);
    t.stats.histogram(*T, counts_);
    std::lock_guard<std::mutex> lock(shared_.mutex);
    return shared_.collector->add_histogram(t.name, [this](double, std::span<uint64_t> counts) {
      for (size_t b = 0; b < counts.size() && b < counts_.size(); ++b) counts[b] += counts_[b];
    });
  }

 private:
  // Names the sample by its index in the data source (not the shuffled delivery position).
  Status nonfinite_error(const runtime::ObservedTensor& t, const runtime::MinMaxStats& m,
                         int64_t elements) const {
    const std::vector<int64_t>& order = dataset_.order();
    std::string where;
    if (count_ > 0 && !t.shape.empty() && t.shape[0] == count_ && m.first_nonfinite >= 0) {
      const int64_t pos = first_ + m.first_nonfinite / (elements / count_);
      const int64_t src =
          pos < static_cast<int64_t>(order.size()) ? order[static_cast<size_t>(pos)] : pos;
      where = fmt::format("sample {}", src);
    } else {
      where = fmt::format("the batch of delivered samples {}..{}", first_, first_ + count_ - 1);
    }
    return invalid_input(
        "tensor '{}': {} non-finite value(s) (NaN or Inf) in {} of {} (--ignore-nonfinite counts "
        "and skips them)",
        t.name, m.nonfinite, where, source_names(dataset_));
  }

  const std::vector<std::string>& tensors_;
  SharedCollector& shared_;
  const data::Dataset& dataset_;
  bool ignore_nonfinite_;
  Phase phase_ = Phase::kRanges;
  int64_t first_ = 0;
  int64_t count_ = 0;
  calib::HistogramCounts counts_{};  // one tensor's counts of one batch
};

// The shapes fed per input: the first batch's, with -1 where a later batch differs.
// Adding another rank's shapes (gather()) is adding its batches': the first batch (rank 0's)
// fixes each input's rank, and a dim stays only where every batch agrees.
class FedShapes {
 public:
  void add(const data::NamedTensors& batch) {
    for (const auto& [name, t] : batch) add(name, t.shape());
  }
  void add(const std::string& name, const std::vector<int64_t>& shape) {
    auto [it, inserted] = shapes_.try_emplace(name, shape);
    if (inserted) return;
    std::vector<int64_t>& s = it->second;
    if (s.size() != shape.size()) {
      s.assign(s.size(), -1);
      return;
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != shape[d]) s[d] = -1;
    }
  }
  // Every rank's shapes added on rank 0, in rank order.
  Status gather(dist::Communicator& comm) {
    dist::Writer w;
    w.i64(static_cast<int64_t>(shapes_.size()));
    for (const auto& [name, shape] : shapes_) {
      w.str(name);
      w.i64(static_cast<int64_t>(shape.size()));
      for (int64_t d : shape) w.i64(d);
    }
    const std::vector<std::string> all = comm.gather(w.bytes());
    for (size_t r = 1; r < all.size(); ++r) PTQ_RETURN_IF_ERROR(add_bytes(all[r]));
    return Status::ok();
  }
  void apply(calib::ModelIdentity& id) const {
    for (auto& [name, shape] : id.inputs) {
      if (auto it = shapes_.find(name); it != shapes_.end()) shape = it->second;
    }
  }

 private:
  Status add_bytes(const std::string& bytes) {
    dist::Reader r(bytes);
    PTQ_ASSIGN_OR_RETURN(int64_t inputs, r.i64());
    for (int64_t i = 0; i < inputs; ++i) {
      PTQ_ASSIGN_OR_RETURN(std::string name, r.str());
      PTQ_ASSIGN_OR_RETURN(int64_t rank, r.i64());
      std::vector<int64_t> shape;
      for (int64_t d = 0; d < rank; ++d) {
        PTQ_ASSIGN_OR_RETURN(int64_t dim, r.i64());
        shape.push_back(dim);
      }
      add(name, shape);
    }
    return Status::ok();
  }

  std::map<std::string, std::vector<int64_t>> shapes_;
};

// The batches this rank runs: rank, rank + ranks, rank + 2 ranks, ...
struct Share {
  int64_t rank = 0;
  int64_t ranks = 1;
  int64_t batch(int64_t k) const { return rank + k * ranks; }  // its k-th batch
  int64_t count(int64_t batches) const {
    return batches > rank ? (batches - rank - 1) / ranks + 1 : 0;
  }
};

// What the workers of a pass share. Worker w runs the rank's batches w, w + W, w + 2W, ...
// (W workers) on executors[w] with observers[w].
struct PassContext {
  std::span<runtime::Executor* const> executors;
  std::span<const std::unique_ptr<StatsObserver>> observers;
  const data::Dataset& dataset;
  Share share;
  SharedCollector* shared;  // the pass's collector (the ranges' then the histograms')
  const CalibrationOptions& options;
  int passes;
  FedShapes* shapes;  // recorded in pass 1 only (under the shared lock)
};

// The outcome of a pass, as its workers report it. A batch at or after the first failing one
// is not started, so every batch before it runs: the error reported is the first batch's in
// order, as with one worker, whichever worker met it first.
class PassState {
 public:
  explicit PassState(Progress progress) : progress_(progress) {}

  bool wanted(int64_t batch) const { return batch < failed_at_.load(); }
  int64_t failed_at() const { return failed_at_.load(); }
  void fail(int64_t batch, Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (batch >= failed_at_.load()) return;
    failed_at_ = batch;
    error_ = std::move(status);
  }
  // Counts a finished batch of n samples and reports the progress.
  Status finished(int64_t n, const ProgressFn& report) {
    std::lock_guard<std::mutex> lock(mutex_);
    progress_.samples_done += n;
    return report ? report(progress_) : Status::ok();
  }
  Status status() const { return error_; }

 private:
  std::mutex mutex_;
  std::atomic<int64_t> failed_at_{std::numeric_limits<int64_t>::max()};
  Status error_;
  Progress progress_;
};

Status run_batch(PassContext& c, PassState& state, Phase phase, size_t worker, int64_t b,
                 Expected<data::NamedTensors> batch) {
  if (!batch) return std::move(batch).take_status();
  const int64_t n = c.dataset.batch_samples(b);
  if (phase == Phase::kRanges && c.shapes != nullptr) {
    std::lock_guard<std::mutex> lock(c.shared->mutex);
    c.shapes->add(*batch);
  }
  StatsObserver& observer = *c.observers[worker];
  observer.start_batch(phase, b * c.dataset.batch_size(), n);
  runtime::Observer* observers[] = {&observer};
  auto outputs = c.executors[worker]->run(*batch, observers);
  if (!outputs) return std::move(outputs).take_status();
  return state.finished(n, c.options.progress);
}

void run_worker(PassContext& c, PassState& state, Phase phase, size_t worker) {
  const int64_t batches = c.share.count(c.dataset.num_batches());  // this rank's
  const auto stride = static_cast<int64_t>(c.executors.size());
  auto load = [&c](int64_t k) { return c.dataset.batch(c.share.batch(k)); };
  auto k = static_cast<int64_t>(worker);
  std::future<Expected<data::NamedTensors>> next;
  if (c.options.prefetch && k < batches) next = std::async(std::launch::async, load, k);
  for (; k < batches && state.wanted(c.share.batch(k)); k += stride) {
    Expected<data::NamedTensors> batch = c.options.prefetch ? next.get() : load(k);
    if (c.options.prefetch && k + stride < batches) {
      next = std::async(std::launch::async, load, k + stride);
    }
    const int64_t b = c.share.batch(k);
    Status s = run_batch(c, state, phase, worker, b, std::move(batch));
    if (!s.is_ok()) {
      state.fail(b, std::move(s));
      return;
    }
  }
}

// This rank's samples: those of its batches.
int64_t share_samples(const data::Dataset& dataset, Share share) {
  int64_t n = 0;
  for (int64_t k = 0; k < share.count(dataset.num_batches()); ++k) {
    n += dataset.batch_samples(share.batch(k));
  }
  return n;
}

// Runs a pass on this rank, then agrees with the others: the error is the first failing
// batch's of the whole run, as with one process.
Status run_pass(PassContext& c, Phase phase, int pass, dist::Communicator& comm) {
  PassState state(Progress{pass, c.passes, 0, share_samples(c.dataset, c.share)});
  auto worker = [&](int64_t w) { run_worker(c, state, phase, static_cast<size_t>(w)); };
  const auto workers = static_cast<int64_t>(c.executors.size());
  runtime::run_jobs(static_cast<int>(workers), workers, worker);
  return comm.agree(state.status(), state.failed_at());
}

// After this process's range pass: the histogram pass (unless one pass does) and the table.
Expected<calib::CalibrationTable> own_results(PassContext& c, calib::Collector& collector,
                                              dist::Communicator& comm) {
  const CalibrationOptions& o = c.options;
  PTQ_RETURN_IF_ERROR(collector.finish_ranges(o.common_ranges));
  if (c.passes == 2) PTQ_RETURN_IF_ERROR(run_pass(c, Phase::kHistograms, 2, comm));
  if (o.ranges_only) return collector.ranges_table();
  return collector.table(o.method, o.threads);
}

// The same over several ranks: the ranges reduced, this rank's histogram pass over them, the
// histograms reduced, and the table on rank 0 (an empty one elsewhere). Each step ends agreed,
// so a rank's error reaches every rank instead of leaving them waiting for it.
Expected<calib::CalibrationTable> reduced_results(PassContext& c,
                                                  const std::vector<std::string>& tensors,
                                                  const calib::Collector& collector,
                                                  dist::Communicator& comm) {
  const CalibrationOptions& o = c.options;
  const calib::CalibrationTable ranges = reduce_ranges(collector, tensors, comm);
  const calib::CollectorOptions collecting{.ignore_nonfinite = o.ignore_nonfinite};
  Expected<calib::Collector> local = collector_of(ranges, o.common_ranges, collecting);
  PTQ_RETURN_IF_ERROR(comm.agree(local.status()));
  Expected<calib::Collector> total = collector_of(ranges, o.common_ranges, collecting);
  if (c.passes == 2) {
    c.shared->collector = &*local;
    PTQ_RETURN_IF_ERROR(run_pass(c, Phase::kHistograms, 2, comm));
    PTQ_RETURN_IF_ERROR(comm.agree(reduce_histograms(*local, *total, comm)));
  }
  Expected<calib::CalibrationTable> table = calib::CalibrationTable{};
  if (comm.rank() == 0) {
    table = o.ranges_only ? total->ranges_table() : total->table(o.method, o.threads);
  }
  PTQ_RETURN_IF_ERROR(comm.agree(table.status()));
  return table;
}

Status check_options(const ir::Model& model, const CalibrationOptions& o) {
  PTQ_RETURN_IF_ERROR(o.method.validate());
  if (o.threads < 1) return usage_error("threads must be at least 1 (got {})", o.threads);
  if (o.common_ranges == nullptr) return Status::ok();
  if (o.ranges_only) return usage_error("a ranges-only run cannot take a common ranges table");
  if (o.method.name == "minmax") {
    return usage_error(
        "common ranges apply to histogram methods; min-max shards merge as they are");
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
  runtime::Executor* executors[] = {&executor};
  return calibrate(model, executors, dataset, options);
}

Expected<calib::CalibrationTable> calibrate(const ir::Model& model,
                                            std::span<runtime::Executor* const> executors,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options) {
  PTQ_RETURN_IF_ERROR(check_options(model, options));
  if (executors.empty()) return usage_error("calibration needs at least one executor");
  if (dataset.size() == 0) {
    return invalid_input("the data source {} holds no samples", source_names(dataset));
  }
  PTQ_ASSIGN_OR_RETURN(std::vector<std::string> tensors, calibration_tensors(model, options));
  if (tensors.empty()) return invalid_input("the model has no float activation to calibrate");

  // The graph hash serialises every weight through SHA-256 (~0.1-0.3 s for ResNet-18): do it
  // beside the passes instead of after them.
  std::future<calib::ModelIdentity> identity =
      std::async(std::launch::async, [&model] { return model_identity(model); });
  dist::Solo solo;
  dist::Communicator& comm = options.comm != nullptr ? *options.comm : solo;
  calib::Collector collector({.ignore_nonfinite = options.ignore_nonfinite});
  SharedCollector shared{&collector, {}};
  std::vector<std::unique_ptr<StatsObserver>> observers;
  for (runtime::Executor* e : executors) {
    e->forget_observers();  // a previous observer may have lived at this address
    observers.push_back(
        std::make_unique<StatsObserver>(tensors, shared, dataset, options.ignore_nonfinite));
  }
  const bool one_pass = options.ranges_only || options.method.name == "minmax";
  FedShapes shapes;
  const Share share{comm.rank(), comm.size()};
  const int passes = one_pass ? 1 : 2;
  PassContext ctx{executors, observers, dataset, share, &shared, options, passes, &shapes};
  PTQ_RETURN_IF_ERROR(run_pass(ctx, Phase::kRanges, 1, comm));
  Expected<calib::CalibrationTable> table = comm.size() == 1
                                                ? own_results(ctx, collector, comm)
                                                : reduced_results(ctx, tensors, collector, comm);
  for (runtime::Executor* e : executors) e->forget_observers();
  if (!table) return table.status();
  PTQ_RETURN_IF_ERROR(comm.agree(shapes.gather(comm)));
  if (comm.rank() != 0) return calib::CalibrationTable{};
  table->model = identity.get();
  shapes.apply(table->model);
  table->run.samples = dataset.size();
  table->run.batch = dataset.batch_size();
  table->run.backend = options.backend;
  table->run.ptqkit_version =
      options.ptqkit_version.empty() ? std::string(ptqkit_version()) : options.ptqkit_version;
  table->run.date = options.date;
  table->run.ignore_nonfinite = options.ignore_nonfinite;
  return table;
}

}  // namespace ptq::calibration
