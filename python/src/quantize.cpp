// ptqkit.quantize: `ptq quantize` as a function, in the same order of work and through the same
// library calls (calibration::prepare_for_planning, calibration::calibrate,
// calibration::quantize_model), so the same data gives the same bytes. The ONNX Runtime-style
// quantize_static (python/ptqkit/ort.py) maps its parameters onto this one.
#include <optional>

#include "bindings.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"
#include "run_date.h"

namespace ptq::python {

namespace {

struct QuantizeArgs {
  std::string model;
  std::string out;
  py::object data;
  std::string cache;
  py::object method;
  double percentile = 99.99;
  std::string target;
  std::string activation_type;
  bool per_channel = true;
  std::vector<std::string> exclude;
  std::vector<std::string> exclude_op_types;
  bool weights_float = false;
  std::string backend;
  int threads = 0;
  int64_t batch = 0;
  int64_t samples = 0;
  std::string cache_out;
  bool requantize = false;
  bool force = false;
  bool external_data = false;
  bool quiet = false;
  onnx::InputShapes input_shapes;
};

planner::PlanOptions plan_options(const QuantizeArgs& a) {
  planner::PlanOptions p;
  p.target = value_or_throw(planner::parse_target(a.target));
  p.activation_type = value_or_throw(planner::parse_activation_type(a.activation_type));
  p.exclude_nodes = a.exclude;
  p.exclude_op_types = a.exclude_op_types;
  p.per_tensor_weights = !a.per_channel;
  p.weights_float = a.weights_float;
  p.ptqkit_version = std::string(calibration::ptqkit_version());
  p.shapes_remedy =
      "give data of full batches, a JSON cache that records input shapes, or "
      "input_shapes={NAME: shape}";
  throw_if_error(p.validate());
  return p;
}

calib::CalibrationTable calibrate_now(const ir::Model& model, const QuantizeArgs& a,
                                      const planner::PlanOptions& plan, onnx::InputShapes& fed) {
  calibration::CalibrationOptions co;
  co.method = method_config(a.method, a.percentile);
  co.date = value_or_throw(apps::run_date());
  co.plan = plan;
  co.threads = thread_count(a.threads);
  co.backend = a.backend;
  std::unique_ptr<PythonData> d = python_data(a.data, a.batch, 16);
  d->spec.samples = a.samples;
  const data::Dataset dataset = open_bound(*d, model.graph);
  fed = calibration::fed_shapes(dataset);
  Engine engine = make_engine(model, a.backend, a.threads);
  Progress progress("quantize", dataset.size(), a.quiet, "calibration pass");
  co.progress = progress.calibration_fn();
  Expected<calib::CalibrationTable> table = calib::CalibrationTable{};
  {
    py::gil_scoped_release release;
    table = calibration::calibrate(model, *engine.executor, dataset, co);
  }
  progress.finish();
  return value_or_throw(std::move(table));
}

std::vector<calibration::ShapeSource> shape_sources(const QuantizeArgs& a,
                                                    const onnx::InputShapes& fed,
                                                    const calib::CalibrationTable& table) {
  std::vector<calibration::ShapeSource> sources;
  if (!a.data.is_none()) {
    sources.push_back({"the data", fed});
  } else {
    onnx::InputShapes recorded = table.model.inputs;
    std::erase_if(recorded, [](const auto& s) { return s.second.empty(); });
    sources.push_back({fmt::format("the cache {}", a.cache), std::move(recorded), false});
  }
  sources.push_back({"input_shapes", a.input_shapes});
  return sources;
}

py::dict summary(const planner::QuantizeResult& r, const calib::CalibrationTable& table) {
  py::dict d;
  d["method"] = table.method;
  d["quantize_nodes"] = r.quantize_nodes;
  d["dequantize_nodes"] = r.dequantize_nodes;
  d["folded_batchnorms"] = r.folded_batchnorms;
  d["quantized_nodes"] = r.quantized_nodes;
  d["float_tensors"] = r.float_tensors;
  return d;
}

py::dict quantize(const QuantizeArgs& a) {
  if (a.data.is_none() == a.cache.empty()) {
    throw_if_error(
        usage_error("give either data (calibrate now) or cache (reuse a calibration "
                    "cache)"));
  }
  planner::PlanOptions plan = plan_options(a);
  ir::Model model = value_or_throw(onnx::load_model(a.model));
  calibration::ModelForms forms(model);
  std::vector<std::string> notes;
  throw_if_error(calibration::prepare_for_planning(model, a.model, a.requantize, forms, notes));
  for (const std::string& n : notes) warn(n);
  calib::CalibrationTable table;
  onnx::InputShapes fed;
  if (!a.data.is_none()) {
    table = calibrate_now(model, a, plan, fed);
  } else {
    calibration::AcceptedCache accepted = value_or_throw(
        calibration::read_cache_for(model, forms, a.cache, {.force = a.force, .plan = &plan}));
    for (const std::string& w : accepted.warnings) warn(w);
    table = std::move(accepted.table);
  }
  if (!a.cache_out.empty()) throw_if_error(calib::write_cache(table, a.cache_out));
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  const planner::QuantizeResult result = value_or_throw(calibration::quantize_model(
      model, table, shape_sources(a, fed, table), *cpu, thread_count(a.threads), plan));
  for (const std::string& w : result.warnings) warn(w);
  onnx::SaveOptions save;
  save.external_data = a.external_data;
  throw_if_error(onnx::save_model(model, a.out, save));
  return summary(result, table);
}

}  // namespace

void register_quantize(py::module_& m) {
  m.def(
      "quantize",
      [](const std::string& model, const std::string& out, const py::object& data,
         const std::string& cache, const py::object& method, double percentile,
         const std::string& target, const std::string& activation_type, bool per_channel,
         const std::vector<std::string>& exclude, const std::vector<std::string>& exclude_op_types,
         bool weights_float, const std::string& backend, int threads, int64_t batch,
         int64_t samples, const std::string& cache_out, bool requantize, bool force,
         bool external_data, bool quiet, const onnx::InputShapes& input_shapes) {
        return quantize({model,
                         out,
                         data,
                         cache,
                         method,
                         percentile,
                         target,
                         activation_type,
                         per_channel,
                         exclude,
                         exclude_op_types,
                         weights_float,
                         backend,
                         threads,
                         batch,
                         samples,
                         cache_out,
                         requantize,
                         force,
                         external_data,
                         quiet,
                         input_shapes});
      },
      py::arg("model"), py::arg("out"), py::arg("data") = py::none(), py::arg("cache") = "",
      py::arg("method") = py::none(), py::arg("percentile") = 99.99, py::arg("target") = "tensorrt",
      py::arg("activation_type") = "int8", py::arg("per_channel") = true,
      py::arg("exclude") = std::vector<std::string>{},
      py::arg("exclude_op_types") = std::vector<std::string>{}, py::arg("weights_float") = false,
      py::arg("backend") = "cpu", py::arg("threads") = 0, py::arg("batch") = 0,
      py::arg("samples") = 0, py::arg("cache_out") = "", py::arg("requantize") = false,
      py::arg("force") = false, py::arg("external_data") = false, py::arg("quiet") = false,
      py::arg("input_shapes") = onnx::InputShapes{},
      "`ptq quantize` as a function: calibrates on `data` (or reuses `cache`, a file of any "
      "format), writes the Q/DQ model to `out`, and returns a summary dict.");
}

}  // namespace ptq::python
