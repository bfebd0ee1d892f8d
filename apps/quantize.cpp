// `ptq quantize MODEL (--data SRC [calibrate's options] | --cache CACHE) -o OUT.onnx
//  [--target tensorrt|ort [--ort-ep cpu|cuda|tensorrt]] [--activation-type int8|uint8]
//  [--exclude NODE,…] [--exclude-op-types T,…] [--nodes-to-quantize NODE,…]
//  [--op-types-to-quantize T,…] (plan_options.h) [--per-tensor-weights] [--weights-float]
//  [--cache-out CACHE.json] [--trt-cache CACHE.cache] [--input-shape NAME=D,D…[;…]]
//  [--force] [--requantize] [--external-data] [--smoothquant [ALPHA]] [--json]`
// writes the Q/DQ model. With --data it calibrates first (the calibration driver, as `ptq
// calibrate`) and writes the cache beside the output; with --cache it reuses a cache of any
// format (ptqkit JSON, TensorRT text, ONNX Runtime) and needs no data.
//
// The work is calibration::quantize_model (include/ptq/calibration.h, "the quantize flow"),
// which the Python module's quantize runs too; this file parses the options, supplies the data,
// workers, progress line and warnings (CommandLine), and prints what was written.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "method_options.h"
#include "plan_options.h"
#include "progress.h"
#include "input_shapes.h"
#include "json_output.h"
#include "phase_times.h"
#include "run_date.h"
#include "smoothquant_options.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"
#include "ptq/report.h"
#include "ptq/runtime.h"

namespace ptq::apps {

namespace {

namespace fs = std::filesystem;

struct QuantizeOptions {
  std::string model;
  std::string out;
  DataOptions data;
  BackendOptions backend;
  calib::MethodConfig method;
  int threads = 0;
  int workers = 0;  // calibration workers (0: make_calibration_engines chooses)
  bool ignore_nonfinite = false;
  std::string cache;
  std::string cache_out;
  std::string trt_cache;
  std::string trt_version = "8.6.1";
  std::string trt_algo;
  PlanFlags plan;
  std::set<std::string> given;  // the recorded options given on the command line
  std::vector<std::string> input_shapes;
  bool force = false;
  bool requantize = false;
  bool external_data = false;
  SmoothQuantOption smoothquant;
  bool json = false;
};

// OUT.onnx -> OUT.calib.json beside it.
fs::path default_cache_out(const fs::path& out) {
  fs::path p = out;
  if (p.extension() == ".onnx") p.replace_extension();
  return p.string() + ".calib.json";
}

// The flow's data, workers, progress line, warnings and phase times, as the command line has
// them.
class CommandLine : public calibration::QuantizeFrontEnd {
 public:
  CommandLine(const QuantizeOptions& o, const GlobalOptions& global, int threads)
      : o_(o), global_(global), threads_(threads) {}

  Expected<data::Dataset> open_data(const ir::Graph& graph) override {
    return open_dataset(o_.data, graph);
  }
  Expected<std::vector<runtime::Executor*>> calibration_workers(const ir::Model& model) override {
    PTQ_ASSIGN_OR_RETURN(runtime::EngineOptions eo, engine_options(o_.backend, global_.quiet));
    PTQ_RETURN_IF_ERROR(runtime::pick_rank_device(eo, *global_.comm));
    PTQ_ASSIGN_OR_RETURN(engines_,
                         runtime::make_calibration_engines(model, eo, threads_, o_.workers));
    return engines_.executors();
  }
  calibration::ProgressFn start_pass(std::string_view stage, int64_t samples) override {
    const bool calibration = stage == "calibration";
    line_.emplace(calibration ? "quantize" : std::string(stage), "samples", samples, global_.quiet);
    return [this, calibration, pass = 0](const calibration::Progress& p) mutable -> Status {
      if (calibration && p.pass != pass) {
        pass = p.pass;
        line_->set_stage(fmt::format("calibration pass {}/{}", p.pass, p.passes), p.samples_total);
      }
      line_->update(p.samples_done);
      return Status::ok();
    };
  }
  void end_pass() override { line_.reset(); }
  Status warn(const std::string& message) override {
    log::warn("{}", message);
    return Status::ok();
  }
  void phase_done(std::string_view phase) override { times_.mark(phase); }
  const PhaseTimes& times() const { return times_; }

 private:
  const QuantizeOptions& o_;
  const GlobalOptions& global_;
  int threads_;
  runtime::CalibrationEngines engines_;
  std::optional<ProgressLine> line_;
  PhaseTimes times_;
};

std::string size_str(int64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024)
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

int64_t file_bytes(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// The JSON cache written: --cache-out, else with --data OUT.calib.json, else none.
std::optional<fs::path> json_cache_out(const QuantizeOptions& o) {
  if (!o.cache_out.empty()) return fs::path(o.cache_out);
  if (o.cache.empty()) return default_cache_out(o.out);
  return std::nullopt;
}

// Fills the flow's request `r` for these options and settings.
Status fill_request(const QuantizeOptions& o, calibration::QuantizeSettings settings, int threads,
                    const GlobalOptions& global, calibration::QuantizeRequest& r) {
  r.model = o.model;
  r.out = o.out;
  r.external_data = o.external_data;
  r.requantize = o.requantize;
  r.cache = o.cache;
  r.force = o.force;
  r.given = o.given;
  r.settings = std::move(settings);
  r.settings.plan.shapes_remedy =
      "give --data, a JSON cache that records input shapes, or --input-shape";
  if (o.smoothquant.given()) r.smoothquant = o.smoothquant.alpha;
  r.calibration.method = o.method;
  PTQ_ASSIGN_OR_RETURN(r.calibration.date, run_date());
  r.calibration.ignore_nonfinite = o.ignore_nonfinite;
  r.calibration.threads = threads;
  r.calibration.backend = o.backend.backend;
  r.calibration.comm = global.comm;
  r.threads = threads;
  r.data_label = "--data";
  PTQ_ASSIGN_OR_RETURN(r.input_shapes, parse_input_shapes(o.input_shapes));
  r.input_shapes_label = "--input-shape";
  r.cache_out = json_cache_out(o);
  if (!o.trt_cache.empty()) {
    r.trt_cache = o.trt_cache;
    PTQ_ASSIGN_OR_RETURN(r.trt.version, calib::parse_trt_version(o.trt_version));
    r.trt.algorithm = o.trt_algo;
  }
  return Status::ok();
}

// ": a, b, c" for a list, the first `limit` names and "… (N more)" beyond.
std::string list_head(const std::vector<std::string>& names, size_t limit = 12) {
  if (names.empty()) return "";
  const size_t shown = std::min(limit, names.size());
  std::string s = fmt::format(
      ": {}", fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (shown < names.size()) s += fmt::format(", … ({} more)", names.size() - shown);
  return s;
}

void print_written(const QuantizeOptions& o, const calibration::QuantizeOutcome& q) {
  if (o.cache.empty() && q.smoothquant) {  // smoothed now, on --data
    fmt::print("SmoothQuant (alpha {}): {} activation(s) with outlier channels smoothed\n",
               q.smoothquant->alpha, q.smoothquant->factors.size());
  }
  if (std::optional<fs::path> json_out = json_cache_out(o)) {
    fmt::print("calibration cache: {}\n", json_out->string());
  }
  if (!o.trt_cache.empty()) fmt::print("TensorRT cache: {}\n", o.trt_cache);
}

void print_summary(const QuantizeOptions& o, const calibration::QuantizeOutcome& q) {
  const planner::QuantizeResult& r = q.result;
  print_written(o, q);
  fmt::print("wrote {} (target {}, {} calibration)\n", o.out,
             planner::target_name(q.settings.plan.target), q.method);
  fmt::print("  Q/DQ nodes:        {} QuantizeLinear, {} DequantizeLinear\n", r.quantize_nodes,
             r.dequantize_nodes);
  fmt::print("  quantized layers:  {}{}\n", r.quantized_nodes.size(), list_head(r.quantized_nodes));
  if (r.folded_batchnorms > 0) fmt::print("  folded BatchNorms: {}\n", r.folded_batchnorms);
  if (r.corrected_biases > 0) fmt::print("  corrected biases:  {}\n", r.corrected_biases);
  fmt::print(
      "  float tensors:     {}{}\n", r.float_tensors.size(),
      r.float_tensors.empty() ? "" : " (no calibrated range)" + list_head(r.float_tensors, 1000));
  const int64_t in_file = file_bytes(o.model);
  int64_t out_file = file_bytes(o.out);
  if (o.external_data) out_file += file_bytes(fs::path(o.out).string() + ".data");
  fmt::print("  size:              {} -> {} (weights {} -> {})\n", size_str(in_file),
             size_str(out_file), size_str(q.weight_bytes_before), size_str(q.weight_bytes_after));
}

void print_report(const QuantizeOptions& o, const calibration::QuantizeOutcome& q,
                  const PhaseTimes& times) {
  const planner::QuantizeResult& r = q.result;
  const planner::PlanOptions& plan = q.settings.plan;
  Json written = {{"model", o.out}};
  if (o.external_data) written["external_data"] = o.out + ".data";
  if (std::optional<fs::path> cache = json_cache_out(o)) written["cache"] = cache->string();
  if (!o.trt_cache.empty()) written["trt_cache"] = o.trt_cache;
  const bool uint8 = plan.activation_type == planner::ActivationType::kUInt8;
  print_json({{"command", "quantize"},
              {"model", o.model},
              {"written", std::move(written)},
              {"target", std::string(planner::target_name(plan.target))},
              {"activation_type", uint8 ? "uint8" : "int8"},
              {"method", q.method},
              {"quantize_linear_nodes", r.quantize_nodes},
              {"dequantize_linear_nodes", r.dequantize_nodes},
              {"quantized_nodes", r.quantized_nodes},
              {"tensors", quantized_tensors_json(r, q.method)},
              {"float", float_set_json(r)},
              {"warnings", r.warnings},
              {"seconds", seconds_json(times)}});
}

Status quantize_command(QuantizeOptions& o, const GlobalOptions& global) {
  if (o.data.data.empty() == o.cache.empty()) {
    return usage_error("give either --data (calibrate now) or --cache (reuse a calibration cache)");
  }
  PTQ_ASSIGN_OR_RETURN(calibration::QuantizeSettings settings, quantize_settings(o.plan));
  const int threads = runtime::thread_count(o.threads);
  calibration::QuantizeRequest request;
  PTQ_RETURN_IF_ERROR(fill_request(o, std::move(settings), threads, global, request));
  CommandLine front_end(o, global, threads);
  PTQ_ASSIGN_OR_RETURN(calibration::QuantizeOutcome outcome,
                       calibration::quantize_model(request, front_end));
  if (!outcome.written) return Status::ok();  // rank 0 plans and writes alone
  if (o.json) {
    print_report(o, outcome, front_end.times());
  } else if (!global.quiet) {
    print_summary(o, outcome);
  }
  return Status::ok();
}

}  // namespace

Runner register_quantize(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<QuantizeOptions>();
  app.description(
      "write the Q/DQ (INT8) model; with --data calibrate first (and write the cache beside the "
      "output as OUT.calib.json unless --cache-out), with --cache reuse a calibration cache");
  app.add_option("model", o->model, "ONNX model (float)")->required();
  app.add_option("-o,--out", o->out, "the quantized model to write (.onnx)")->required();
  add_data_options(app, o->data, {.required = false, .default_batch = 16});
  add_backend_options(app, o->backend, true);
  add_method_options(app, o->method, {.what = "calibration method with --data"});
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  add_workers_option(app, o->workers);
  app.add_flag("--ignore-nonfinite", o->ignore_nonfinite,
               "calibration: count and skip NaN/Inf activations instead of failing");
  app.add_option("--cache", o->cache,
                 "reuse this calibration cache (ptqkit JSON, TensorRT or ONNX Runtime format) "
                 "instead of calibrating");
  app.add_option("--cache-out", o->cache_out,
                 "write the ptqkit JSON cache here (default with --data: OUT.calib.json beside "
                 "the output; with --cache: none)");
  app.add_option("--trt-cache", o->trt_cache, "also write a TensorRT text calibration cache");
  app.add_option("--trt-version", o->trt_version, "TensorRT version of that cache's header")
      ->capture_default_str();
  app.add_option("--trt-algo", o->trt_algo, trt_algo_help());
  add_plan_options(app, o->plan);
  app.add_option("--input-shape,--shapes", o->input_shapes,
                 "input shapes the planner decides with where the model's are symbolic, as "
                 "NAME=D,D,… (e.g. x=1,128; several joined by ';' or the option repeated) or "
                 "trtexec's NAME:DxD… (e.g. x:1x3x224x224,y:1x10); --data's batches and a JSON "
                 "cache's recorded shapes come first")
      ->delimiter(';');
  app.add_flag("--force", o->force,
               "use a cache calibrated for another graph, or recording other options than those "
               "given (the given ones win)");
  app.add_flag("--requantize", o->requantize, "strip the Q/DQ of an already quantized model first");
  app.add_flag("--external-data", o->external_data,
               "store large initializers in OUT.onnx.data beside the model");
  add_smoothquant_option(app, o->smoothquant);
  app.add_flag("--json", o->json,
               "print what was written, the quantized tensors, what stayed float and why, and "
               "the phase times as JSON on stdout, in place of the summary");
  return [o, &global, &app]() {
    o->given = given_plan_flags(app);
    return quantize_command(*o, global);
  };
}

}  // namespace ptq::apps
