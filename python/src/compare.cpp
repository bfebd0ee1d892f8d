// ptqkit.compare: `ptq compare` as a function. Both models run batch by batch on the same data
// and metrics::OutputComparison keeps only running sums; the result is the dict `ptq compare
// --json` prints (infinite SQNR as float('inf')).
#include "bindings.h"
#include "ptq/metrics.h"
#include "ptq/onnx.h"

namespace ptq::python {

namespace {

py::dict result_dict(const metrics::OutputComparison& c) {
  py::list outputs;
  for (size_t i = 0; i < c.outputs().size(); ++i) {
    const metrics::Agreement& m = c.outputs()[i];
    py::dict o;
    o["name"] = c.names()[i];
    o["cosine"] = m.cosine();
    o["sqnr_db"] = m.sqnr_db();
    o["max_abs_diff"] = m.max_abs_diff();
    o["rel_l2"] = m.rel_l2();
    outputs.append(o);
  }
  py::dict d;
  d["samples"] = c.samples();
  d["outputs"] = outputs;
  const bool top1 = c.classifier() && c.samples() > 0;
  d["top1_agreement"] = top1 ? py::object(py::float_(static_cast<double>(c.top1_same()) /
                                                     static_cast<double>(c.samples())))
                             : py::object(py::none());
  return d;
}

py::dict compare(const std::string& path_a, const std::string& path_b, const py::object& data,
                 const std::string& backend, int threads, int64_t batch, int64_t samples,
                 bool quiet) {
  const ir::Model a = value_or_throw(onnx::load_model(path_a));
  const ir::Model b = value_or_throw(onnx::load_model(path_b));
  metrics::OutputComparison comparison =
      value_or_throw(metrics::OutputComparison::create(a.graph, b.graph, path_a, path_b));
  std::unique_ptr<PythonData> d = python_data(data, batch, 16);
  d->spec.samples = samples;
  d->spec.finite_only = true;
  // One dataset per model: each binds the data to its own graph's inputs and dtypes.
  const data::Dataset da = open_bound(*d, a.graph);
  const data::Dataset db = open_bound(*d, b.graph);
  if (da.num_batches() != db.num_batches() || da.batch_size() != db.batch_size()) {
    throw_if_error(invalid_input("{} and {} take different batch sizes ({} vs {}); give batch",
                                 path_a, path_b, da.batch_size(), db.batch_size()));
  }
  Engine ea = make_engine(a, backend, threads);
  Engine eb = make_engine(b, backend, threads);
  Progress progress("compare", da.size(), quiet);
  for (int64_t i = 0; i < da.num_batches(); ++i) {
    Status s;
    {
      py::gil_scoped_release release;
      s = [&]() -> Status {
        PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_a, da.batch(i));
        PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_a, ea.executor->run(in_a));
        PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_b, db.batch(i));
        PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_b, eb.executor->run(in_b));
        return comparison.add(out_a, out_b);
      }();
    }
    throw_if_error(s);
    throw_if_error(progress.update(comparison.samples()));
  }
  progress.finish();
  return result_dict(comparison);
}

}  // namespace

void register_compare(py::module_& m) {
  m.def("compare", &compare, py::arg("model_a"), py::arg("model_b"), py::arg("data"),
        py::arg("backend") = "cpu", py::arg("threads") = 0, py::arg("batch") = 0,
        py::arg("samples") = 0, py::arg("quiet") = false,
        "How closely model_b's outputs follow model_a's (the reference) on `data`: per output "
        "cosine, SQNR (dB), max abs diff and relative L2; top-1 agreement for classifiers.");
}

}  // namespace ptq::python
