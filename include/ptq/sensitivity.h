// The sensitivity module (ptq_sensitivity): partial-PTQ sweeps (issue 8). Per quantization unit
// (planner::Unit: a weighted op with the Q/DQ on its inputs, a quantized pooling/Add/Concat),
// the model is evaluated with only that unit quantized (Mode::kOnly) or with every unit but it
// quantized (Mode::kAllBut), against the FP32 model's outputs (or labels, for top-1). The units
// are ranked, and select() keeps the most sensitive ones in float, greedily, until the fully
// re-evaluated partial model meets a target.
//
// Speed: a variant differs from a base model (FP32 for kOnly, fully quantized for kAllBut) only
// downstream of the unit's Q/DQ. sweep() finds the nodes that differ (its cut), runs the base
// model once per eval batch, keeps the tensors at the cut (asked for as extra graph outputs, so
// any backend can hand them over), and runs only the differing subgraph per unit. With reuse
// off every variant runs whole (the naive cost): results are identical. In both, the nodes
// computed from constants alone (a quantized weight's DequantizeLinear, Constant nodes) are
// folded once per sweep, so a sweep's score equals evaluate() of the variant up to the float
// reassociation of a Conv/MatMul/Gemm packing its now-constant weight ahead.
//
// Backends: executors come from an ExecutorFactory, so a sweep runs on the CPU backend or on
// Vulkan (the app builds the factory from --backend/--device).
//
//   sensitivity::Evaluator ev;  // FP32 reference outputs of the eval set (and labels)
//   PTQ_ASSIGN_OR_RETURN(ev, sensitivity::Evaluator::create(model, backend_executors(backend),
//                                                          eval, &labels, {}));
//   PTQ_ASSIGN_OR_RETURN(auto r, sensitivity::sweep(table, ev, options));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/data.h"
#include "ptq/dist.h"
#include "ptq/ir.h"
#include "ptq/metrics.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::sensitivity {

// top1: accuracy against labels, or top-1 agreement with FP32 without labels (argmax of the
// first output). sqnr: output SQNR in dB vs FP32. cosine: cosine similarity vs FP32. mse: mean
// squared error vs FP32. sqnr/cosine/mse are per output, the score being their mean.
enum class Metric { kTop1, kSqnr, kCosine, kMse };
enum class Mode { kOnly, kAllBut };

std::string_view metric_name(Metric m);  // "top1" "sqnr" "cosine" "mse"
std::string_view mode_name(Mode m);      // "only" "all-but"
Expected<Metric> parse_metric(std::string_view name);  // usage error listing the choices
Expected<Mode> parse_mode(std::string_view name);
// Larger is better for top1, sqnr and cosine; smaller for mse.
bool higher_is_better(Metric m);

// One evaluation of a model.
struct Score {
  double value = 0.0;               // the metric (mean over outputs where per output)
  std::vector<double> per_output;   // per graph output (top1: one entry, the first output's)
};

// Makes an executor for `model` (the FP32 model, a variant, a cut subgraph) with `threads` CPU
// threads; `model` is borrowed and outlives the executor. Called from several threads at once
// when a sweep runs units in parallel.
using ExecutorFactory = std::function<Expected<std::unique_ptr<runtime::Executor>>(
    const ir::Model& model, int threads)>;

// Executors on `backend` (borrowed: it must outlive every executor made).
ExecutorFactory backend_executors(runtime::Backend& backend);

// The eval set and the FP32 outputs every variant is compared with (held in memory: one copy
// of the model's outputs for the eval set).
class Evaluator {
 public:
  struct Options {
    Metric metric = Metric::kSqnr;
    int threads = 1;  // executor threads
    // The batches create() runs the FP32 model on: the first ones (none: 0), all when
    // kAllBatches or more than the eval set holds. A sweep whose base is the FP32 model (mode
    // only, with reuse) runs it on every batch anyway and hands over the outputs of the rest
    // (add_reference()), which saves a whole FP32 pass. Until every batch has its outputs,
    // float_score() is unknown (NaN) and evaluate() fails.
    static constexpr int64_t kAllBatches = -1;
    int64_t reference_batches = kAllBatches;
  };
  // Runs `model` (float) over `eval` (bound to model's graph) on executors from `executors`.
  // `labels` (one per delivered sample, in delivery order) is used by top1 only; null:
  // agreement with FP32. `model` and `eval` are borrowed and must outlive the evaluator.
  static Expected<Evaluator> create(const ir::Model& model, ExecutorFactory executors,
                                    const data::Dataset& eval, const std::vector<int64_t>* labels,
                                    const Options& options);
  // The same on `backend` (borrowed).
  static Expected<Evaluator> create(const ir::Model& model, runtime::Backend& backend,
                                    const data::Dataset& eval, const std::vector<int64_t>* labels,
                                    const Options& options) {
    return create(model, backend_executors(backend), eval, labels, options);
  }

  // Evaluates a whole model (e.g. a variant or the partial model) on the eval set.
  Expected<Score> evaluate(const ir::Model& variant) const;
  // The FP32 model's own score (top1 accuracy with labels; the ideal value otherwise).
  const Score& float_score() const { return float_score_; }

  // The FP32 model's outputs on the first batch without them (Options::reference_batches),
  // e.g. from a run of a model that computes the same values. The last one completes the
  // reference and sets float_score().
  Status add_reference(runtime::NamedTensors outputs);
  bool has_reference(int64_t batch) const {
    return batch >= 0 && batch < static_cast<int64_t>(reference_.size());
  }
  bool has_all_references() const { return has_reference(num_batches() - 1); }

  // Pieces sweep() assembles batch by batch.
  class Tally {
   public:
    Status add(const Evaluator& ev, int64_t batch, const runtime::NamedTensors& outputs);
    Score score(const Evaluator& ev) const;

   private:
    std::vector<metrics::Agreement> agree_;  // per output (sqnr, cosine)
    std::vector<double> sse_;                // per output sum of squared errors (mse)
    std::vector<int64_t> n_;                 // per output element count (mse)
    int64_t hits_ = 0, count_ = 0;           // top1
  };

  Metric metric() const { return options_.metric; }
  int threads() const { return options_.threads; }
  const ir::Model& model() const { return *model_; }
  // An executor from the factory the evaluator was made with (`m` borrowed).
  Expected<std::unique_ptr<runtime::Executor>> make_executor(const ir::Model& m,
                                                             int threads) const {
    return executors_(m, threads);
  }
  const data::Dataset& data() const { return *eval_; }
  int64_t num_batches() const { return eval_->num_batches(); }
  const runtime::NamedTensors& reference(int64_t batch) const {
    return reference_[static_cast<size_t>(batch)];
  }
  bool has_labels() const { return !labels_.empty(); }
  // Wall time of the FP32 model's run in create() (executor preparation excluded), over
  // float_pass_batches() batches: with all of them, one full forward pass, the unit of the
  // naive sweep cost. Also as CPU time of the process (all threads), steadier than wall time
  // on a machine shared with other work.
  double float_pass_seconds() const { return float_pass_seconds_; }
  double float_pass_cpu_seconds() const { return float_pass_cpu_seconds_; }
  int64_t float_pass_batches() const { return float_pass_batches_; }
  // Activation bytes the FP32 run held (its executor's pool): a worker's scale.
  int64_t float_pool_bytes() const { return float_pool_bytes_; }
  // The shape of every value of the FP32 model in its run's last batch
  // (Executor::value_shapes(); empty where the backend does not tell them).
  const std::vector<std::pair<std::string, ir::Shape>>& value_shapes() const {
    return value_shapes_;
  }

 private:
  Status score_float();  // float_score_ from the reference, once complete

  const ir::Model* model_ = nullptr;
  ExecutorFactory executors_;
  const data::Dataset* eval_ = nullptr;
  Options options_;
  std::vector<int64_t> labels_;
  std::vector<runtime::NamedTensors> reference_;  // FP32 outputs per batch
  Score float_score_;
  double float_pass_seconds_ = 0.0;
  double float_pass_cpu_seconds_ = 0.0;
  int64_t float_pass_batches_ = 0;
  int64_t float_pool_bytes_ = 0;
  std::vector<std::pair<std::string, ir::Shape>> value_shapes_;
};

// ---- Sweep ----------------------------------------------------------------------------------

struct LayerResult {
  std::string name;  // the unit's name (planner::Unit::name)
  std::string kind;  // "Conv", "Gemm", "Add", …
  Score score;       // the metric of the variant
  int64_t subgraph_nodes = 0;  // nodes run per batch for this unit (whole model without reuse)
};

struct SweepOptions {
  Mode mode = Mode::kOnly;
  planner::PlanOptions plan{};  // only_units / skip_units are set per variant
  bool reuse = true;            // prefix reuse (cut) instead of whole-model runs
  // Workers evaluating units concurrently: the units are dealt among them and each worker
  // runs its units' cuts merged into one graph on one executor (ev.threads() / parallel
  // threads each). 0: one worker per evaluator thread, as far as their activations fit in a
  // quarter of the machine's memory (auto_parallel; with an evaluator that ran nothing, the
  // base's first batch measures them); for executors on a GPU, set 1 (each worker's executor
  // would hold a device context of its own).
  int parallel = 0;
  // With reuse and several workers: whether the base's run on the next batch overlaps this
  // batch's cuts (one worker runs it after fewer cuts) or runs alone between batches. kAuto
  // overlaps when the evaluator's FP32 pass kept its threads less than 85 % busy or, with an
  // evaluator that ran nothing, when the base's first batch ran kernels of under 0.5 ms on
  // average (a pass that keeps its threads busy runs faster alone than beside the cuts).
  // Scores never depend on it.
  enum class BaseOverlap { kAuto, kOff, kOn };
  BaseOverlap overlap = BaseOverlap::kAuto;
  // Called with (work items done, total) after each eval batch, a work item being one unit on
  // one batch; on the calling thread.
  std::function<void(int64_t, int64_t)> progress;
  // The processes sharing the sweep (borrowed; null: this process alone). Every rank calls
  // sweep() alike; the variants are dealt to the ranks by a rule on the plan alone (the
  // costliest first, each to the least loaded rank), each rank runs its own with the base's
  // prefix reuse, and rank 0 gathers the scores: its result is one process's. The other ranks
  // get a result without scores. An error is every rank's (the lowest failing rank's).
  dist::Communicator* comm = nullptr;
};

struct SweepResult {
  Mode mode = Mode::kOnly;
  Score float_score;      // FP32 model
  Score quantized_score;  // every unit quantized
  std::vector<LayerResult> layers;  // ranked, most sensitive first
};

// Workers for SweepOptions::parallel = 0: one per evaluator thread, one thread each (a small
// model's ops then run without waking other threads, which costs more than they do), as far as
// their activations fit in a quarter of physical memory (a worker's merged cuts taken at twice
// the FP32 run's activations), and no more than there are jobs.
int auto_parallel(const Evaluator& ev, size_t jobs);

// The sweep over every unit the planner finds in `ev.model()` with `table`.
// An evaluator made with fewer reference batches (Evaluator::Options::reference_batches) gets
// the rest from the base's runs, where that is the FP32 model (mode only, with reuse).
Expected<SweepResult> sweep(const calib::CalibrationTable& table, Evaluator& ev,
                            const SweepOptions& options);

// Ranks in place: kOnly, worst score first; kAllBut, best score first (the unit whose staying
// float helps most). Ties keep graph order.
void rank(std::vector<LayerResult>& layers, Metric metric, Mode mode);

// ---- Selection ------------------------------------------------------------------------------

// When a partial model is good enough: top1/cosine: score >= float score - target_drop;
// sqnr: score >= target_drop (dB, as FP32's SQNR is infinite); mse: score <= target_drop.
bool meets_target(Metric metric, double score, double float_score, double target_drop);

struct SelectStep {
  std::string added;       // unit moved to float at this step ("" for step 0: all quantized)
  int64_t float_count = 0;
  Score score;
  bool meets = false;
};
struct Selection {
  std::vector<std::string> float_set;  // units left float
  Score score;                          // of the final partial model
  bool met = false;
  std::vector<SelectStep> trail;
};

// Greedy: starting from the fully quantized model, moves units to float in `ranked` order,
// re-evaluating the whole partial model each time, until it meets the target or holds
// `max_float` units (< 0: no cap).
Expected<Selection> select(const ir::Model& model, const calib::CalibrationTable& table,
                           const Evaluator& ev, const planner::PlanOptions& plan,
                           const std::vector<LayerResult>& ranked, double target_drop,
                           int64_t max_float);

// The model quantized with every unit except `float_set`.
Expected<ir::Model> partial_model(const ir::Model& model, const calib::CalibrationTable& table,
                                  const planner::PlanOptions& plan,
                                  const std::vector<std::string>& float_set);

// ---- the report (ptq sensitivity -o, --html) ---------------------------------------------------

// Wall times: the sweep (FP32 reference, fully quantized model and every unit) and the
// evaluator's FP32 run in it over `float_pass_batches` of the eval set's `batches` (all of
// them: one full pass, the unit of the naive cost, units x full passes; none in an only-mode
// sweep with reuse, whose base's runs give the FP32 outputs); the same as process CPU time (all
// threads), steadier on a shared machine.
struct Timing {
  double sweep = 0.0;
  double float_pass = 0.0;
  double sweep_cpu = 0.0;
  double float_pass_cpu = 0.0;
  int64_t float_pass_batches = 0;
  int64_t batches = 0;
};

// What a report records besides the results.
struct ReportInfo {
  std::string model_path{};  // as given
  Metric metric = Metric::kTop1;
  int64_t samples = 0;     // eval samples
  Timing timing{};
  double target_drop = 0.0;  // with a selection
  int64_t max_float = -1;    // with a selection
};

// The JSON report of a sweep over `model` (and of `selection`, when made), indented, with a
// final newline: the metric, the FP32 and fully quantized scores, the timing, every unit
// ranked, the selection's trail. Infinite metrics are written as "inf" / "-inf" strings; per
// output scores only for a model of several outputs and a metric other than top1.
std::string report_json(const ir::Model& model, const SweepResult& result,
                        const Selection* selection, const ReportInfo& info);

// The HTML page of a report (report_json's text, read from `report_file` for messages):
// report::html_report of `shown` (the partial or fully quantized model, named `label`) with the
// sweep's chart and table. Infinite metrics are drawn at the largest finite one and labelled.
// The graph is drawn with Graphviz when it is installed, else its DOT text is shown; a drawing
// that fails adds a warning and shows the DOT text.
Expected<std::string> report_html(std::string_view report_json_text, std::string_view report_file,
                                  const ir::Model& shown, const std::string& label,
                                  const std::string& title, const std::string& generated_by,
                                  std::vector<std::string>* warnings);

}  // namespace ptq::sensitivity
