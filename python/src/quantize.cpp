// ptqkit.quantize: `ptq quantize` as a function. Both run calibration::quantize_model, the
// library's quantize flow, so the same data and options give the same bytes. The ONNX
// Runtime-style quantize_static (python/ptqkit/ort.py) maps its parameters onto this one.
//
// The options a calibration cache records (calibration::QuantizeSettings) are None unless
// given: with `cache`, the recorded value is taken for those not given, as `ptq quantize
// --cache` takes it for flags not given.
#include <optional>
#include <set>

#include "bindings.h"
#include "ptq/planner.h"
#include "run_date.h"

namespace ptq::python {

namespace {

// The recorded options; None (nullopt) when not given.
struct Recorded {
  std::optional<std::string> target;
  std::optional<std::string> activation_type;
  std::optional<std::vector<std::string>> exclude;
  std::optional<std::vector<std::string>> exclude_op_types;
  std::optional<std::vector<std::string>> nodes_to_quantize;
  std::optional<std::vector<std::string>> op_types_to_quantize;
  std::optional<bool> per_channel;
  std::optional<bool> weights_float;
  std::optional<int64_t> min_conv_channels;
  std::optional<bool> quantize_matrix_vector;
  std::optional<bool> fold_batchnorm;
  std::optional<bool> bias_correction;
};

struct QuantizeArgs {
  std::string model;
  std::string out;
  py::object data;
  std::string cache;
  py::object method;
  double percentile = 99.99;
  Recorded recorded;
  std::string ort_ep;
  std::optional<double> smoothquant;
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

// The flags of the recorded options given (calibration::adopt_settings), named by their cache
// keys.
std::set<std::string> given_flags(const Recorded& r) {
  const std::pair<bool, std::string_view> keys[] = {
      {r.target.has_value(), "target"},
      {r.activation_type.has_value(), "activation_type"},
      {r.exclude.has_value(), "exclude"},
      {r.exclude_op_types.has_value(), "exclude_op_types"},
      {r.nodes_to_quantize.has_value(), "nodes_to_quantize"},
      {r.op_types_to_quantize.has_value(), "op_types_to_quantize"},
      {r.per_channel.has_value(), "per_tensor_weights"},
      {r.weights_float.has_value(), "weights_float"},
      {r.min_conv_channels.has_value(), "min_conv_channels"},
      {r.quantize_matrix_vector.has_value(), "quantize_matrix_vector"},
      {r.fold_batchnorm.has_value(), "fold_batchnorm"},
      {r.bias_correction.has_value(), "bias_correction"},
  };
  std::set<std::string> given;
  for (const auto& [is_given, key] : keys) {
    if (is_given) given.insert(calibration::recorded_option_flag(key));
  }
  return given;
}

// The given activation type, else the fastest for the target (and ort_ep), as `ptq quantize`
// picks it.
planner::ActivationType activation_type(const QuantizeArgs& a, planner::Target target) {
  const planner::OrtProvider ep = value_or_throw(planner::parse_ort_provider(a.ort_ep));
  if (a.recorded.activation_type) {
    return value_or_throw(planner::parse_activation_type(*a.recorded.activation_type));
  }
  return planner::fastest_activation_type(target, ep).type;
}

// Each recorded option as given, else its default (a cache may replace the latter).
calibration::QuantizeSettings settings(const QuantizeArgs& a) {
  const Recorded& r = a.recorded;
  calibration::QuantizeSettings s;
  planner::PlanOptions& p = s.plan;
  p.target = value_or_throw(planner::parse_target(r.target.value_or("tensorrt")));
  p.activation_type = activation_type(a, p.target);
  p.exclude_nodes = r.exclude.value_or(p.exclude_nodes);
  p.exclude_op_types = r.exclude_op_types.value_or(p.exclude_op_types);
  p.quantize_nodes = r.nodes_to_quantize.value_or(p.quantize_nodes);
  p.quantize_op_types = r.op_types_to_quantize.value_or(p.quantize_op_types);
  p.per_tensor_weights = !r.per_channel.value_or(true);
  p.weights_float = r.weights_float.value_or(false);
  p.min_conv_channels = r.min_conv_channels.value_or(p.min_conv_channels);
  p.quantize_matrix_vector = r.quantize_matrix_vector.value_or(false);
  p.fold_batchnorm = r.fold_batchnorm.value_or(true);
  p.ptqkit_version = std::string(calibration::ptqkit_version());
  p.shapes_remedy =
      "give data of full batches, a JSON cache that records input shapes, or "
      "input_shapes={NAME: shape}";
  throw_if_error(p.validate());
  s.bias_correction = r.bias_correction.value_or(false);
  return s;
}

calibration::QuantizeRequest request(const QuantizeArgs& a) {
  calibration::QuantizeRequest r{.model = a.model, .out = a.out};
  r.external_data = a.external_data;
  r.requantize = a.requantize;
  r.cache = a.cache;
  r.force = a.force;
  r.given = given_flags(a.recorded);
  r.settings = settings(a);
  r.smoothquant = a.smoothquant;
  r.calibration.method = method_config(a.method, a.percentile);
  r.calibration.date = value_or_throw(apps::run_date());
  r.calibration.threads = runtime::thread_count(a.threads);
  r.calibration.backend = a.backend;
  r.threads = runtime::thread_count(a.threads);
  r.data_label = "the data";
  r.input_shapes = a.input_shapes;
  r.input_shapes_label = "input_shapes";
  if (!a.cache_out.empty()) r.cache_out = a.cache_out;
  return r;
}

// The flow's data (drained from Python before it starts), one calibration worker, the
// progress line with Ctrl-C, and warnings as UserWarnings. The flow runs without the GIL;
// warn() takes it.
class Module : public calibration::QuantizeFrontEnd {
 public:
  Module(const PythonData* data, const QuantizeArgs& a) : data_(data), a_(a) {}

  Expected<data::Dataset> open_data(const ir::Graph& graph) override {
    return open_dataset(*data_, graph);
  }
  Expected<std::vector<runtime::Executor*>> calibration_workers(const ir::Model& model) override {
    PTQ_ASSIGN_OR_RETURN(engine_, open_engine(model, a_.backend, a_.threads));
    return std::vector<runtime::Executor*>{engine_.executor.get()};
  }
  calibration::ProgressFn start_pass(std::string_view stage, int64_t samples) override {
    const bool calibration = stage == "calibration";
    progress_.emplace(calibration ? "quantize" : std::string(stage), samples, a_.quiet,
                      calibration ? "calibration pass" : "pass");
    return progress_->calibration_fn();
  }
  void end_pass() override { progress_.reset(); }
  Status warn(const std::string& message) override {
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) == 0) return Status::ok();
    return runtime_error("{}", message);  // a filter made it an error, kept set for Python
  }

 private:
  const PythonData* data_;
  const QuantizeArgs& a_;
  Engine engine_;
  std::optional<Progress> progress_;
};

py::dict summary(const calibration::QuantizeOutcome& q) {
  const planner::QuantizeResult& r = q.result;
  const bool uint8 = q.settings.plan.activation_type == planner::ActivationType::kUInt8;
  py::dict d;
  d["method"] = q.method;
  d["target"] = std::string(planner::target_name(q.settings.plan.target));
  d["activation_type"] = uint8 ? "uint8" : "int8";
  d["quantize_nodes"] = r.quantize_nodes;
  d["dequantize_nodes"] = r.dequantize_nodes;
  d["folded_batchnorms"] = r.folded_batchnorms;
  d["corrected_biases"] = r.corrected_biases;
  d["smoothed_activations"] = q.smoothquant ? q.smoothquant->factors.size() : 0;
  d["quantized_nodes"] = r.quantized_nodes;
  d["float_tensors"] = r.float_tensors;
  return d;
}

py::dict quantize(const QuantizeArgs& a) {
  if (a.data.is_none() == a.cache.empty()) {
    throw_if_error(
        usage_error("give either data (calibrate now) or cache (reuse a calibration cache)"));
  }
  const calibration::QuantizeRequest r = request(a);
  std::unique_ptr<PythonData> data;
  if (!a.data.is_none()) {
    data = python_data(a.data, a.batch, 16);
    data->spec.samples = a.samples;
  }
  Module front_end(data.get(), a);
  Expected<calibration::QuantizeOutcome> outcome = calibration::QuantizeOutcome{};
  {
    py::gil_scoped_release release;
    outcome = calibration::quantize_model(r, front_end);
  }
  return summary(value_or_throw(std::move(outcome)));
}

template <typename T>
using Opt = std::optional<T>;
using Names = std::vector<std::string>;

}  // namespace

void register_quantize(py::module_& m) {
  m.def(
      "quantize",
      [](const std::string& model, const std::string& out, const py::object& data,
         const std::string& cache, const py::object& method, double percentile,
         const Opt<std::string>& target, const Opt<std::string>& activation_type,
         const std::string& ort_ep, const Opt<bool>& per_channel, const Opt<Names>& exclude,
         const Opt<Names>& exclude_op_types, const Opt<Names>& nodes_to_quantize,
         const Opt<Names>& op_types_to_quantize, const Opt<bool>& weights_float,
         const Opt<int64_t>& min_conv_channels, const Opt<bool>& quantize_matrix_vector,
         const Opt<bool>& fold_batchnorm, const Opt<bool>& bias_correction,
         const Opt<double>& smoothquant, const std::string& backend, int threads, int64_t batch,
         int64_t samples, const std::string& cache_out, bool requantize, bool force,
         bool external_data, bool quiet, const onnx::InputShapes& input_shapes) {
        QuantizeArgs a;
        a.model = model;
        a.out = out;
        a.data = data;
        a.cache = cache;
        a.method = method;
        a.percentile = percentile;
        a.recorded = {target,
                      activation_type,
                      exclude,
                      exclude_op_types,
                      nodes_to_quantize,
                      op_types_to_quantize,
                      per_channel,
                      weights_float,
                      min_conv_channels,
                      quantize_matrix_vector,
                      fold_batchnorm,
                      bias_correction};
        a.ort_ep = ort_ep;
        a.smoothquant = smoothquant;
        a.backend = backend;
        a.threads = threads;
        a.batch = batch;
        a.samples = samples;
        a.cache_out = cache_out;
        a.requantize = requantize;
        a.force = force;
        a.external_data = external_data;
        a.quiet = quiet;
        a.input_shapes = input_shapes;
        return quantize(a);
      },
      py::arg("model"), py::arg("out"), py::arg("data") = py::none(), py::arg("cache") = "",
      py::arg("method") = py::none(), py::arg("percentile") = 99.99, py::arg("target") = py::none(),
      py::arg("activation_type") = py::none(), py::arg("ort_ep") = "cpu",
      py::arg("per_channel") = py::none(), py::arg("exclude") = py::none(),
      py::arg("exclude_op_types") = py::none(), py::arg("nodes_to_quantize") = py::none(),
      py::arg("op_types_to_quantize") = py::none(), py::arg("weights_float") = py::none(),
      py::arg("min_conv_channels") = py::none(), py::arg("quantize_matrix_vector") = py::none(),
      py::arg("fold_batchnorm") = py::none(), py::arg("bias_correction") = py::none(),
      py::arg("smoothquant") = py::none(), py::arg("backend") = "cpu", py::arg("threads") = 0,
      py::arg("batch") = 0, py::arg("samples") = 0, py::arg("cache_out") = "",
      py::arg("requantize") = false, py::arg("force") = false, py::arg("external_data") = false,
      py::arg("quiet") = false, py::arg("input_shapes") = onnx::InputShapes{},
      "`ptq quantize` as a function: calibrates on `data` (or reuses `cache`, a file of any "
      "format), writes the Q/DQ model to `out`, and returns a summary dict. smoothquant=ALPHA "
      "smooths the float model first (--smoothquant); bias_correction=True corrects the "
      "quantized Conv/Gemm biases (--bias-correction). The options a cache records are None "
      "unless given; with `cache` the recorded ones are taken for those.");
}

}  // namespace ptq::python
