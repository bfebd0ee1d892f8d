// ptqkit.compare: `ptq compare` as a function, through compare::compare. The result is the
// object `ptq compare --json` prints (compare::result_json, docs/COMPARE.md) as a dict, its
// metrics as Python floats (an infinite SQNR as float('inf')).
#include "ptq/compare.h"

#include "bindings.h"
#include "ptq/onnx.h"

namespace ptq::python {

namespace {

// The metrics result_json writes as strings where JSON has no number ("inf", "nan").
constexpr const char* kMetrics[] = {"cosine", "sqnr_db",      "max_abs_diff",
                                    "rel_l2", "reference_db", "drop_db"};

// `ptq compare --json`'s object with its metric strings made floats, in every nested dict.
void metrics_as_floats(const py::dict& d) {
  for (const char* key : kMetrics) {
    if (d.contains(key) && py::isinstance<py::str>(d[key])) d[key] = py::float_(d[key]);
  }
  for (const char* list : {"outputs", "tensors"}) {
    if (!d.contains(list)) continue;
    for (const py::handle item : d[list].cast<py::list>()) metrics_as_floats(item.cast<py::dict>());
  }
}

py::dict result_dict(const compare::Result& r) {
  py::dict d = py::module_::import("json").attr("loads")(compare::result_json(r));
  metrics_as_floats(d);
  return d;
}

py::dict compare_models(const std::string& path_a, const std::string& path_b,
                        const py::object& data, const std::string& backend, int threads,
                        int64_t batch, int64_t samples, bool per_tensor, double jump_db,
                        bool quiet) {
  if (per_tensor && backend != "cpu") {
    throw_if_error(usage_error("per_tensor reads every tensor on the host: use backend='cpu'"));
  }
  const ir::Model a = value_or_throw(onnx::load_model(path_a));
  const ir::Model b = value_or_throw(onnx::load_model(path_b));
  throw_if_error(compare::check_same_inputs(a, path_a, b, path_b));
  std::unique_ptr<PythonData> d = python_data(data, batch, 16);
  d->spec.samples = samples;
  d->spec.finite_only = true;
  // One dataset per model: each binds the data to its own graph's inputs and dtypes.
  data::Dataset da = open_bound(*d, a.graph);
  data::Dataset db = open_bound(*d, b.graph);
  Engine ea = make_engine(a, backend, threads);
  Engine eb = make_engine(b, backend, threads);
  Progress progress("compare", da.size(), quiet);
  compare::Options options;
  options.per_tensor = per_tensor;
  options.jump_db = jump_db;
  Status stopped;  // Ctrl-C, seen between batches, raised once the comparison returns
  options.progress = [&](int64_t done) {
    if (stopped.is_ok()) stopped = progress.update(done);
  };
  Expected<compare::Result> result = compare::Result{};
  {
    py::gil_scoped_release release;
    result =
        compare::compare({a, *ea.executor, da, path_a}, {b, *eb.executor, db, path_b}, options);
  }
  progress.finish();
  throw_if_error(stopped);
  return result_dict(value_or_throw(std::move(result)));
}

}  // namespace

void register_compare(py::module_& m) {
  m.def("compare", &compare_models, py::arg("model_a"), py::arg("model_b"), py::arg("data"),
        py::arg("backend") = "cpu", py::arg("threads") = 0, py::arg("batch") = 0,
        py::arg("samples") = 0, py::arg("per_tensor") = false, py::arg("jump_db") = 10.0,
        py::arg("quiet") = false,
        "How closely model_b's outputs follow model_a's (the reference) on `data`: per output "
        "cosine, SQNR (dB), max abs diff and relative L2; top-1 agreement for classifiers; with "
        "per_tensor=True the same for every tensor both compute, in graph order, jumps marked "
        "(`ptq compare --per-tensor`).");
}

}  // namespace ptq::python
