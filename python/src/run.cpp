// ptqkit.Session and ptqkit.run: a model run on numpy arrays, as ONNX Runtime's session runs
// it (inputs fed exactly as given, no batching). C-contiguous inputs are borrowed, not copied,
// and each output array takes over the tensor the executor returned.
#include "bindings.h"
#include "ptq/onnx.h"

namespace ptq::python {

namespace {

class Session {
 public:
  Session(const std::string& path, const std::string& backend, int threads)
      : model_(std::make_unique<ir::Model>(value_or_throw(onnx::load_model(path)))),
        engine_(make_engine(*model_, backend, threads)) {}

  std::vector<std::string> input_names() const {
    std::vector<std::string> names;
    for (const ir::ValueInfo* v : model_->graph.real_inputs()) names.push_back(v->name);
    return names;
  }
  std::vector<std::string> output_names() const {
    std::vector<std::string> names;
    for (const ir::ValueInfo& v : model_->graph.outputs) names.push_back(v.name);
    return names;
  }

  py::dict run(const py::object& inputs) {
    std::vector<py::object> keep;  // C-contiguous copies of inputs that were not
    runtime::NamedTensors feed;
    for (auto& [name, array] : named_arrays(inputs)) {
      keep.emplace_back();
      feed.emplace_back(name, borrow_array(array, keep.back()));
    }
    Expected<runtime::NamedTensors> out = runtime::NamedTensors{};
    {
      py::gil_scoped_release release;
      out = engine_.executor->run(feed);
    }
    runtime::NamedTensors outputs = value_or_throw(std::move(out));
    py::dict result;
    for (auto& [name, tensor] : outputs) result[py::str(name)] = to_array(std::move(tensor));
    return result;
  }

 private:
  // {name: array}, or one array for a single-input model.
  std::vector<std::pair<std::string, py::array>> named_arrays(const py::object& inputs) const {
    std::vector<std::pair<std::string, py::array>> named;
    if (py::isinstance<py::dict>(inputs)) {
      for (const auto& [k, v] : inputs.cast<py::dict>()) {
        named.emplace_back(py::str(k).cast<std::string>(),
                           py::module_::import("numpy").attr("asarray")(v));
      }
      return named;
    }
    const std::vector<std::string> names = input_names();
    if (names.size() != 1) {
      throw_if_error(usage_error("the model has {} inputs ({}): give a dict of arrays",
                                 names.size(), fmt::join(names, ", ")));
    }
    named.emplace_back(names[0], py::module_::import("numpy").attr("asarray")(inputs));
    return named;
  }

  std::unique_ptr<ir::Model> model_;  // the executor borrows it: its address must not change
  Engine engine_;
};

}  // namespace

void register_run(py::module_& m) {
  py::class_<Session>(m, "Session", "A model loaded once and run on numpy arrays.")
      .def(py::init<const std::string&, const std::string&, int>(), py::arg("model"),
           py::arg("backend") = "cpu", py::arg("threads") = 0)
      .def("run", &Session::run, py::arg("inputs"),
           "Runs the model on {name: array} (or one array) and returns {output name: array}.")
      .def_property_readonly("input_names", &Session::input_names)
      .def_property_readonly("output_names", &Session::output_names);
  m.def(
      "run",
      [](const std::string& model, const py::object& inputs, const std::string& backend,
         int threads) { return Session(model, backend, threads).run(inputs); },
      py::arg("model"), py::arg("inputs"), py::arg("backend") = "cpu", py::arg("threads") = 0,
      "Loads `model`, runs it once on {name: array} (or one array), returns {name: array}.");
}

}  // namespace ptq::python
