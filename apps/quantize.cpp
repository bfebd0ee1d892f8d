// `ptq quantize MODEL (--data SRC [calibrate's options] | --cache CACHE) -o OUT.onnx
//  [--target tensorrt|ort] [--exclude NODE,…] [--exclude-op-types T,…] [--per-tensor-weights]
//  [--weights-float] [--activation-type int8|uint8] [--cache-out CACHE.json]
//  [--trt-cache CACHE.cache] [--input-shape NAME=D,D…[;…]] [--force] [--requantize]
//  [--external-data]`
// writes the Q/DQ model. With --data it calibrates first (the calibration driver, as `ptq
// calibrate`) and writes the cache beside the output; with --cache it reuses a cache of any
// format (ptqkit JSON, TensorRT text, ONNX Runtime) and needs no data.
//
// Order of work: a model already holding Q/DQ is refused unless --requantize (which strips it);
// a model below opset 13 whose ops changed meaning on the way is converted with libonnx's
// version converter (ptq::onnx::convert_opset) before anything else, so calibration measures
// the tensors the planner will see; the cache is checked against the model as given, as
// stripped and as converted (any of them is the same model); the planner decides with the
// input shapes of the data, the cache or --input-shape (calibration::resolve_plan_shapes), and
// the written model keeps its symbolic dims; it passes the full ONNX check before it is saved;
// ranges that clip much of their tensor are reported (report::clipping_warnings).
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "method_options.h"
#include "progress.h"
#include "input_shapes.h"
#include "run_date.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"
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
  std::string target = "tensorrt";
  std::vector<std::string> exclude;
  std::vector<std::string> exclude_op_types;
  bool per_tensor_weights = false;
  bool weights_float = false;
  std::string activation_type = "int8";
  int64_t min_conv_channels = 16;
  bool quantize_matrix_vector = false;
  std::vector<std::string> input_shapes;
  bool no_fold_batchnorm = false;
  bool force = false;
  bool requantize = false;
  bool external_data = false;
};

// OUT.onnx -> OUT.calib.json beside it.
fs::path default_cache_out(const fs::path& out) {
  fs::path p = out;
  if (p.extension() == ".onnx") p.replace_extension();
  return p.string() + ".calib.json";
}

void warn(const GlobalOptions& global, const std::string& message) {
  if (!global.quiet) fmt::print(stderr, "ptq: warning: {}\n", message);
}

Expected<planner::PlanOptions> plan_options(const QuantizeOptions& o) {
  planner::PlanOptions p;
  PTQ_ASSIGN_OR_RETURN(p.target, planner::parse_target(o.target));
  PTQ_ASSIGN_OR_RETURN(p.activation_type, planner::parse_activation_type(o.activation_type));
  p.exclude_nodes = o.exclude;
  p.exclude_op_types = o.exclude_op_types;
  p.per_tensor_weights = o.per_tensor_weights;
  p.weights_float = o.weights_float;
  p.min_conv_channels = o.min_conv_channels;
  p.quantize_matrix_vector = o.quantize_matrix_vector;
  p.fold_batchnorm = !o.no_fold_batchnorm;
  p.ptqkit_version = std::string(calibration::ptqkit_version());
  PTQ_RETURN_IF_ERROR(p.validate());
  return p;
}

int64_t weight_bytes(const ir::Model& model) {
  int64_t total = 0;
  for (const ir::Initializer& i : model.graph.initializers()) total += static_cast<int64_t>(i.tensor.nbytes());
  return total;
}

std::string size_str(int64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

int64_t file_bytes(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// The model as the planner must see it: Q/DQ stripped (--requantize), opset converted when a
// plain version raise is not enough.
Status prepare_model(ir::Model& model, const QuantizeOptions& o, calibration::ModelForms& forms,
                     const GlobalOptions& global) {
  std::vector<std::string> notes;
  PTQ_RETURN_IF_ERROR(
      calibration::prepare_for_planning(model, o.model, o.requantize, forms, notes));
  for (const std::string& n : notes) warn(global, n);
  return Status::ok();
}

Expected<calib::CalibrationTable> calibrate_now(const ir::Model& model, const QuantizeOptions& o,
                                                const planner::PlanOptions& plan, int threads,
                                                const GlobalOptions& global,
                                                onnx::InputShapes& fed) {
  calibration::CalibrationOptions co;
  co.method = o.method;
  PTQ_RETURN_IF_ERROR(co.method.validate());
  PTQ_ASSIGN_OR_RETURN(co.date, run_date());
  co.plan = plan;
  co.ignore_nonfinite = o.ignore_nonfinite;
  co.threads = threads;
  co.backend = o.backend.backend;
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  fed = calibration::fed_shapes(dataset);
  PTQ_ASSIGN_OR_RETURN(CalibrationEngines engines, make_calibration_engines(model, o.backend, threads,
                                                                           o.workers, global.quiet));
  ProgressLine line("quantize", "samples", dataset.size(), global.quiet);
  int stage = 0;
  co.progress = [&](const calibration::Progress& p) -> Status {
    if (p.pass != stage) {
      stage = p.pass;
      line.set_stage(fmt::format("calibration pass {}/{}", p.pass, p.passes), p.samples_total);
    }
    line.update(p.samples_done);
    return Status::ok();
  };
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable table,
                       calibration::calibrate(model, engines.executors(), dataset, co));
  line.finish();
  return table;
}

// Reads --cache, refused when calibrated for another graph than any form of the model.
Expected<calib::CalibrationTable> read_checked_cache(const ir::Model& model, const QuantizeOptions& o,
                                                     const planner::PlanOptions& plan,
                                                     const calibration::ModelForms& forms,
                                                     const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(calibration::AcceptedCache cache,
                       calibration::read_cache_for(model, forms, o.cache,
                                                   {.force = o.force, .plan = &plan}));
  for (const std::string& w : cache.warnings) warn(global, w);
  return std::move(cache.table);
}

Status write_caches(const calib::CalibrationTable& table, const QuantizeOptions& o,
                    const GlobalOptions& global) {
  std::optional<fs::path> json_out;
  if (!o.cache_out.empty()) {
    json_out = o.cache_out;
  } else if (o.cache.empty()) {
    json_out = default_cache_out(o.out);
  }
  if (json_out) {
    PTQ_RETURN_IF_ERROR(calib::write_cache(table, *json_out, {.format = calib::CacheFormat::kJson}));
    if (!global.quiet) fmt::print("calibration cache: {}\n", json_out->string());
  }
  if (!o.trt_cache.empty()) {
    PTQ_ASSIGN_OR_RETURN(calib::TrtVersion version, calib::parse_trt_version(o.trt_version));
    calib::WriteOptions wo{.format = calib::CacheFormat::kTensorRT};
    wo.trt = {version, o.trt_algo};
    PTQ_RETURN_IF_ERROR(calib::write_cache(table, o.trt_cache, wo));
    if (!global.quiet) fmt::print("TensorRT cache: {}\n", o.trt_cache);
  }
  return Status::ok();
}

// ": a, b, c" for a list, the first `limit` names and "… (N more)" beyond.
std::string list_head(const std::vector<std::string>& names, size_t limit = 12) {
  if (names.empty()) return "";
  const size_t shown = std::min(limit, names.size());
  std::string s = fmt::format(": {}", fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (shown < names.size()) s += fmt::format(", … ({} more)", names.size() - shown);
  return s;
}

void print_summary(const QuantizeOptions& o, const planner::QuantizeResult& r,
                   int64_t before_weights, const ir::Model& after, const std::string& method) {
  fmt::print("wrote {} (target {}, {} calibration)\n", o.out, o.target, method);
  fmt::print("  Q/DQ nodes:        {} QuantizeLinear, {} DequantizeLinear\n", r.quantize_nodes,
             r.dequantize_nodes);
  fmt::print("  quantized layers:  {}{}\n", r.quantized_nodes.size(), list_head(r.quantized_nodes));
  if (r.folded_batchnorms > 0) fmt::print("  folded BatchNorms: {}\n", r.folded_batchnorms);
  fmt::print("  float tensors:     {}{}\n", r.float_tensors.size(),
             r.float_tensors.empty() ? "" : " (no calibrated range)" + list_head(r.float_tensors, 1000));
  const int64_t in_file = file_bytes(o.model);
  int64_t out_file = file_bytes(o.out);
  if (o.external_data) out_file += file_bytes(fs::path(o.out).string() + ".data");
  fmt::print("  size:              {} -> {} (weights {} -> {})\n", size_str(in_file),
             size_str(out_file), size_str(before_weights), size_str(weight_bytes(after)));
}

// Where the planner's input shapes come from, in order (calibration::resolve_plan_shapes). A
// cache's record of an input without a shape (rank unknown) says nothing.
std::vector<calibration::ShapeSource> shape_sources(const QuantizeOptions& o,
                                                    const onnx::InputShapes& fed,
                                       const calib::CalibrationTable& table,
                                       onnx::InputShapes flags) {
  std::vector<calibration::ShapeSource> sources;
  if (!o.data.data.empty()) {
    sources.push_back({"--data", fed});
  } else {
    onnx::InputShapes recorded = table.model.inputs;
    std::erase_if(recorded, [](const auto& s) { return s.second.empty(); });
    sources.push_back({fmt::format("the cache {}", o.cache), std::move(recorded), false});
  }
  sources.push_back({"--input-shape", std::move(flags)});
  return sources;
}

Status quantize_command(QuantizeOptions& o, const GlobalOptions& global) {
  const bool have_data = !o.data.data.empty();
  if (have_data == !o.cache.empty()) {
    return usage_error("give either --data (calibrate now) or --cache (reuse a calibration cache)");
  }
  PTQ_ASSIGN_OR_RETURN(planner::PlanOptions plan, plan_options(o));
  PTQ_ASSIGN_OR_RETURN(onnx::InputShapes flag_shapes, parse_input_shapes(o.input_shapes));
  const int threads = o.threads > 0 ? o.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  const int64_t before_weights = weight_bytes(model);
  calibration::ModelForms forms(model);
  PTQ_RETURN_IF_ERROR(prepare_model(model, o, forms, global));

  calib::CalibrationTable table;
  onnx::InputShapes fed;
  if (have_data) {
    PTQ_ASSIGN_OR_RETURN(table, calibrate_now(model, o, plan, threads, global, fed));
  } else {
    PTQ_ASSIGN_OR_RETURN(table, read_checked_cache(model, o, plan, forms, global));
  }
  PTQ_RETURN_IF_ERROR(write_caches(table, o, global));

  plan.shapes_remedy = "give --data, a JSON cache that records input shapes, or --input-shape";
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult result,
                       calibration::quantize_model(
                           model, table, shape_sources(o, fed, table, std::move(flag_shapes)),
                           *cpu, threads, plan));
  for (const std::string& w : result.warnings) warn(global, w);
  onnx::SaveOptions so;
  so.external_data = o.external_data;
  PTQ_RETURN_IF_ERROR(onnx::save_model(model, o.out, so));
  if (!global.quiet) print_summary(o, result, before_weights, model, table.method);
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
  add_backend_options(app, o->backend);
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
  app.add_option("--target", o->target, "who runs the model: tensorrt or ort")->capture_default_str();
  app.add_option("--exclude", o->exclude,
                 "nodes left float: names or regexes matched against whole names (comma-separated, "
                 "repeatable)")
      ->delimiter(',');
  app.add_option("--exclude-op-types", o->exclude_op_types, "op types left float (e.g. MatMul,Gemm)")
      ->delimiter(',');
  app.add_flag("--per-tensor-weights", o->per_tensor_weights,
               "one scale per weight tensor instead of one per output channel");
  app.add_flag("--weights-float", o->weights_float,
               "tensorrt: keep float weights and put Q+DQ after them instead of int8 + DQ");
  app.add_option("--activation-type", o->activation_type,
                 "int8 (symmetric) or uint8 (asymmetric, --target ort only)")
      ->capture_default_str();
  app.add_option("--min-conv-channels", o->min_conv_channels,
                 "convs with fewer input channels stay float (0: quantize every conv)")
      ->capture_default_str()
      ->check(at_least(0));
  app.add_flag("--quantize-matrix-vector", o->quantize_matrix_vector,
               "also quantize MatMuls with M or N = 1");
  app.add_option("--input-shape", o->input_shapes,
                 "input shapes the planner decides with where the model's are symbolic, as "
                 "NAME=D,D,… (e.g. x=1,128; several joined by ';' or the option repeated); "
                 "--data's batches and a JSON cache's recorded shapes come first")
      ->delimiter(';');
  app.add_flag("--no-fold-batchnorm", o->no_fold_batchnorm,
               "keep BatchNormalization after quantized convs instead of folding it");
  app.add_flag("--force", o->force, "use a cache calibrated for another graph");
  app.add_flag("--requantize", o->requantize, "strip the Q/DQ of an already quantized model first");
  app.add_flag("--external-data", o->external_data,
               "store large initializers in OUT.onnx.data beside the model");
  return [o, &global]() { return quantize_command(*o, global); };
}

}  // namespace ptq::apps
