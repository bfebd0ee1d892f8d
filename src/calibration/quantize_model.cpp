// The quantize flow every front end runs (`ptq quantize`, ptqkit.quantize and quantize_static):
// one order of work, so the same request gives the same bytes whichever front end makes it.
//
// Order of work: a model already holding Q/DQ is refused unless requantizing (which strips it);
// a model below opset 13 whose ops changed meaning on the way is converted with libonnx's
// version converter before anything else, so calibration measures the tensors the planner will
// see; the cache is checked against the model as given, as stripped, as converted and as
// smoothed (any of them is the same model); the planner decides with the input shapes of the
// data, the cache or the user's (resolve_plan_shapes), and the written model keeps its symbolic
// dims; bias corrections are measured with those shapes; it passes the full ONNX check before
// it is saved; ranges that clip much of their tensor are reported (report::clipping_warnings).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "ptq/calibration.h"
#include "ptq/report.h"

namespace ptq::calibration {

namespace {

int64_t count_op(const ir::Model& model, std::string_view op) {
  return std::count_if(model.graph.nodes.begin(), model.graph.nodes.end(),
                       [&](const ir::Node& n) { return n.op_type == op; });
}

Status warn_all(QuantizeFrontEnd& front_end, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) PTQ_RETURN_IF_ERROR(front_end.warn(w));
  return Status::ok();
}

bool from_data(const QuantizeRequest& r) { return r.cache.empty(); }

// A pass over the data between start_pass and end_pass, whether or not it succeeds.
template <typename Run>
auto run_pass(QuantizeFrontEnd& front_end, std::string_view stage, int64_t samples, Run run) {
  ProgressFn progress = front_end.start_pass(stage, samples);
  auto result = run(std::move(progress));
  front_end.end_pass();
  return result;
}

Expected<calib::SmoothQuantRecord> smooth_on_data(ir::Model& model, const QuantizeRequest& r,
                                                  QuantizeFrontEnd& front_end) {
  SmoothQuantRunOptions so;
  so.smoothing.alpha = *r.smoothquant;
  so.threads = r.threads;
  PTQ_RETURN_IF_ERROR(so.smoothing.validate());
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, front_end.open_data(model.graph));
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  return run_pass(front_end, "smoothquant", dataset.size(), [&](ProgressFn progress) {
    so.progress = std::move(progress);
    return smoothquant(model, *cpu, dataset, so);
  });
}

Expected<calib::CalibrationTable> calibrate_on_data(const ir::Model& model,
                                                    const QuantizeRequest& r,
                                                    const planner::PlanOptions& plan,
                                                    QuantizeFrontEnd& front_end,
                                                    onnx::InputShapes& fed) {
  CalibrationOptions co = r.calibration;
  co.plan = plan;
  PTQ_RETURN_IF_ERROR(co.method.validate());
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, front_end.open_data(model.graph));
  fed = fed_shapes(dataset);
  PTQ_ASSIGN_OR_RETURN(std::vector<runtime::Executor*> workers,
                       front_end.calibration_workers(model));
  return run_pass(front_end, "calibration", dataset.size(), [&](ProgressFn progress) {
    co.progress = std::move(progress);
    return calibrate(model, workers, dataset, co);
  });
}

// The cache's table for the model (its SmoothQuant applied first); its recorded options
// adopted into `settings`.
Expected<calib::CalibrationTable> table_from_cache(ir::Model& model, const QuantizeRequest& r,
                                                   ModelForms& forms, QuantizeSettings& settings,
                                                   QuantizeFrontEnd& front_end) {
  PTQ_ASSIGN_OR_RETURN(std::optional<calib::SmoothQuantRecord> record,
                       smooth_as_cached(model, forms, r.cache));
  PTQ_RETURN_IF_ERROR(check_smoothquant_agrees(record, r.smoothquant, r.cache));
  PTQ_ASSIGN_OR_RETURN(AcceptedCache cache,
                       read_cache_for(model, forms, r.cache,
                                      {.force = r.force, .settings = &settings, .given = r.given}));
  PTQ_RETURN_IF_ERROR(warn_all(front_end, cache.warnings));
  return std::move(cache.table);
}

// Where the planner's input shapes come from, in order (resolve_plan_shapes). A cache's record
// of an input without a shape (rank unknown) says nothing.
std::vector<ShapeSource> shape_sources(const QuantizeRequest& r, const onnx::InputShapes& fed,
                                       const calib::CalibrationTable& table) {
  std::vector<ShapeSource> sources;
  if (from_data(r)) {
    sources.push_back({r.data_label, fed});
  } else {
    onnx::InputShapes recorded = table.model.inputs;
    std::erase_if(recorded, [](const auto& s) { return s.second.empty(); });
    sources.push_back({fmt::format("the cache {}", r.cache.string()), std::move(recorded), false});
  }
  sources.push_back({r.input_shapes_label, r.input_shapes});
  return sources;
}

// Bias correction measured on the data (whose cache then records the options), else taken
// from the cache.
Status correct_biases(const ir::Model& model, const QuantizeRequest& r, QuantizeFrontEnd& front_end,
                      calib::CalibrationTable& table, QuantizeSettings& settings) {
  std::optional<data::Dataset> dataset;
  if (from_data(r) && settings.bias_correction) {
    PTQ_ASSIGN_OR_RETURN(dataset, front_end.open_data(model.graph));
  }
  PTQ_RETURN_IF_ERROR(
      use_bias_correction(model, table, dataset ? &*dataset : nullptr, r.threads, settings));
  if (from_data(r)) record_settings(settings, table);
  return Status::ok();
}

Status write_caches(const calib::CalibrationTable& table, const QuantizeRequest& r) {
  if (r.cache_out) {
    PTQ_RETURN_IF_ERROR(
        calib::write_cache(table, *r.cache_out, {.format = calib::CacheFormat::kJson}));
  }
  if (r.trt_cache) {
    PTQ_RETURN_IF_ERROR(calib::write_cache(
        table, *r.trt_cache, {.format = calib::CacheFormat::kTensorRT, .trt = r.trt}));
  }
  return Status::ok();
}

// Plans and applies Q/DQ to the prepared model, warns of ranges that clip much of their
// tensor, and checks the result.
Expected<planner::QuantizeResult> plan_and_apply(ir::Model& model,
                                                 const calib::CalibrationTable& table,
                                                 planner::PlanOptions& plan,
                                                 QuantizeFrontEnd& front_end) {
  plan.method = table.method;
  plan.cache_hash = onnx::sha256_hex(calib::json_cache_string(table));
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult result, planner::quantize(model, table, plan));
  front_end.phase_done("quantize");
  PTQ_RETURN_IF_ERROR(warn_all(front_end, result.warnings));
  PTQ_RETURN_IF_ERROR(warn_all(front_end, report::clipping_warnings(model, table)));
  if (Status s = onnx::check_model(model); !s.is_ok()) {
    return runtime_error("the quantized model fails the ONNX check (a ptqkit bug): {}",
                         s.message());
  }
  return result;
}

}  // namespace

Status prepare_for_planning(ir::Model& model, std::string_view name, bool requantize,
                            ModelForms& forms, std::vector<std::string>& notes) {
  if (planner::has_quantization(model)) {
    if (!requantize) {
      return invalid_input(
          "{} is already quantized ({} QuantizeLinear, {} DequantizeLinear); "
          "--requantize strips its Q/DQ and quantizes it again",
          name, count_op(model, "QuantizeLinear"), count_op(model, "DequantizeLinear"));
    }
    PTQ_ASSIGN_OR_RETURN(int64_t removed, planner::strip_qdq(model));
    notes.push_back(
        fmt::format("--requantize: removed {} quantization node(s) from {}", removed, name));
    forms.add(model);
  }
  const int64_t opset = model.opset();
  if (opset < 13 && !planner::check_opset_upgradable(model).is_ok()) {
    PTQ_RETURN_IF_ERROR(onnx::convert_opset(model, 13));
    notes.push_back(
        fmt::format("converted {} from opset {} to 13 (libonnx version converter)", name, opset));
    forms.add(model);
  }
  return Status::ok();
}

Status check_smoothquant_agrees(const std::optional<calib::SmoothQuantRecord>& record,
                                std::optional<double> alpha, const std::filesystem::path& cache) {
  if (!alpha || (record && record->alpha == *alpha)) return Status::ok();
  if (!record) {
    return usage_error("--smoothquant needs --data: {} was calibrated without SmoothQuant",
                       cache.string());
  }
  return usage_error("--smoothquant {}: {} was calibrated with alpha {}", *alpha, cache.string(),
                     record->alpha);
}

int64_t weight_bytes(const ir::Model& model) {
  int64_t total = 0;
  for (const ir::Initializer& i : model.graph.initializers()) {
    total += static_cast<int64_t>(i.tensor.nbytes());
  }
  return total;
}

Expected<QuantizeOutcome> quantize_model(const QuantizeRequest& r, QuantizeFrontEnd& front_end) {
  QuantizeOutcome outcome;
  outcome.settings = r.settings;
  QuantizeSettings& settings = outcome.settings;
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(r.model));
  front_end.phase_done("load model");
  outcome.weight_bytes_before = weight_bytes(model);
  ModelForms forms(model);
  std::vector<std::string> notes;
  PTQ_RETURN_IF_ERROR(prepare_for_planning(model, r.model.string(), r.requantize, forms, notes));
  PTQ_RETURN_IF_ERROR(warn_all(front_end, notes));

  calib::CalibrationTable table;
  onnx::InputShapes fed;
  if (from_data(r)) {
    if (r.smoothquant) {
      PTQ_ASSIGN_OR_RETURN(outcome.smoothquant, smooth_on_data(model, r, front_end));
    }
    PTQ_ASSIGN_OR_RETURN(table, calibrate_on_data(model, r, settings.plan, front_end, fed));
    table.smoothquant = outcome.smoothquant;
  } else {
    PTQ_ASSIGN_OR_RETURN(table, table_from_cache(model, r, forms, settings, front_end));
    outcome.smoothquant = table.smoothquant;
  }
  front_end.phase_done(from_data(r) ? "calibrate" : "read cache");
  outcome.method = table.method;
  if (r.calibration.comm != nullptr && r.calibration.comm->rank() != 0) return outcome;

  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  PTQ_RETURN_IF_ERROR(
      resolve_plan_shapes(model, shape_sources(r, fed, table), *cpu, r.threads, settings.plan));
  PTQ_RETURN_IF_ERROR(correct_biases(model, r, front_end, table, settings));
  PTQ_RETURN_IF_ERROR(write_caches(table, r));
  PTQ_ASSIGN_OR_RETURN(outcome.result, plan_and_apply(model, table, settings.plan, front_end));
  onnx::SaveOptions save;
  save.external_data = r.external_data;
  PTQ_RETURN_IF_ERROR(onnx::save_model(model, r.out, save));
  front_end.phase_done("write model");
  outcome.weight_bytes_after = weight_bytes(model);
  outcome.written = true;
  return outcome;
}

}  // namespace ptq::calibration
