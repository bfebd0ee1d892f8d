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
#include <set>
#include <string>
#include <thread>
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

void warn(const GlobalOptions&, const std::string& message) { log::warn("{}", message); }

int64_t count_op(const ir::Model& model, std::string_view op) {
  return std::count_if(model.graph.nodes.begin(), model.graph.nodes.end(),
                       [&](const ir::Node& n) { return n.op_type == op; });
}

int64_t weight_bytes(const ir::Model& model) {
  int64_t total = 0;
  for (const ir::Initializer& i : model.graph.initializers())
    total += static_cast<int64_t>(i.tensor.nbytes());
  return total;
}

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

// The model as the planner must see it: Q/DQ stripped (--requantize), opset converted when a
// plain version raise is not enough.
Status prepare_model(ir::Model& model, const QuantizeOptions& o, calibration::ModelForms& forms,
                     const GlobalOptions& global) {
  if (planner::has_quantization(model)) {
    if (!o.requantize) {
      return invalid_input("{} is already quantized ({} QuantizeLinear, {} DequantizeLinear); "
                           "--requantize strips its Q/DQ and quantizes it again",
                           o.model, count_op(model, "QuantizeLinear"),
                           count_op(model, "DequantizeLinear"));
    }
    PTQ_ASSIGN_OR_RETURN(int64_t removed, planner::strip_qdq(model));
    warn(global,
         fmt::format("--requantize: removed {} quantization node(s) from {}", removed, o.model));
    forms.add(model);
  }
  const int64_t opset = model.opset();
  if (opset < 13 && !planner::check_opset_upgradable(model).is_ok()) {
    PTQ_RETURN_IF_ERROR(onnx::convert_opset(model, 13));
    warn(global, fmt::format("converted {} from opset {} to 13 (libonnx version converter)",
                             o.model, opset));
    forms.add(model);
  }
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
  co.comm = global.comm;
  BackendOptions backend = o.backend;
  PTQ_RETURN_IF_ERROR(pick_rank_device(backend, *global.comm));
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  fed = calibration::fed_shapes(dataset);
  PTQ_ASSIGN_OR_RETURN(CalibrationEngines engines,
                       make_calibration_engines(model, backend, threads, o.workers, global.quiet));
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

// Reads --cache, refused when calibrated for another graph than any form of the model or with
// options that disagree with those given; the options it records and were not given are taken.
Expected<calib::CalibrationTable> read_checked_cache(const ir::Model& model,
                                                     const QuantizeOptions& o,
                                                     calibration::QuantizeSettings& settings,
                                                     const calibration::ModelForms& forms,
                                                     const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(calibration::AcceptedCache cache,
                       calibration::read_cache_for(model, forms, o.cache,
                                                   {.force = o.force, .settings = &settings,
                                                    .given = o.given}));
  for (const std::string& w : cache.warnings) warn(global, w);
  return std::move(cache.table);
}

// The JSON cache written: --cache-out, else with --data OUT.calib.json, else none.
std::optional<fs::path> json_cache_out(const QuantizeOptions& o) {
  if (!o.cache_out.empty()) return fs::path(o.cache_out);
  if (o.cache.empty()) return default_cache_out(o.out);
  return std::nullopt;
}

Status write_caches(const calib::CalibrationTable& table, const QuantizeOptions& o,
                    const GlobalOptions& global) {
  const bool say = !global.quiet && !o.json;
  if (std::optional<fs::path> json_out = json_cache_out(o)) {
    PTQ_RETURN_IF_ERROR(
        calib::write_cache(table, *json_out, {.format = calib::CacheFormat::kJson}));
    if (say) fmt::print("calibration cache: {}\n", json_out->string());
  }
  if (!o.trt_cache.empty()) {
    PTQ_ASSIGN_OR_RETURN(calib::TrtVersion version, calib::parse_trt_version(o.trt_version));
    calib::WriteOptions wo{.format = calib::CacheFormat::kTensorRT};
    wo.trt = {version, o.trt_algo};
    PTQ_RETURN_IF_ERROR(calib::write_cache(table, o.trt_cache, wo));
    if (say) fmt::print("TensorRT cache: {}\n", o.trt_cache);
  }
  return Status::ok();
}

// --bias-correction: measured on --data (then the options are recorded in the cache written),
// else taken from --cache.
Status correct_biases(const ir::Model& model, const QuantizeOptions& o, int threads,
                      calib::CalibrationTable& table, calibration::QuantizeSettings& settings) {
  std::optional<data::Dataset> dataset;
  if (!o.data.data.empty() && settings.bias_correction) {
    PTQ_ASSIGN_OR_RETURN(dataset, open_dataset(o.data, model.graph));
  }
  PTQ_RETURN_IF_ERROR(calibration::use_bias_correction(model, table, dataset ? &*dataset : nullptr,
                                                       threads, settings));
  if (!o.data.data.empty()) calibration::record_settings(settings, table);
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

void print_summary(const QuantizeOptions& o, const planner::QuantizeResult& r,
                   int64_t before_weights, const ir::Model& after, const std::string& method,
                   planner::Target target) {
  fmt::print("wrote {} (target {}, {} calibration)\n", o.out, planner::target_name(target), method);
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
             size_str(out_file), size_str(before_weights), size_str(weight_bytes(after)));
}

void print_report(const QuantizeOptions& o, const planner::PlanOptions& plan,
                  const planner::QuantizeResult& r, const std::string& method,
                  const PhaseTimes& times) {
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
              {"method", method},
              {"quantize_linear_nodes", r.quantize_nodes},
              {"dequantize_linear_nodes", r.dequantize_nodes},
              {"quantized_nodes", r.quantized_nodes},
              {"tensors", quantized_tensors_json(r, method)},
              {"float", float_set_json(r)},
              {"warnings", r.warnings},
              {"seconds", seconds_json(times)}});
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
  PTQ_ASSIGN_OR_RETURN(calibration::QuantizeSettings settings, quantize_settings(o.plan));
  planner::PlanOptions& plan = settings.plan;
  PTQ_ASSIGN_OR_RETURN(onnx::InputShapes flag_shapes, parse_input_shapes(o.input_shapes));
  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  PhaseTimes times;
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  times.mark("load model");
  const int64_t before_weights = weight_bytes(model);
  calibration::ModelForms forms(model);
  PTQ_RETURN_IF_ERROR(prepare_model(model, o, forms, global));

  calib::CalibrationTable table;
  onnx::InputShapes fed;
  if (have_data) {
    PTQ_ASSIGN_OR_RETURN(std::optional<calib::SmoothQuantRecord> smoothing,
                         smooth_from_data(model, o.smoothquant, o.data, threads, global.quiet));
    PTQ_ASSIGN_OR_RETURN(table, calibrate_now(model, o, plan, threads, global, fed));
    table.smoothquant = std::move(smoothing);
  } else {
    PTQ_RETURN_IF_ERROR(smooth_as_cached(model, o.smoothquant, o.cache, forms));
    PTQ_ASSIGN_OR_RETURN(table, read_checked_cache(model, o, settings, forms, global));
  }
  times.mark(have_data ? "calibrate" : "read cache");
  if (global.comm->rank() != 0) return Status::ok();  // rank 0 plans and writes alone
  plan.shapes_remedy = "give --data, a JSON cache that records input shapes, or --input-shape";
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  PTQ_RETURN_IF_ERROR(calibration::resolve_plan_shapes(
      model, shape_sources(o, fed, table, std::move(flag_shapes)), *cpu, threads, plan));
  PTQ_RETURN_IF_ERROR(correct_biases(model, o, threads, table, settings));
  PTQ_RETURN_IF_ERROR(write_caches(table, o, global));

  plan.method = table.method;
  plan.cache_hash = onnx::sha256_hex(calib::json_cache_string(table));
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult result, planner::quantize(model, table, plan));
  times.mark("quantize");
  for (const std::string& w : result.warnings) warn(global, w);
  for (const std::string& w : report::clipping_warnings(model, table)) warn(global, w);
  if (Status s = onnx::check_model(model); !s.is_ok()) {
    return runtime_error("the quantized model fails the ONNX check (a ptqkit bug): {}",
                         s.message());
  }
  onnx::SaveOptions so;
  so.external_data = o.external_data;
  PTQ_RETURN_IF_ERROR(onnx::save_model(model, o.out, so));
  times.mark("write model");
  if (o.json) {
    print_report(o, plan, result, table.method, times);
  } else if (!global.quiet) {
    print_summary(o, result, before_weights, model, table.method, plan.target);
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
