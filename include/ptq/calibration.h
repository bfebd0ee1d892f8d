// The calibration module (ptq_calibration): runs a float model over a dataset and measures its
// activations. Pass 1 feeds each observed tensor's min/max into a calib::Collector (fixing the
// histogram range T per tensor); pass 2 runs the same samples again and feeds |x| histograms
// over [0, T]; the method then turns each histogram into amax. Min-max needs pass 1 only.
// Memory is O(tensors x bins): only statistics are kept, never activations or samples.
//
//   calibration::CalibrationOptions o;
//   o.method = {.name = "entropy"};
//   o.threads = 8;
//   o.backend = "cpu";
//   o.date = calibration::iso8601_utc(std::time(nullptr));  // the library never reads a clock
//   PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, calibration::calibrate(model, exec, data, o));
//   PTQ_RETURN_IF_ERROR(calib::write_cache(t, "model.calib.json"));
//
// The sharded flow of docs/CACHE_FORMAT.md: each shard runs with ranges_only (a ranges table),
// the ranges tables are merged (calib::merge_tables), each shard runs again with
// common_ranges = the merged table, and calib::merge_calibrations adds the shard tables.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/dist.h"
#include "ptq/ir.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::calibration {

// Where a run is, reported after every batch.
struct Progress {
  int pass = 1;               // 1: ranges, 2: histograms
  int passes = 2;             // 1 for min-max and ranges-only runs
  int64_t samples_done = 0;   // samples of this pass done so far
  int64_t samples_total = 0;  // samples per pass
};
// Called once a batch is done, one call at a time; a non-ok Status aborts the run with it.
using ProgressFn = std::function<Status(const Progress&)>;

struct CalibrationOptions {
  calib::MethodConfig method{};
  // false: the activations the planner may quantize (planner::quantizable_activations with
  // `plan`); true: every float activation (graph inputs and node outputs).
  bool all_tensors = false;
  planner::PlanOptions plan{};
  // Count and skip NaN/±Inf instead of failing (the counts land in the table per tensor).
  bool ignore_nonfinite = false;
  // Phase 1 of the sharded flow: run the range pass only and return the ranges table
  // (method "minmax", no histograms).
  bool ranges_only = false;
  // Phase 2 of the sharded flow: bin every tensor over its range in this merged ranges table
  // instead of this data's own (borrowed; must outlive the call). Histogram methods only.
  const calib::CalibrationTable* common_ranges = nullptr;
  // Threads for the method search over tensors (the executor has its own thread count).
  int threads = 1;
  // Read the next batch on a second thread while the current one runs.
  bool prefetch = true;
  // The processes sharing the run (borrowed; null: this process alone). Every rank calls
  // calibrate() with the same model, data and options; rank 0 gets the table, the others an
  // empty one. An error is every rank's: that of the first failing batch, whichever rank ran it.
  dist::Communicator* comm = nullptr;
  // Recorded in the table's run info.
  std::string backend = "cpu";
  std::string date;            // ISO 8601; the library never reads a clock
  std::string ptqkit_version;  // "" records this build's version
  ProgressFn progress;         // optional
};

// The tensors a run with these options measures, sorted. With all_tensors, values whose dtype
// the model does not declare are included (and skipped at run time if they are not float).
Expected<std::vector<std::string>> calibration_tensors(const ir::Model& model,
                                                       const CalibrationOptions& options);

// Calibrates `model` on `dataset` (bound to the model's graph) with `executor` (created for
// `model`). Returns the table with the model identity (graph hash, opset, input shapes fed)
// and run info filled. Errors: a non-finite value (without ignore_nonfinite) names the tensor
// and the sample's index in the data source; an empty dataset; a common_ranges table of
// another model or missing a tensor.
Expected<calib::CalibrationTable> calibrate(const ir::Model& model, runtime::Executor& executor,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options);

// The same with several executors of `model` (workers), each running every executors.size()-th
// batch of a pass on a thread of its own; the first runs on the calling thread. Statistics
// combine by min/max and integer addition, so the table is the same bit for bit for any number
// of workers, and an error is that of the first failing batch, as with one. `progress` is
// called by the worker that finished a batch, one call at a time.
Expected<calib::CalibrationTable> calibrate(const ir::Model& model,
                                            std::span<runtime::Executor* const> executors,
                                            const data::Dataset& dataset,
                                            const CalibrationOptions& options);

// The model identity a table records: graph hash, default-domain opset, and the real inputs
// with their declared shapes (-1 for unknown dims); calibrate() replaces the shapes by the ones
// fed.
calib::ModelIdentity model_identity(const ir::Model& model);

// ---- quantize settings -------------------------------------------------------------------------

// What decides a quantized model besides the ranges: the planner's options and whether biases
// are corrected. A JSON cache written by `ptq quantize` records them (CalibrationTable::options,
// one key each; other keys there belong to other options and are kept), so that quantizing
// again with that cache reproduces the model byte for byte.
struct QuantizeSettings {
  planner::PlanOptions plan{};
  bool bias_correction = false;
};

// The command-line flags of the recorded settings ("--target", "--per-tensor-weights", …).
std::vector<std::string> recorded_option_flags();
// The flag of the setting recorded under `key` ("per_tensor_weights": "--per-tensor-weights");
// "" for a key no setting has.
std::string recorded_option_flag(std::string_view key);
// Writes the settings into table.options (other keys kept).
void record_settings(const QuantizeSettings& settings, calib::CalibrationTable& table);
// Takes the settings `table` records: each recorded option whose flag is not in `given` is
// adopted; a given one wins (as TensorRT's builder flags do over a calibration cache). The one
// refusal: with bias correction on and corrections in `table`, a given option that changes the
// quantized weights they were measured for (per-tensor weights, BatchNormalization folding) is
// invalid input naming the flag, both values and `cache_file`, unless `force` (then a warning).
// Options the cache does not record (an older cache, a TensorRT one) stay as given.
Expected<calib::Warnings> adopt_settings(const calib::CalibrationTable& table,
                                         std::string_view cache_file,
                                         const std::set<std::string>& given, bool force,
                                         QuantizeSettings& settings);

// ---- bias correction ---------------------------------------------------------------------------

// The bias corrections (planner::PlanOptions::bias_corrections) for quantizing `model` with
// `table` and `options`: for each unit whose Conv, ConvTranspose or Gemm weight the plan
// quantizes, the per-output-channel mean over `dataset` (bound to the model) of op(x, Wq - W),
// x the float model's input to the op, W its weight as apply() quantizes it (BatchNormalization
// folded) and Wq = planner::fake_quantize_weights(W): the mean output shift the quantized weight
// causes (Nagel et al. 2019, empirical bias correction). One pass on the CPU with `threads`;
// float64 running sums per channel, so memory does not grow with the sample count. ORT weight
// scales widened for an int32 bias (rare) are not seen: those channels are corrected for the
// unwidened scales. MatMul (no bias input) is not corrected.
Expected<planner::BiasCorrections> measure_bias_corrections(const ir::Model& model,
                                                            const calib::CalibrationTable& table,
                                                            const planner::PlanOptions& options,
                                                            const data::Dataset& dataset,
                                                            int threads);

// Sets settings.plan.bias_corrections when settings.bias_correction: measured on `dataset` when
// given (and stored in table.bias_corrections, for the cache), else the ones `table` holds; a
// usage error when there is neither data nor a cache recording bias correction.
Status use_bias_correction(const ir::Model& model, calib::CalibrationTable& table,
                           const data::Dataset* dataset, int threads, QuantizeSettings& settings);

// ---- reusing a cache ---------------------------------------------------------------------------

// What a cache may have been calibrated for: the graph hash of every form of the model (as
// given, then each form it was turned into: Q/DQ stripped, opset converted), and for a model
// ptqkit quantized, the hash of the cache it was quantized with (its ptqkit.cache_hash
// metadata), so a requantized model accepts that cache although stripping cannot give back the
// float weights the cache's graph hash was taken of.
class ModelForms {
 public:
  explicit ModelForms(const ir::Model& given);
  // Records a form the model was turned into.
  void add(const ir::Model& form);
  // True when `table` was calibrated for one of the forms, or is the recorded cache.
  bool matches(const calib::CalibrationTable& table) const;
  const std::string& given_hash() const { return graph_hashes_.front(); }
  const std::string& latest_hash() const { return graph_hashes_.back(); }

 private:
  std::vector<std::string> graph_hashes_;
  std::string cache_hash_;
};

struct CacheUse {
  // Use a cache calibrated for another graph (with a warning) instead of refusing it.
  bool force = false;
  // When given, the cache's tensors are checked against the activations this plan quantizes
  // in `model`: tensors missing from the cache, and entries naming no value of the model, are
  // warnings (entries for values the plan leaves float, an --exclude say, are expected).
  const planner::PlanOptions* plan = nullptr;
  // When given, the settings the cache records are adopted into it first (adopt_settings with
  // `given`), and the fit is checked against its plan instead of `plan`.
  QuantizeSettings* settings = nullptr;
  std::set<std::string> given{};
};

// A cache read for a model, with the warnings to show: the reader's, then the checks'.
struct AcceptedCache {
  calib::CalibrationTable table{};
  calib::Warnings warnings{};
};

// Reads the cache at `path` (any format) for `model`, the latest of `forms`. A cache that
// records the graph hash of none of the forms is refused, unless `use.force`: invalid input
// naming the file and both hashes (calib::require_same_model). A cache recording no hash (a
// TensorRT or ONNX Runtime file) is taken as it is.
Expected<AcceptedCache> read_cache_for(const ir::Model& model, const ModelForms& forms,
                                       const std::filesystem::path& path, const CacheUse& use);

// ---- SmoothQuant (docs/SMOOTHQUANT.md) --------------------------------------------------------

struct SmoothQuantRunOptions {
  planner::SmoothQuantOptions smoothing{};
  int threads = 1;      // the executor's
  ProgressFn progress;  // optional; pass 1 of 1
};

// max |x| per channel of the last axis of each of `tensors` over `dataset`, run on `executor`,
// whose backend must hand observers host tensors (the CPU backend). One double per channel is
// kept whatever the sample count; NaN/Inf are skipped (calibration reports them).
Expected<std::map<std::string, std::vector<double>>> channel_maxima(
    runtime::Executor& executor, const data::Dataset& dataset,
    std::span<const std::string> tensors, const ProgressFn& progress = {});

// One pass of `dataset` (bound to `model`) on `backend` measures the channel maxima of every
// planner::smoothquant_targets tensor, then smooths `model` in place with the factors of those
// with outlier channels (planner::smoothquant_factors, planner::apply_smoothquant). Returns the
// record to keep in the calibration table (no factors: nothing was smoothed).
Expected<calib::SmoothQuantRecord> smoothquant(ir::Model& model, runtime::Backend& backend,
                                               const data::Dataset& dataset,
                                               const SmoothQuantRunOptions& options);

// For a quantize from the cache at `path`: when it records SmoothQuant factors (a ptqkit JSON
// cache), smooths `model` with them and adds the smoothed form to `forms`, so the cache, whose
// graph hash is the smoothed model's, is accepted. Returns the record, or nullopt.
Expected<std::optional<calib::SmoothQuantRecord>> smooth_as_cached(
    ir::Model& model, ModelForms& forms, const std::filesystem::path& path);

// ---- input shapes for planning -----------------------------------------------------------------

// The planner decides with concrete input shapes where its decisions need dims the model leaves
// open (as TensorRT's calibration profile fixes them). They come from sources, in order: the
// batches calibration or evaluation fed, the input shapes a ptqkit JSON cache recorded, shapes
// the user gave. A TensorRT text cache records none.
struct ShapeSource {
  std::string label{};  // for messages ("--data", "the cache c.json")
  onnx::InputShapes shapes{};
  // A name that is no input of the model is an error; when false it is dropped (a cache
  // calibrated for another graph, used with --force).
  bool checked = true;
};

// The shape of a full batch of each input of `dataset` (its first batch; a shorter dataset
// is one batch): what calibration or evaluation feeds, and what planning binds.
onnx::InputShapes fed_shapes(const data::Dataset& dataset);

// Sets plan.value_dims so the planner sees concrete dims where its decisions need them: only
// when some decision needs a dim the model leaves open, binds the sources' shapes (a later
// source fills dims an earlier one left open; a disagreement is an error) and re-runs shape
// inference; dims that inference cannot follow are measured by running the model once on zero
// inputs of the bound shapes on `backend` with `threads` (best effort: a model that cannot run
// leaves them open). Also sets require_shapes, so a dim still open fails planning with one line
// (ending with plan.shapes_remedy, which should name the sources).
Status resolve_plan_shapes(const ir::Model& model, const std::vector<ShapeSource>& sources,
                           runtime::Backend& backend, int threads, planner::PlanOptions& plan);

// ---- the quantize flow (quantize_model.cpp) -------------------------------------------------
// Everything `ptq quantize` does, for every front end (the CLI, the Python module's quantize):
// the model made plannable, SmoothQuant, calibration or a cache (its recorded options adopted),
// bias correction, the caches written, the plan with concrete shapes, the Q/DQ model checked
// and written. The same request gives the same bytes whichever front end makes it.

// Makes `model` (named `name` in messages) plannable: a model holding Q/DQ is refused unless
// `requantize` (its Q/DQ is stripped); one below opset 13 whose ops changed meaning on the way
// is converted (onnx::convert_opset). Each new form is added to `forms` (so its cache is
// accepted) and each change is described in one line of `notes` (warnings to show).
Status prepare_for_planning(ir::Model& model, std::string_view name, bool requantize,
                            ModelForms& forms, std::vector<std::string>& notes);

// What the front end supplies: the data, the calibration workers, the progress display and the
// warnings. Callbacks run on the calling thread, except a pass's progress function, which the
// calibration workers call one at a time.
class QuantizeFrontEnd {
 public:
  virtual ~QuantizeFrontEnd() = default;
  // The calibration data bound to `graph`; opened again by each pass over it.
  virtual Expected<data::Dataset> open_data(const ir::Graph& graph) = 0;
  // The calibration workers for `model`, owned by the front end until the flow returns.
  virtual Expected<std::vector<runtime::Executor*>> calibration_workers(const ir::Model& model) = 0;
  // A pass over `samples` samples starts: "smoothquant" or "calibration" (whose Progress
  // counts its passes); its progress goes to the function returned (a non-ok Status from it
  // stops the flow). end_pass() follows it, also when the pass fails.
  virtual ProgressFn start_pass(std::string_view stage, int64_t samples) = 0;
  virtual void end_pass() = 0;
  // A one-line warning; a non-ok Status stops the flow with it (a warning made an error).
  virtual Status warn(const std::string& message) = 0;
  // A phase is done: "load model", "calibrate" or "read cache", "quantize", "write model".
  virtual void phase_done(std::string_view /*phase*/) {}
};

struct QuantizeRequest {
  std::filesystem::path model;  // the float model (named so in messages)
  std::filesystem::path out;    // the Q/DQ model written
  bool external_data = false;   // large initializers in OUT.data beside it
  bool requantize = false;      // strip an already quantized model's Q/DQ first
  // Empty: calibrate on the front end's data. Else reuse this cache (any format): the options
  // it records and `given` lacks are adopted (adopt_settings); `force` takes a cache of
  // another graph, or one whose bias corrections disagree, with a warning.
  std::filesystem::path cache{};
  bool force = false;
  std::set<std::string> given{};  // recorded_option_flags() given by the user
  QuantizeSettings settings{};    // plan.shapes_remedy should name the front end's sources
  // SmoothQuant's alpha: the float model is smoothed before calibration; with a cache, the
  // cache's record smooths it and an alpha given must agree.
  std::optional<double> smoothquant{};
  // Calibration: method, date, ignore_nonfinite, threads, backend, comm (plan and progress are
  // set by the flow). Under a communicator, ranks other than 0 stop after calibration.
  CalibrationOptions calibration{};
  int threads = 1;  // CPU threads of SmoothQuant's and bias correction's passes and of planning
  // Labels of the shape sources in messages: the data's, then the user's shapes.
  std::string data_label = "the data";
  onnx::InputShapes input_shapes{};
  std::string input_shapes_label = "the input shapes";
  std::optional<std::filesystem::path> cache_out{};  // the ptqkit JSON cache written
  std::optional<std::filesystem::path> trt_cache{};  // a TensorRT text cache written
  calib::TrtWriteOptions trt{};
};

struct QuantizeOutcome {
  bool written = false;  // false on a rank other than 0, which stops after calibration
  planner::QuantizeResult result{};
  QuantizeSettings settings{};  // as used: given, with a cache's recorded options adopted
  std::string method;           // the calibration table's
  std::optional<calib::SmoothQuantRecord> smoothquant{};
  int64_t weight_bytes_before = 0;  // initializers of the model loaded
  int64_t weight_bytes_after = 0;   // and of the model written
};

// Runs the flow. Warnings (model conversions, cache checks, the planner's, ranges that clip
// much of their tensor) go to front_end.warn. Nothing is written when a step fails before
// the caches (the caches before the model: a model that fails to plan keeps its calibration).
Expected<QuantizeOutcome> quantize_model(const QuantizeRequest& request,
                                         QuantizeFrontEnd& front_end);

// A usage error when SmoothQuant at `alpha` (nullopt: not asked for) is asked of a quantize
// from the cache `cache`, whose record is `record`, and they disagree.
Status check_smoothquant_agrees(const std::optional<calib::SmoothQuantRecord>& record,
                                std::optional<double> alpha, const std::filesystem::path& cache);

// The bytes of `model`'s initializers.
int64_t weight_bytes(const ir::Model& model);

// This build's version (PTQ_VERSION_STRING, ptq/version.h).
std::string_view ptqkit_version();

// "2024-05-01T12:00:00Z" for a Unix time in seconds.
std::string iso8601_utc(int64_t unix_seconds);

}  // namespace ptq::calibration
