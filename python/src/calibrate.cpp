// ptqkit.calibrate: `ptq calibrate` as a function. The data may be a CalibrationDataReader, a
// dict of arrays or a path; the table comes back as a CalibrationCache (and is written when
// `out` is given). The GIL is released while the library runs; Ctrl-C stops it between batches
// and nothing is written.
#include "bindings.h"
#include "ptq/onnx.h"
#include "run_date.h"

namespace ptq::python {

namespace {

Cache calibrate(const std::string& model_path, const py::object& data, const py::object& method,
                double percentile, const std::string& backend, int threads, int64_t batch,
                int64_t samples, bool all_tensors, bool ignore_nonfinite, const std::string& out,
                bool quiet) {
  calibration::CalibrationOptions options;
  options.method = method_config(method, percentile);
  options.date = value_or_throw(apps::run_date());
  options.all_tensors = all_tensors;
  options.ignore_nonfinite = ignore_nonfinite;
  options.threads = runtime::thread_count(threads);
  options.backend = backend;
  const ir::Model model = value_or_throw(onnx::load_model(model_path));
  std::unique_ptr<PythonData> d = python_data(data, batch, 16);
  d->spec.samples = samples;
  const data::Dataset dataset = open_bound(*d, model.graph);
  Engine engine = make_engine(model, backend, threads);
  Progress progress("calibrate", dataset.size(), quiet);
  options.progress = progress.calibration_fn();
  Expected<calib::CalibrationTable> table = calib::CalibrationTable{};
  {
    py::gil_scoped_release release;
    table = calibration::calibrate(model, *engine.executor, dataset, options);
  }
  progress.finish();
  Cache cache{value_or_throw(std::move(table))};
  if (!out.empty()) throw_if_error(calib::write_cache(cache.table, out));
  return cache;
}

}  // namespace

void register_calibrate(py::module_& m) {
  m.def("calibrate", &calibrate, py::arg("model"), py::arg("data"), py::arg("method") = py::none(),
        py::arg("percentile") = 99.99, py::arg("backend") = "cpu", py::arg("threads") = 0,
        py::arg("batch") = 0, py::arg("samples") = 0, py::arg("all_tensors") = false,
        py::arg("ignore_nonfinite") = false, py::arg("out") = "", py::arg("quiet") = false,
        "Measures the activation ranges of `model` on `data` (a CalibrationDataReader, "
        "{input: array} with samples on axis 0, one array, or a path as `ptq --data` takes) and "
        "returns the CalibrationCache; with `out`, also writes it as ptqkit JSON.");
}

}  // namespace ptq::python
