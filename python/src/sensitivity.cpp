// ptqkit.sensitivity: the partial-PTQ sweep of `ptq sensitivity` (one layer quantized, or all
// but one) as a function; the result is the report `ptq sensitivity -o` writes, as a dict.
#include "ptq/sensitivity.h"

#include <optional>

#include "bindings.h"
#include "ptq/onnx.h"

namespace ptq::python {

namespace {

namespace sens = ptq::sensitivity;

calib::CalibrationTable table_for(const ir::Model& model, const py::object& data,
                                  const std::string& cache, const py::object& method,
                                  Engine& engine, int threads, bool quiet) {
  if (data.is_none() == cache.empty()) {
    throw_if_error(usage_error("give either data (calibrate now) or cache (reuse a cache)"));
  }
  if (!cache.empty()) {
    calibration::AcceptedCache accepted = value_or_throw(
        calibration::read_cache_for(model, calibration::ModelForms(model), cache, {}));
    for (const std::string& w : accepted.warnings) warn(w);
    return std::move(accepted.table);
  }
  std::unique_ptr<PythonData> d = python_data(data, 0, 16);
  const data::Dataset dataset = open_bound(*d, model.graph);
  calibration::CalibrationOptions co;
  co.method = method_config(method, 99.99);
  co.threads = runtime::thread_count(threads);
  Progress progress("sensitivity", dataset.size(), quiet, "calibration pass");
  co.progress = progress.calibration_fn();
  Expected<calib::CalibrationTable> table = calib::CalibrationTable{};
  {
    py::gil_scoped_release release;
    table = calibration::calibrate(model, *engine.executor, dataset, co);
  }
  progress.finish();
  return value_or_throw(std::move(table));
}

// Labels in the eval set's delivery order.
std::vector<int64_t> labels_for(const py::object& labels, const data::Dataset& eval) {
  std::vector<int64_t> out;
  if (labels.is_none()) return out;
  const auto all = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(labels);
  if (!all || all.ndim() != 1 || all.shape(0) != eval.source_size()) {
    throw_if_error(invalid_input("labels must be integers of shape [{}] (the eval samples)",
                                 eval.source_size()));
  }
  for (int64_t i : eval.order()) out.push_back(all.at(i));
  return out;
}

py::object sensitivity(const std::string& model_path, const py::object& eval_data,
                       const py::object& data, const std::string& cache, const py::object& labels,
                       const std::string& metric_name, const std::string& mode_name,
                       const std::optional<double>& target_drop, const py::object& method,
                       int threads, bool quiet) {
  const sens::Metric metric = value_or_throw(sens::parse_metric(metric_name));
  const sens::Mode mode = value_or_throw(sens::parse_mode(mode_name));
  const ir::Model model = value_or_throw(onnx::load_model(model_path));
  Engine engine = make_engine(model, "cpu", threads);
  const calib::CalibrationTable table =
      table_for(model, data, cache, method, engine, threads, quiet);
  std::unique_ptr<PythonData> d = python_data(eval_data, 0, 16);
  const data::Dataset eval = open_bound(*d, model.graph);
  const std::vector<int64_t> label_list = labels_for(labels, eval);
  planner::PlanOptions plan;
  plan.ptqkit_version = std::string(calibration::ptqkit_version());
  plan.method = table.method;
  plan.shapes_remedy = "give eval data for every input:";
  throw_if_error(
      calibration::resolve_plan_shapes(model, {{"the eval data", calibration::fed_shapes(eval)}},
                                       *engine.backend, runtime::thread_count(threads), plan));
  sens::Evaluator ev = value_or_throw(sens::Evaluator::create(
      model, *engine.backend, eval, label_list.empty() ? nullptr : &label_list,
      {.metric = metric,
       .threads = runtime::thread_count(threads),
       .reference_batches = sens::Evaluator::Options::kAllBatches}));
  sens::SweepOptions so;
  so.mode = mode;
  so.plan = plan;
  Expected<sens::SweepResult> swept = sens::SweepResult{};
  {
    py::gil_scoped_release release;
    swept = sens::sweep(table, ev, so);
  }
  const sens::SweepResult result = value_or_throw(std::move(swept));
  std::optional<sens::Selection> selection;
  if (target_drop) {
    selection =
        value_or_throw(sens::select(model, table, ev, plan, result.layers, *target_drop, -1));
  }
  sens::ReportInfo info;
  info.model_path = model_path;
  info.metric = metric;
  info.samples = eval.size();
  info.target_drop = target_drop.value_or(0.0);
  const std::string text =
      sens::report_json(model, result, selection ? &*selection : nullptr, info);
  return py::module_::import("json").attr("loads")(text);
}

}  // namespace

void register_sensitivity(py::module_& m) {
  m.def("sensitivity", &sensitivity, py::arg("model"), py::arg("eval_data"),
        py::arg("data") = py::none(), py::arg("cache") = "", py::arg("labels") = py::none(),
        py::arg("metric") = "sqnr", py::arg("mode") = "only", py::arg("target_drop") = py::none(),
        py::arg("method") = py::none(), py::arg("threads") = 0, py::arg("quiet") = false,
        "Per quantizable layer, `metric` on `eval_data` with only that layer quantized (mode "
        "'only') or all but it ('all-but'), ranked; calibrated on `data` or read from `cache`. "
        "With target_drop, also the smallest float set that meets it. Returns the report dict "
        "of `ptq sensitivity -o`.");
}

}  // namespace ptq::python
