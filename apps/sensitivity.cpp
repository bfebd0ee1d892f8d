// `ptq sensitivity MODEL (--data CALIB [--method M [--percentile P]] | --cache CACHE [--force])
//  --eval SRC [--labels LABELS.npy] [quantize's model options: --target, --exclude, …,
//  --per-tensor-weights, --bias-correction]
//  [--metric top1|sqnr|cosine|mse] [--mode only|all-but] [--target-drop X]
//  [--max-float-layers K] -o REPORT.json [--html REPORT.html] [--write PARTIAL.onnx]
//  [--parallel N] [--no-reuse] [--backend cpu|vulkan [--device N] [--strict]]
//  [--smoothquant [ALPHA]]`
// Partial-PTQ sweep (issue 8): per quantization unit, the metric with only that unit quantized
// (or all but it); a ranked table on stdout, every unit in the JSON report, an HTML page with
// the per-layer chart and the graph. With --target-drop, the greedy float set that meets the
// target, re-validated on the whole partial model (and written with --write).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "method_options.h"
#include "plan_options.h"
#include "smoothquant_options.h"
#include "progress.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/sensitivity.h"
#include "ptq/util/atomic_file.h"

namespace ptq::apps {

namespace {

namespace sens = ptq::sensitivity;

struct SensitivityOptions {
  std::string model;
  DataOptions data;
  std::vector<std::string> eval;
  int64_t eval_samples = 0;
  std::string labels;
  std::string cache;
  bool force = false;
  calib::MethodConfig method;
  PlanFlags plan;
  std::set<std::string> given;  // the recorded options given on the command line
  BackendOptions backend;
  int threads = 0;
  int parallel = 0;  // 0: the sweep chooses (CPU), 1 on Vulkan
  bool no_reuse = false;
  std::string metric = "top1";
  std::string mode = "only";
  std::optional<double> target_drop;
  int64_t max_float = -1;
  std::string out;
  std::string html;
  std::string write;
  SmoothQuantOption smoothquant;
};

Expected<std::vector<int64_t>> read_labels(const std::string& path, const data::Dataset& ds) {
  PTQ_ASSIGN_OR_RETURN(ir::Tensor t, data::load_npy(path));
  if (!ir::is_integer(t.dtype()) || t.rank() < 1 || t.dim(0) != ds.source_size()) {
    return invalid_input(
        "{}: labels must be integers of shape [N] with N = {} (the eval samples), not {} {}", path,
        ds.source_size(), ir::dtype_name(t.dtype()), ir::shape_str(t.shape()));
  }
  std::vector<int64_t> out;
  for (int64_t i : ds.order()) out.push_back(t.as_int64(i));
  return out;
}

// The table from --cache (adopting the options it records) or calibrated on --data, with the
// bias corrections of --bias-correction: what `ptq quantize` takes, so --write writes its model.
Expected<calib::CalibrationTable> get_table(const ir::Model& model, const SensitivityOptions& o,
                                            calibration::QuantizeSettings& settings,
                                            runtime::Engine& engine,
                                            int threads, const GlobalOptions& global) {
  if (!o.cache.empty()) {
    PTQ_ASSIGN_OR_RETURN(calibration::AcceptedCache cache,
                         calibration::read_cache_for(model, calibration::ModelForms(model), o.cache,
                                                     {.force = o.force, .settings = &settings,
                                                      .given = o.given}));
    for (const std::string& w : cache.warnings) log::warn("{}", w);
    PTQ_RETURN_IF_ERROR(
        calibration::use_bias_correction(model, cache.table, nullptr, threads, settings));
    return std::move(cache.table);
  }
  PTQ_ASSIGN_OR_RETURN(data::Dataset calib_data, open_dataset(o.data, model.graph));
  calibration::CalibrationOptions co;
  co.method = o.method;
  PTQ_RETURN_IF_ERROR(co.method.validate());
  co.plan = settings.plan;
  co.threads = threads;
  co.backend = o.backend.backend;
  ProgressLine line("sensitivity", "samples", calib_data.size(), global.quiet);
  co.progress = [&](const calibration::Progress& p) -> Status {
    line.set_stage(fmt::format("calibration pass {}/{}", p.pass, p.passes), p.samples_total);
    line.update(p.samples_done);
    return Status::ok();
  };
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t,
                       calibration::calibrate(model, *engine.executor, calib_data, co));
  line.finish();
  PTQ_RETURN_IF_ERROR(calibration::use_bias_correction(model, t, &calib_data, threads, settings));
  return t;
}

void print_table(const sens::SweepResult& r, sens::Metric metric) {
  fmt::print("float {}: {}   fully quantized: {}   mode {}\n", sens::metric_name(metric),
             metrics::format_metric(r.float_score.value, 4),
             metrics::format_metric(r.quantized_score.value, 4), sens::mode_name(r.mode));
  size_t width = 5;
  for (const auto& l : r.layers) width = std::max(width, l.name.size());
  fmt::print("{:>4}  {:<{}}  {:<8}  {:>10}\n", "rank", "layer", width, "kind",
             sens::metric_name(metric));
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    fmt::print("{:>4}  {:<{}}  {:<8}  {:>10}\n", i + 1, l.name, width, l.kind,
               metrics::format_metric(l.score.value, 4));
  }
}

Status write_html(const SensitivityOptions& o, const ir::Model& shown, const std::string& label,
                  const std::string& report_text, bool quiet) {
  std::vector<std::string> warnings;
  PTQ_ASSIGN_OR_RETURN(
      std::string html,
      sens::report_html(report_text, o.out, shown, label, "ptq sensitivity: " + o.model,
                        fmt::format("ptq {}", calibration::ptqkit_version()), &warnings));
  (void)quiet;  // -q hides progress only, never warnings
  for (const std::string& w : warnings) log::warn("{}", w);
  return util::write_file_atomic(o.html, html);
}

// The shape of a full eval batch of each input: what the sweep feeds, so what the planner binds
// (as `ptq quantize` binds its --data batches).
// Plan options whose dims are the eval batches' (a decision such as the matrix-vector MatMul
// test then sees the batch the sweep runs, not the library default for an open dim).
Expected<planner::PlanOptions> plan_options(const ir::Model& model, const data::Dataset& eval,
                                            const calib::CalibrationTable& table,
                                            planner::PlanOptions plan, int threads) {
  plan.method = table.method;
  plan.cache_hash = onnx::sha256_hex(calib::json_cache_string(table));
  plan.shapes_remedy = "give --eval data for every input:";
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  PTQ_RETURN_IF_ERROR(calibration::resolve_plan_shapes(
      model, {{"--eval", calibration::fed_shapes(eval)}}, *cpu, threads, plan));
  return plan;
}

// Executors for the sweep on the backend of `engine`: the CPU backend is shared; a Vulkan
// executor owns its device state, so each one is made afresh (quietly: the float model's CPU
// fallbacks were listed when `engine` was made, and --strict still refuses).
sens::ExecutorFactory sweep_executors(const runtime::Engine& engine,
                                      const runtime::EngineOptions& options) {
  if (engine.backend) return sens::backend_executors(*engine.backend);
  runtime::EngineOptions quiet = options;
  quiet.vulkan.on_fallback = nullptr;
  return [quiet](const ir::Model& m, int threads) -> Expected<std::unique_ptr<runtime::Executor>> {
    PTQ_ASSIGN_OR_RETURN(runtime::Engine e, runtime::make_engine(m, quiet, threads));
    return std::move(e.executor);
  };
}

// --target-drop is a drop from FP32 (top1, cosine) or a maximum (mse), so not negative; for
// sqnr a minimum in dB, any finite number.
Status check_target(const std::optional<double>& target, sens::Metric metric) {
  if (!target) return Status::ok();
  if (!std::isfinite(*target)) return usage_error("--target-drop must be a finite number");
  if (*target < 0 && metric != sens::Metric::kSqnr) {
    return usage_error("--target-drop {} with --metric {}: a {} cannot be negative", *target,
                       sens::metric_name(metric),
                       metric == sens::Metric::kMse ? "maximum mse" : "drop from FP32");
  }
  return Status::ok();
}

Status sensitivity_command(SensitivityOptions& o, const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(sens::Metric metric, sens::parse_metric(o.metric));
  PTQ_ASSIGN_OR_RETURN(sens::Mode mode, sens::parse_mode(o.mode));
  if (o.data.data.empty() == o.cache.empty()) {
    return usage_error("give either --data (calibrate now) or --cache (reuse a calibration cache)");
  }
  if (!o.write.empty() && !o.target_drop) return usage_error("--write needs --target-drop");
  PTQ_RETURN_IF_ERROR(check_target(o.target_drop, metric));
  const int threads = runtime::thread_count(o.threads);
  if (o.backend.devices.size() > 1 && global.comm->size() == 1) {
    return usage_error("a sweep runs on one device per process: give --device N, or a list under "
                       "mpirun (one device per rank)");
  }
  PTQ_ASSIGN_OR_RETURN(runtime::EngineOptions eo, engine_options(o.backend, global.quiet));
  PTQ_RETURN_IF_ERROR(runtime::pick_rank_device(eo, *global.comm));
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  // The sweep runs on the smoothed model, the one `quantize --smoothquant` would quantize.
  if (o.cache.empty()) {
    PTQ_RETURN_IF_ERROR(
        smooth_from_data(model, o.smoothquant, o.data, threads, global.quiet).status());
  } else {
    calibration::ModelForms forms(model);
    PTQ_RETURN_IF_ERROR(smooth_as_cached(model, o.smoothquant, o.cache, forms));
  }
  PTQ_ASSIGN_OR_RETURN(runtime::Engine engine, runtime::make_engine(model, eo, threads));
  PTQ_ASSIGN_OR_RETURN(calibration::QuantizeSettings settings, quantize_settings(o.plan));
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable table,
                       get_table(model, o, settings, engine, threads, global));

  PTQ_ASSIGN_OR_RETURN(data::DatasetSpec spec, make_dataset_spec(o.data, o.eval));
  if (spec.default_batch < 16 && o.data.batch == 0) spec.default_batch = 16;
  spec.samples = o.eval_samples;
  PTQ_ASSIGN_OR_RETURN(data::Dataset eval, data::Dataset::open(spec));
  PTQ_RETURN_IF_ERROR(eval.bind(model.graph));
  std::vector<int64_t> labels;
  if (!o.labels.empty()) {
    PTQ_ASSIGN_OR_RETURN(labels, read_labels(o.labels, eval));
  }
  PTQ_ASSIGN_OR_RETURN(planner::PlanOptions plan,
                       plan_options(model, eval, table, std::move(settings.plan), threads));

  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  // An only-mode sweep with reuse runs the FP32 model on every batch anyway (its base), which
  // gives the evaluator every FP32 output: it runs nothing itself.
  const bool base_is_float = mode == sens::Mode::kOnly && !o.no_reuse;
  PTQ_ASSIGN_OR_RETURN(
      sens::Evaluator ev,
      sens::Evaluator::create(
          model, sweep_executors(engine, eo), eval, labels.empty() ? nullptr : &labels,
          {.metric = metric,
           .threads = threads,
           .reference_batches = base_is_float ? 0 : sens::Evaluator::Options::kAllBatches}));
  sens::SweepOptions so;
  so.mode = mode;
  so.plan = plan;
  so.reuse = !o.no_reuse;
  so.comm = global.comm;
  // Each Vulkan worker would open a device context of its own for work the GPU serialises.
  so.parallel = o.parallel == 0 && o.backend.backend == "vulkan" ? 1 : o.parallel;
  ProgressLine line("sensitivity", "unit-batches", 0, global.quiet);
  bool staged = false;
  so.progress = [&](int64_t done, int64_t total) {
    if (!staged) line.set_stage("sweep", total);
    staged = true;
    line.update(done);
  };
  PTQ_ASSIGN_OR_RETURN(sens::SweepResult result, sens::sweep(table, ev, so));
  line.finish();
  if (global.comm->rank() != 0) return Status::ok();  // rank 0 selects and reports
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  if (!global.quiet) print_table(result, metric);

  std::optional<sens::Selection> sel;
  if (o.target_drop) {
    PTQ_ASSIGN_OR_RETURN(
        sel, sens::select(model, table, ev, plan, result.layers, *o.target_drop, o.max_float));
    if (!global.quiet) {
      fmt::print("selection: {} float layer(s) [{}], {} = {} ({})\n", sel->float_set.size(),
                 fmt::join(sel->float_set, ", "), sens::metric_name(metric),
                 metrics::format_metric(sel->score.value, 4),
                 sel->met ? "target met" : "target NOT met");
    }
  }
  sens::ReportInfo info{.model_path = o.model,
                        .metric = metric,
                        .samples = eval.size(),
                        .timing = {seconds, ev.float_pass_seconds(), cpu_seconds,
                                   ev.float_pass_cpu_seconds(), ev.float_pass_batches(),
                                   ev.num_batches()},
                        .target_drop = o.target_drop.value_or(0.0),
                        .max_float = o.max_float};
  const std::string text = sens::report_json(model, result, sel ? &*sel : nullptr, info);
  PTQ_RETURN_IF_ERROR(util::write_file_atomic(o.out, text));

  std::optional<ir::Model> partial;
  if (sel || !o.html.empty()) {
    PTQ_ASSIGN_OR_RETURN(
        partial,
        sens::partial_model(model, table, plan, sel ? sel->float_set : std::vector<std::string>{}));
  }
  if (!o.write.empty()) PTQ_RETURN_IF_ERROR(onnx::save_model(*partial, o.write));
  if (!o.html.empty()) {
    const std::string label = !o.write.empty() ? o.write
                              : sel            ? "partial model"
                                               : "fully quantized model";
    PTQ_RETURN_IF_ERROR(write_html(o, *partial, label, text, global.quiet));
  }
  return Status::ok();
}

}  // namespace

Runner register_sensitivity(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<SensitivityOptions>();
  app.description(
      "partial-PTQ sweep: per quantizable layer the metric with only it quantized (or all but "
      "it), ranked; with --target-drop the greedy float set that meets the target");
  app.add_option("model", o->model, "float ONNX model")->required();
  add_data_options(app, o->data, {.required = false, .default_batch = 16, .finite_only = true});
  add_source_option(app, "--eval", o->eval, "evaluation data (same forms as --data)", true);
  app.add_option("--eval-samples", o->eval_samples, "use the first N eval samples (default: all)")
      ->check(at_least(0));
  app.add_option("--labels", o->labels, "integer .npy, one label per eval sample (top1 accuracy)");
  app.add_option("--cache", o->cache,
                 "reuse this calibration cache instead of calibrating on --data");
  app.add_flag("--force", o->force,
               "use a cache calibrated for another graph, or recording other options than those "
               "given (the given ones win)");
  add_method_options(app, o->method, {.what = "calibration method with --data"});
  add_smoothquant_option(app, o->smoothquant);
  add_plan_options(app, o->plan);
  app.add_option("--metric", o->metric,
                 "top1 (accuracy with --labels, else agreement with FP32), sqnr, cosine or mse");
  app.add_option("--mode", o->mode,
                 "only: one layer quantized; all-but: all layers but one quantized");
  app.add_option(
      "--target-drop", o->target_drop,
      "keep the most sensitive layers float until the partial model meets this: top1/cosine "
      "drop from FP32 (top1 a fraction: 0.005 = half a point), sqnr minimum dB, mse maximum");
  app.add_option("--max-float-layers", o->max_float, "cap on the float set (default: none)")
      ->check(at_least(0));
  app.add_option("-o,--output", o->out, "JSON report")->required();
  app.add_option("--html", o->html, "self-contained HTML report");
  app.add_option("--write", o->write, "write the partial model of --target-drop");
  add_backend_options(app, o->backend, true);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_option("--parallel", o->parallel,
                 "layers evaluated concurrently, each on threads / N threads (default: one a "
                 "thread where memory allows; 1 on Vulkan)")
      ->check(at_least(1));
  app.add_flag("--no-reuse", o->no_reuse,
               "run every variant whole instead of reusing the float prefix");
  return [o, &global, &app]() {
    o->given = given_plan_flags(app);
    return sensitivity_command(*o, global);
  };
}

}  // namespace ptq::apps
